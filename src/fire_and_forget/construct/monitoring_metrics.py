"""The CloudWatch metrics of the pattern, named once, so the alarms and the dashboard read the same series."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_events as events
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn

STATES_NAMESPACE = "AWS/States"
PIPES_NAMESPACE = "AWS/EventBridge/Pipes"
EVENTS_NAMESPACE = "AWS/Events"

# The documented Step Functions metric is ExecutionThrottled (singular); CDK's canned metricThrottled() helper
# emits ExecutionsThrottled, which Step Functions never publishes, so every metric here is named explicitly.
EXECUTION_METRICS = ("ExecutionsStarted", "ExecutionsSucceeded", "ExecutionsFailed", "ExecutionsTimedOut",
                     "ExecutionsAborted", "ExecutionThrottled")



@dataclass(frozen=True)
class WorkflowMetrics:
    """The counts a workflow's handlers publish with Powertools (EMF), for the dashboard and the error alarms.

    `expected_errors` names, per task (state name), the metrics its handler counts right before it raises an error
    the workflow Catches by name on purpose: Lambda counts those in Errors like any crash, so the unexpected-error
    alarm subtracts them. A task missing from the map expects none.
    """

    namespace: str
    service: str
    outcomes: tuple[str, ...] = ()  # what success looks like, per step
    rejections: tuple[str, ...] = ()  # business errors and duplicates, absorbed by design
    compensations: tuple[str, ...] = ()  # undo steps that ran (a workflow that compensates)
    manual_repair: str | None = None  # the count of compensations that failed for good
    expected_errors: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def metric(self, name: str, period: Duration) -> cw.Metric:
        """One of the counts (namespace and `service` dimension as Powertools publishes them), summed per period."""
        return cw.Metric(namespace=self.namespace, metric_name=name, dimensions_map={"service": self.service},
                         statistic=cw.Stats.SUM, period=period, label=name)

if TYPE_CHECKING:
    from fire_and_forget.construct.completion_webhook import CompletionWebhook
    from fire_and_forget.construct.healing import Healing
    from fire_and_forget.construct.tickets import OpsCenterTickets


@dataclass(frozen=True)
class MonitoredResources:
    """Everything the monitoring reads metrics from; the stack passes what its constructs expose."""

    state_machine: sfn.IStateMachine
    source_queue: sqs.IQueue
    source_dlq: sqs.IQueue
    failure_dlq: sqs.IQueue
    failure_events_queue: sqs.IQueue
    rule_target_dlq: sqs.IQueue
    pipe_name: str
    rule: events.IRule
    functions: Mapping[str, lambda_.IFunction]  # the workflow's task functions, by the state that invokes them
    metrics: WorkflowMetrics
    title: str  # the workflow's name in alarm descriptions and widget titles (Workflow.title)
    # Exists only when an e-mail or webhook subscription does: alerts SNS could not deliver.
    undelivered_alerts: sqs.IQueue | None = None
    # The Reconciler and the Redriver with their DLQs (fire_and_forget/construct/healing.py).
    healing: Healing | None = None
    # The caller's completion webhook, when configured (fire_and_forget/construct/completion_webhook.py).
    completion_webhook: CompletionWebhook | None = None
    # The OpsCenter tickets, when configured (fire_and_forget/construct/tickets.py).
    tickets: OpsCenterTickets | None = None

    def queues(self) -> dict[str, sqs.IQueue]:
        """Every queue by the name the runbook uses for it."""
        queues = {
            "SourceQueue": self.source_queue,
            "SourceDlq": self.source_dlq,
            "FailureDlq": self.failure_dlq,
            "FailureEventsQueue": self.failure_events_queue,
            "RuleTargetDlq": self.rule_target_dlq,
        }
        if self.undelivered_alerts is not None:
            queues["UndeliveredAlertsDlq"] = self.undelivered_alerts
        if self.healing is not None:
            queues["ReconcilerDlq"] = self.healing.reconciler_dlq
            queues["ScheduleDlq"] = self.healing.schedule_dlq
        if self.completion_webhook is not None:
            queues["CompletionWebhookDlq"] = self.completion_webhook.dlq
        if self.tickets is not None:
            queues["TicketsDlq"] = self.tickets.dlq
        return queues

    def healing_metric(self, name: str, period: Duration, statistic: str = cw.Stats.SUM) -> cw.Metric:
        """A metric the Reconciler or the Redriver publishes (fire_and_forget/healing/telemetry.py)."""
        assert self.healing is not None
        return cw.Metric(namespace=self.metrics.namespace, metric_name=name,
                         dimensions_map={"service": self.healing.service}, statistic=statistic, period=period,
                         label=name)


def execution_metric(resources: MonitoredResources, name: str, period: Duration) -> cw.Metric:
    """A Step Functions execution count of the workflow (dimension StateMachineArn), summed per period."""
    return resources.state_machine.metric(name, statistic=cw.Stats.SUM, period=period, label=name)


def queue_depth(queue: sqs.IQueue, period: Duration, label: str) -> cw.Metric:
    """Messages waiting: the maximum over the period, so a message that came and went is still seen."""
    return queue.metric_approximate_number_of_messages_visible(statistic=cw.Stats.MAXIMUM, period=period,
                                                               label=label)


def oldest_message_age(queue: sqs.IQueue, period: Duration) -> cw.Metric:
    return queue.metric_approximate_age_of_oldest_message(statistic=cw.Stats.MAXIMUM, period=period,
                                                          label="Oldest message age (s)")


def pipe_metric(pipe_name: str, name: str, period: Duration, statistic: str = cw.Stats.SUM,
                label: str = "Pipe") -> cw.Metric:
    """A metric of a pipe (namespace AWS/EventBridge/Pipes, dimension PipeName): the source queue's, or the
    completion webhook's."""
    return cw.Metric(namespace=PIPES_NAMESPACE, metric_name=name, dimensions_map={"PipeName": pipe_name},
                     statistic=statistic, period=period, label=f"{label} {name}")


