"""Detection in REQUEST_RESPONSE mode: no status-change events exist for Express workflows, so alarms on the Express
workflow's own metrics and on the source DLQ are the channels (docs/design.md, "The pipe in REQUEST_RESPONSE mode")."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from fire_and_forget.construct.monitoring_metrics import queue_depth
from fire_and_forget.construct.settings import AlarmConfig

AT_LEAST = cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD


class RequestResponseAlarms(Construct):
    """`.alarms` by construct id, each to the alerts topic: the Express workflow's failed, timed-out and throttled
    executions, and a message in the source DLQ (the mode's failure record)."""

    def __init__(self, scope: Construct, construct_id: str, *, settings: AlarmConfig, state_machine: sfn.IStateMachine,
                 source_dlq: sqs.IQueue, alerts_topic: sns.ITopic, title: str, max_receive_count: int,
                 runbook_url: str) -> None:
        super().__init__(scope, construct_id)
        self.alarms: dict[str, cw.Alarm] = {}
        period = Duration.minutes(settings.period_minutes)
        action = cw_actions.SnsAction(alerts_topic)
        each = (
            ("ExecutionsFailed", state_machine.metric("ExecutionsFailed", statistic=cw.Stats.SUM, period=period),
             settings.executions_failed_threshold,
             f"{title} Express executions failed: each failed receive returns its message to the source queue, and the "
             "execution's log says why."),
            ("ExecutionsTimedOut", state_machine.metric("ExecutionsTimedOut", statistic=cw.Stats.SUM, period=period), 1,
             f"A {title} Express execution timed out: Catch cannot see it and no compensation ran. The construct "
             "refuses a workflow whose longest run can outlast its timeout, so something ran past the bounds its "
             "definition sets. Its message comes back after the visibility timeout, and that receive takes the claim "
             "over (older than any execution can run) and runs it again; what the timed-out steps did must be safe "
             "to repeat."),
            ("ExecutionThrottled", state_machine.metric("ExecutionThrottled", statistic=cw.Stats.SUM, period=period), 1,
             f"Step Functions throttled {title} (StartSyncExecution): the pipe retries; the message waits in the "
             "queue."),
            ("SourceDlqNotEmpty", queue_depth(source_dlq, period, "SourceDlq"), 1,
             f"A {title} message failed {max_receive_count} receives and waits in the source DLQ: the reason is in the "
             "workflow's log for its messageId. Redrive it with ff-ops source-dlq redrive once fixed."),
        )
        for construct_id_, metric, threshold, what in each:
            alarm = metric.create_alarm(
                self, construct_id_,
                alarm_description=f"{what} Runbook: {runbook_url}#{construct_id_.lower()}",
                threshold=threshold, comparison_operator=AT_LEAST, evaluation_periods=1, datapoints_to_alarm=1,
                # No data means nothing happened: no executions, an empty DLQ.
                treat_missing_data=cw.TreatMissingData.NOT_BREACHING,
            )
            alarm.add_alarm_action(action)
            self.alarms[construct_id_] = alarm
