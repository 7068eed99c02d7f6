"""Detection: CloudWatch alarms on every failure channel of the pattern, to the alerts topic, and a dashboard."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_sns as sns
from constructs import Construct

from fire_and_forget.construct.alert_path import ALERT_PATH_ALARMS
from fire_and_forget.construct.monitoring_dashboard import build_dashboard
from fire_and_forget.construct.monitoring_metrics import (
    MonitoredResources,
    execution_metric,
    failure_rate,
    oldest_message_age,
    pipe_metric,
    queue_depth,
    rule_metric,
    unexpected_errors,
)
from fire_and_forget.construct.settings import DEFAULT_RUNBOOK_URL, AlarmConfig

AT_LEAST = cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD
# No data means nothing happened: no executions, no invocations, an inactive queue. EventBridge publishes
# FailedInvocations only when it is not zero, so for every alarm here a missing point is a good point.
QUIET = cw.TreatMissingData.NOT_BREACHING


# Throttling alarms fire on throttling that lasts, not on a burst the source queue absorbs: in each of this many
# consecutive periods (15 minutes at the default 5-minute period).
SUSTAINED_PERIODS = 3

class Monitoring(Construct):
    """Alarms (`.alarms`, by construct id), the composite over the task functions, and the dashboard.

    Every alarm reaches the alerts topic exactly once: directly, or (the per-function alarms) through the
    `TasksUnhealthy` composite alarm. Why: docs/design.md, "Detection and monitoring".
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: AlarmConfig,
        resources: MonitoredResources,
        alerts_topic: sns.ITopic,
        alert_path_topic: sns.ITopic | None = None,
        runbook_url: str = DEFAULT_RUNBOOK_URL,
    ) -> None:
        super().__init__(scope, construct_id)
        self._runbook = runbook_url  # absolute: the description is read in an e-mail or a chat message
        self._action = cw_actions.SnsAction(alerts_topic)
        self.alarms: dict[str, cw.Alarm] = {}
        period = Duration.minutes(settings.period_minutes)
        self._state_machine_alarms(resources, settings, period)
        self._queue_alarms(resources, settings, period)
        self._delivery_alarms(resources, period)
        if alert_path_topic is not None:
            self._alert_path_alarms(alerts_topic, alert_path_topic, period)
        task_alarms = self._function_alarms(resources, period)
        self.composite = cw.CompositeAlarm(
            self,
            "TasksUnhealthy",
            alarm_description=(
                f"One or more {resources.title} task functions fail unexpectedly or are throttled. The child alarm in "
                f"ALARM names the function. Runbook: {runbook_url}#tasksunhealthy"
            ),
            alarm_rule=cw.AlarmRule.any_of(*task_alarms),
        )
        self.composite.add_alarm_action(self._action)
        self.dashboard = build_dashboard(
            self, "Dashboard", resources=resources, alarms=[self.composite, *self.alarms.values()]
        )

    def _alarm(self, construct_id: str, metric: cw.Metric | cw.MathExpression, threshold: float, what: str, *,
               notify: bool = True, runbook_section: str | None = None,
               missing: cw.TreatMissingData = QUIET, periods: int = 1) -> cw.Alarm:
        """An alarm on `metric` at or over `threshold` in each of its last `periods` periods."""
        section = runbook_section or construct_id.lower()
        alarm = metric.create_alarm(
            self,
            construct_id,
            alarm_description=f"{what} Runbook: {self._runbook}#{section}",
            threshold=threshold,
            comparison_operator=AT_LEAST,
            evaluation_periods=periods,
            datapoints_to_alarm=periods,
            treat_missing_data=missing,
        )
        if notify:
            alarm.add_alarm_action(self._action)
        self.alarms[construct_id] = alarm
        return alarm

    def _state_machine_alarms(self, r: MonitoredResources, settings: AlarmConfig, period: Duration) -> None:
        self._alarm("ExecutionsFailed", execution_metric(r, "ExecutionsFailed", period),
                    settings.executions_failed_threshold,
                    f"{r.title} executions failed. Each message HandleFailure recorded is also announced on its own.")
        self._alarm("ExecutionsTimedOut", execution_metric(r, "ExecutionsTimedOut", period), 1,
                    f"A {r.title} execution timed out: Catch cannot see it and no compensation ran.")
        self._alarm("ExecutionsAborted", execution_metric(r, "ExecutionsAborted", period), 1,
                    f"A {r.title} execution was aborted (stopped): no compensation ran.")
        self._alarm("ExecutionThrottled", execution_metric(r, "ExecutionThrottled", period), 1,
                    f"Step Functions throttled {r.title}'s state transitions in each of the last "
                    f"{SUSTAINED_PERIODS} periods: a load the quota does not carry, not a burst.",
                    periods=SUSTAINED_PERIODS)
        window = Duration.minutes(settings.failure_rate_window_minutes)
        self._alarm("FailureRate", failure_rate(r, window, settings.failure_rate_min_started),
                    settings.failure_rate_percent,
                    f"At least {settings.failure_rate_percent}% of the {r.title} executions of the last "
                    f"{settings.failure_rate_window_minutes} minutes did not succeed "
                    f"(counted from {settings.failure_rate_min_started} started executions on).")

    def _queue_alarms(self, r: MonitoredResources, settings: AlarmConfig, period: Duration) -> None:
        healing = r.healing is not None and r.healing.policy.max_attempts > 0
        # With the automatic redrive on, a record in the failure DLQ may be waiting for its retry: FailuresNeedAPerson
        # notifies for the ones a person must handle; this one stays on the dashboard without paging anybody.
        self._alarm("FailureDlqNotEmpty", queue_depth(r.failure_dlq, period, "FailureDlq"), 1,
                    "Failed messages wait in the failure DLQ (for an automatic retry, or for inspection and redrive)."
                    if healing else "Failed messages wait in the failure DLQ for inspection and redrive.",
                    notify=not healing)
        # With the Redriver sending the source DLQ back, what waits there may heal within a period or two (a burst over
        # the StartExecution quota): SourceDlqNeedsAPerson notifies for what has spent its automatic attempts.
        returns = r.healing is not None and r.healing.policy.returns_source_dlq
        self._alarm("SourceDlqNotEmpty", queue_depth(r.source_dlq, period, "SourceDlq"), 1,
                    "The pipe could not start an execution for some messages: they wait in the source DLQ (the "
                    "Redriver sends them back, at most its automatic attempts)." if returns else
                    "The pipe could not start an execution for some messages: they wait in the source DLQ.",
                    notify=not returns)
        self._alarm("FailureEventsWaiting", oldest_message_age(r.failure_events_queue, period),
                    settings.failure_events_max_age_seconds,
                    "Status-change events of executions that ended TIMED_OUT, ABORTED or FAILED unrecorded wait in "
                    "the failure-events queue longer than expected: the Reconciler is behind or failing.")
        self._alarm("SourceQueueBacklog", oldest_message_age(r.source_queue, period),
                    settings.source_queue_max_age_seconds,
                    "The oldest message in the source queue waits longer than expected: the pipe is stopped, "
                    "failing or throttled.")

    def _delivery_alarms(self, r: MonitoredResources, period: Duration) -> None:
        self._alarm("PipeExecutionFailed", pipe_metric(r.pipe_name, "ExecutionFailed", period), 1,
                    f"The pipe failed to start {r.title} executions; SQS will retry, then move them to the source DLQ.")
        self._alarm("PipeExecutionThrottled", pipe_metric(r.pipe_name, "ExecutionThrottled", period), 1,
                    f"The pipe was throttled in each of the last {SUSTAINED_PERIODS} periods: messages wait longer "
                    "in the source queue.", periods=SUSTAINED_PERIODS)
        self._alarm("RuleFailedInvocations", rule_metric(r, "FailedInvocations", period), 1,
                    "The failure rule could not deliver a status-change event to a target after its retries.")
        self._alarm("RuleTargetDlqNotEmpty", queue_depth(r.rule_target_dlq, period, "RuleTargetDlq"), 1,
                    "Failure announcements the rule could not deliver wait in its target DLQ.")
        if r.healing is not None:
            self._healing_alarms(r, period)
        if r.completion_webhook is not None:
            webhook = r.completion_webhook
            self._alarm("CompletionWebhookUndelivered", queue_depth(webhook.dlq, period, "CompletionWebhookDlq"), 1,
                        "The completion webhook gave up on some notices after its retries: their stream records are "
                        "described in the CompletionWebhookDlq (each message's status stays readable).")
            self._alarm("CompletionWebhookFailing",
                        pipe_metric(webhook.pipe.ref, "ExecutionFailed", period, label="Webhook pipe"), 1,
                        "The completion webhook's pipe failed executions (the caller's URL refused or timed out, or "
                        "the enrichment failed); it retries them while their stream records are under 24 hours old.")
        if r.tickets is not None:
            self._ticket_alarms(r, period)
        if r.undelivered_alerts is not None:
            # Its own notification may fail like the alerts it counts; it still shows on the dashboard and in Slack.
            self._alarm("UndeliveredAlertsDlqNotEmpty", queue_depth(r.undelivered_alerts, period, "UndeliveredAlerts"),
                        1, "SNS could not deliver some alerts to the e-mail or webhook subscription.")

    def _ticket_alarms(self, r: MonitoredResources, period: Duration) -> None:
        """The tickets that could not be opened or resolved: each failure is still announced and in the DLQ."""
        assert r.tickets is not None and r.healing is not None
        self._alarm("TicketsDlqNotEmpty", queue_depth(r.tickets.dlq, period, "TicketsDlq"), 1,
                    "The tickets function gave up on stream records after its retries: OpsItems for them may be "
                    "missing or left open.")
        self._alarm("TicketsErrors", r.tickets.function.metric_errors(statistic=cw.Stats.SUM, period=period), 1,
                    "The tickets function failed; its stream mapping retries the records.",
                    runbook_section="ticketsdlqnotempty")
        self._alarm("TicketsRefused", r.healing_metric("TicketsRefused", period), 1,
                    "OpsCenter refused a ticket (its quota of OpsItems): the failure is announced and waits in the "
                    "failure DLQ without one.", runbook_section="ticketsdlqnotempty")

    def _healing_alarms(self, r: MonitoredResources, period: Duration) -> None:
        assert r.healing is not None
        h = r.healing
        # The Redriver reports the gauge on every run; two of its periods without a report mean nobody classifies the
        # failure DLQ any more (the schedule is off, the function cannot start): that needs a person too.
        reported = Duration.minutes(2 * h.redrive_every_minutes)
        self._alarm("FailuresNeedAPerson", r.healing_metric("FailuresNeedingAPerson", reported, cw.Stats.MAXIMUM), 1,
                    "Failed messages in the failure DLQ that no automatic retry will heal (business errors, manual "
                    "repairs, aborted executions, transient failures whose automatic attempts are spent, messages "
                    "the redrive cannot resend), or the Redriver has not reported for two of its periods.",
                    missing=cw.TreatMissingData.BREACHING)
        # A record the Redriver should have sent back and did not (the source queue refusing it, its delete failing),
        # whatever the reason; no report at all is the Redriver stopping, which leaves every waiting record overdue.
        self._alarm("FailuresOverdue", r.healing_metric("FailuresOverdue", reported, cw.Stats.MAXIMUM), 1,
                    "Failure records waiting for an automatic retry more than one Redriver period past their due "
                    "time are still in the failure DLQ, or the Redriver has not reported for two of its periods.",
                    missing=cw.TreatMissingData.BREACHING)
        if h.policy.returns_source_dlq:
            self._alarm("SourceDlqNeedsAPerson",
                        r.healing_metric("SourceDlqNeedingAPerson", reported, cw.Stats.MAXIMUM), 1,
                        "Messages the pipe could not hand over wait in the source DLQ with their automatic attempts "
                        "spent: the cause lasts (the pipe's role, its target, or an overload longer than the "
                        "attempts).", runbook_section="sourcedlqnotempty")
        self._alarm("ReconcilerDlqNotEmpty", queue_depth(h.reconciler_dlq, period, "ReconcilerDlq"), 1,
                    "The Reconciler could not finish some executions after every retry: they are not compensated "
                    "or recorded yet (the sweep keeps trying them while they are in its lookback).")
        self._alarm("ReconcilerErrors", h.reconciler.metric_errors(statistic=cw.Stats.SUM, period=period), 1,
                    "The Reconciler failed; the failure-events queue redelivers the event and the sweep retries.")
        self._alarm("RedriverErrors", h.redriver.metric_errors(statistic=cw.Stats.SUM, period=period), 1,
                    "The Redriver failed: transient failures wait in the failure DLQ until it runs again.")
        self._alarm("ScheduleDlqNotEmpty", queue_depth(h.schedule_dlq, period, "ScheduleDlq"), 1,
                    "A sweep or a redrive run failed after every retry (Scheduler could not invoke the function, or "
                    "the run itself failed three times): the next run tries again; the queue keeps what failed.")

    def _alert_path_alarms(self, alerts_topic: sns.ITopic, alert_path_topic: sns.ITopic, period: Duration) -> None:
        """The alarms about the alerting itself also notify the AlertPathTopic; the AlertPathTopic's own failures
        notify the alerts topic. So an outage of either topic is told on the other (docs/design.md, "When the alerts
        topic itself is down")."""
        self._alarm("AlertsTopicNotificationsFailed",
                    alerts_topic.metric_number_of_notifications_failed(statistic=cw.Stats.SUM, period=period), 1,
                    "SNS could not deliver alerts to a subscription of the alerts topic.",
                    runbook_section="when-the-alerts-topic-itself-is-down")
        self._alarm("AlertPathNotificationsFailed",
                    alert_path_topic.metric_number_of_notifications_failed(statistic=cw.Stats.SUM, period=period), 1,
                    "SNS could not deliver to a subscription of the alert-path topic (the second channel).",
                    runbook_section="when-the-alerts-topic-itself-is-down")
        second = cw_actions.SnsAction(alert_path_topic)
        for alarm_id in ALERT_PATH_ALARMS:
            if alarm_id in self.alarms:
                self.alarms[alarm_id].add_alarm_action(second)

    def _function_alarms(self, r: MonitoredResources, period: Duration) -> list[cw.IAlarm]:
        found: list[cw.IAlarm] = []
        for task, function in r.functions.items():
            found.append(self._alarm(
                f"{task}UnexpectedErrors", unexpected_errors(r, task, function, period), 1,
                f"{task} failed with an error it does not raise on purpose (a crash, a timeout, a transient "
                "AWS error, a failed compensation).", notify=False, runbook_section="tasksunhealthy",
            ))
            found.append(self._alarm(
                f"{task}Throttles", function.metric_throttles(statistic=cw.Stats.SUM, period=period), 1,
                f"Lambda throttled {task}; the state machine retries, but messages slow down.", notify=False,
                runbook_section="tasksunhealthy",
            ))
        return found
