"""The CloudWatch dashboard: alarm status, execution trends per hour, day and week, the workflow's outcomes, and
the plumbing."""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cw
from constructs import Construct

from fire_and_forget.construct.monitoring_metrics import (
    MonitoredResources,
    execution_metric,
    oldest_message_age,
    pipe_metric,
    queue_depth,
    rule_metric,
)

FULL, HALF, THIRD = 24, 12, 8
# (title, bucket, time range): the article asks for daily and weekly failure trends; hourly shows today.
TRENDS = (
    ("per hour, last 2 days", Duration.hours(1), "-P2D"),
    ("per day, last 30 days", Duration.days(1), "-P30D"),
    ("per week, last 12 weeks", Duration.days(7), "-P12W"),
)
TREND_METRICS = ("ExecutionsStarted", "ExecutionsSucceeded", "ExecutionsFailed", "ExecutionsTimedOut",
                 "ExecutionsAborted")
PIPE_COUNTS = ("Invocations", "ExecutionFailed", "ExecutionThrottled", "ExecutionTimeout", "TargetStageFailed")
RULE_COUNTS = ("Invocations", "FailedInvocations", "InvocationsSentToDlq")


def build_dashboard(scope: Construct, construct_id: str, *, resources: MonitoredResources,
                    alarms: Sequence[cw.IAlarm]) -> cw.Dashboard:
    """One dashboard for the whole pattern, top to bottom in the order an operator asks the questions."""
    dashboard = cw.Dashboard(scope, construct_id, default_interval=Duration.days(1))
    dashboard.add_widgets(cw.AlarmStatusWidget(title="Alarms", alarms=list(alarms), width=FULL, height=4,
                                               sort_by=cw.AlarmStatusWidgetSortBy.STATE_UPDATED_TIMESTAMP))
    dashboard.add_widgets(*_execution_trends(resources))
    dashboard.add_widgets(*_workflow_outcomes(resources))
    if resources.healing is not None:
        dashboard.add_widgets(*_healing(resources))
    dashboard.add_widgets(*_queues(resources))
    dashboard.add_widgets(*_delivery(resources))
    dashboard.add_widgets(*_functions(resources))
    return dashboard


def _execution_trends(r: MonitoredResources) -> list[cw.IWidget]:
    return [
        cw.GraphWidget(
            title=f"{r.title} executions {title}",
            left=[execution_metric(r, name, bucket) for name in TREND_METRICS],
            period=bucket,
            start=start,
            statistic=cw.Stats.SUM,
            view=cw.GraphWidgetView.BAR if bucket.to_hours() >= 24 else cw.GraphWidgetView.TIME_SERIES,
            width=THIRD,
        )
        for title, bucket, start in TRENDS
    ]


def _workflow_outcomes(r: MonitoredResources) -> list[cw.IWidget]:
    """What the handlers counted: completed steps, absorbed rejections, and the compensations that ran."""
    hour, day = Duration.hours(1), Duration.days(1)
    m = r.metrics
    widgets: list[cw.IWidget] = [
        cw.GraphWidget(title="Steps completed per hour", width=THIRD, period=hour,
                       left=[m.metric(name, hour) for name in m.outcomes]),
        cw.GraphWidget(title="Messages rejected per hour (business errors, duplicates)", width=THIRD, period=hour,
                       left=[m.metric(name, hour) for name in m.rejections]),
    ]
    if m.compensations or m.manual_repair:
        widgets.append(cw.GraphWidget(
            title="Compensations and manual repairs per day", width=THIRD, period=day, start="-P30D",
            view=cw.GraphWidgetView.BAR, left=[m.metric(name, day) for name in m.compensations],
            right=[m.metric(m.manual_repair, day)] if m.manual_repair else []))
    return widgets


def _healing(r: MonitoredResources) -> list[cw.IWidget]:
    """What healed by itself, what waits for an automatic retry, and what needs a person."""
    hour, five = Duration.hours(1), Duration.minutes(5)
    return [
        cw.GraphWidget(title="Healed automatically per hour (reconciled, redriven, back from the source DLQ)",
                       width=THIRD, period=hour,
                       left=[r.healing_metric(name, hour)
                             for name in ("ExecutionsReconciled", "FailuresAutoRedriven", "SourceDlqReturned")]),
        cw.GraphWidget(title="Failure DLQ: waiting for a retry / overdue / needing a person", width=THIRD,
                       period=five,
                       left=[r.healing_metric(name, five, cw.Stats.MAXIMUM)
                             for name in ("FailuresWaitingForRetry", "FailuresOverdue", "FailuresNeedingAPerson",
                                          "FailuresRetriesExhausted", "SourceDlqNeedingAPerson")]),
        cw.GraphWidget(title="Reconciled needing manual repair per hour", width=THIRD, period=hour,
                       left=[r.healing_metric("ReconciledNeedingManualRepair", hour)]),
    ]


def _queues(r: MonitoredResources) -> list[cw.IWidget]:
    five = Duration.minutes(5)
    return [
        cw.GraphWidget(title="Queue depths (max messages visible)", width=HALF, period=five,
                       left=[queue_depth(queue, five, name) for name, queue in r.queues().items()]),
        cw.GraphWidget(title="Source queue: age of the oldest message (s)", width=HALF, period=five,
                       left=[oldest_message_age(r.source_queue, five)]),
    ]


def _delivery(r: MonitoredResources) -> list[cw.IWidget]:
    five = Duration.minutes(5)
    return [
        cw.GraphWidget(title="Pipe: invocations and failures", width=THIRD, period=five,
                       left=[pipe_metric(r.pipe_name, name, five) for name in PIPE_COUNTS]),
        cw.GraphWidget(title="Pipe: duration (ms, p99)", width=THIRD, period=five,
                       left=[pipe_metric(r.pipe_name, "Duration", five, statistic=cw.Stats.p(99))]),
        cw.GraphWidget(title="Failure rule: deliveries", width=THIRD, period=five,
                       left=[rule_metric(r, name, five) for name in RULE_COUNTS]),
    ]


def _functions(r: MonitoredResources) -> list[cw.IWidget]:
    five = Duration.minutes(5)
    functions = r.functions.items()
    return [
        cw.GraphWidget(title="Lambda errors (business errors included)", width=THIRD, period=five,
                       left=[f.metric_errors(statistic=cw.Stats.SUM, period=five, label=task)
                             for task, f in functions]),
        cw.GraphWidget(title="Lambda throttles", width=THIRD, period=five,
                       left=[f.metric_throttles(statistic=cw.Stats.SUM, period=five, label=task)
                             for task, f in functions]),
        cw.GraphWidget(title="Lambda duration (ms, p99)", width=THIRD, period=five,
                       left=[f.metric_duration(statistic=cw.Stats.p(99), period=five, label=task)
                             for task, f in functions]),
    ]