def rule_metric(resources: MonitoredResources, name: str, period: Duration) -> cw.Metric:
    """A metric of the failure rule on the default bus (dimension RuleName only)."""
    return cw.Metric(namespace=EVENTS_NAMESPACE, metric_name=name,
                     dimensions_map={"RuleName": resources.rule.rule_name}, statistic=cw.Stats.SUM, period=period,
                     label=f"Rule {name}")


def unexpected_errors(resources: MonitoredResources, task: str, function: lambda_.IFunction,
                      period: Duration) -> cw.MathExpression:
    """Errors of one function minus the business errors it raises on purpose: what nobody designed for."""
    using: dict[str, cw.IMetric] = {"errors": function.metric_errors(statistic=cw.Stats.SUM, period=period)}
    expression = "FILL(errors, 0)"
    for index, name in enumerate(resources.metrics.expected_errors.get(task, ())):
        using[f"expected{index}"] = resources.metrics.metric(name, period)
        expression += f" - FILL(expected{index}, 0)"
    return cw.MathExpression(expression=expression, using_metrics=using, period=period,
                             label=f"{task} unexpected errors")


def failure_rate(resources: MonitoredResources, window: Duration, min_started: int) -> cw.MathExpression:
    """Percent of started executions that failed, timed out or were aborted; 0 below `min_started` executions,
    where a single failure would swing the percentage."""
    return cw.MathExpression(
        expression=(f"IF(FILL(started, 0) >= {min_started}, "
                    "100 * (FILL(failed, 0) + FILL(timedOut, 0) + FILL(aborted, 0)) / started, 0)"),
        using_metrics={
            "started": execution_metric(resources, "ExecutionsStarted", window),
            "failed": execution_metric(resources, "ExecutionsFailed", window),
            "timedOut": execution_metric(resources, "ExecutionsTimedOut", window),
            "aborted": execution_metric(resources, "ExecutionsAborted", window),
        },
        period=window,
        label="Failure rate (%)",
    )
