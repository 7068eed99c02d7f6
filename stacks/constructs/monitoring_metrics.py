"""The CloudWatch metrics of the pattern, named once, so the alarms and the dashboard read the same series."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_events as events
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn

from stacks.constructs.saga_tasks import METRICS_NAMESPACE, SERVICE_NAME

STATES_NAMESPACE = "AWS/States"
PIPES_NAMESPACE = "AWS/EventBridge/Pipes"
EVENTS_NAMESPACE = "AWS/Events"

# The documented Step Functions metric is ExecutionThrottled (singular); CDK's canned metricThrottled() helper
# emits ExecutionsThrottled, which Step Functions never publishes, so every metric here is named explicitly.
EXECUTION_METRICS = ("ExecutionsStarted", "ExecutionsSucceeded", "ExecutionsFailed", "ExecutionsTimedOut",
                     "ExecutionsAborted", "ExecutionThrottled")

# What the handlers count (lambdas/, `count(...)`): outcomes of the saga's steps and compensations.
STEP_OUTCOMES = ("OrdersReserved", "OrdersCharged", "OrdersShipped")
BUSINESS_REJECTIONS = ("InvalidOrders", "OutOfStock", "PaymentsDeclined", "ShippingUnavailable",
                       "DuplicateDeliveries", "DuplicateOrders", "OrderConflicts")
COMPENSATIONS = ("ShipmentsCancelled", "InventoryReleased", "PaymentsRefunded")
MANUAL_REPAIR = "CompensationsFailed"

# The errors each function raises on purpose, so that the state machine can Catch them by name: Lambda counts
# them in Errors like any crash. Each is counted by exactly one handler before it raises.
EXPECTED_ERRORS: dict[str, tuple[str, ...]] = {
    "ReserveInventory": ("DuplicateDeliveries", "DuplicateOrders", "InvalidOrders", "OrderConflicts", "OutOfStock"),
    "ChargePayment": ("PaymentsDeclined",),
    "ArrangeShipping": ("ShippingUnavailable",),
    "CancelShipment": (),
    "RefundPayment": (),
    "ReleaseInventory": (),
}


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
    functions: dict[str, lambda_.IFunction]
    # Exists only when an e-mail or webhook subscription does: alerts SNS could not deliver.
    undelivered_alerts: sqs.IQueue | None = None
    # The Express state machine that announces what the failure rule matched (ExecutionEvents.announcer).
    announcer: sfn.IStateMachine | None = None

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
        return queues


def execution_metric(resources: MonitoredResources, name: str, period: Duration) -> cw.Metric:
    """A Step Functions execution count of the order saga (dimension StateMachineArn), summed per period."""
    return resources.state_machine.metric(name, statistic=cw.Stats.SUM, period=period, label=name)


def queue_depth(queue: sqs.IQueue, period: Duration, label: str) -> cw.Metric:
    """Messages waiting: the maximum over the period, so a message that came and went is still seen."""
    return queue.metric_approximate_number_of_messages_visible(statistic=cw.Stats.MAXIMUM, period=period,
                                                               label=label)


def oldest_message_age(queue: sqs.IQueue, period: Duration) -> cw.Metric:
    return queue.metric_approximate_age_of_oldest_message(statistic=cw.Stats.MAXIMUM, period=period,
                                                          label="Oldest message age (s)")


def pipe_metric(resources: MonitoredResources, name: str, period: Duration,
                statistic: str = cw.Stats.SUM) -> cw.Metric:
    """A metric of the order pipe (namespace AWS/EventBridge/Pipes, dimension PipeName)."""
    return cw.Metric(namespace=PIPES_NAMESPACE, metric_name=name, dimensions_map={"PipeName": resources.pipe_name},
                     statistic=statistic, period=period, label=f"Pipe {name}")


def rule_metric(resources: MonitoredResources, name: str, period: Duration) -> cw.Metric:
    """A metric of the failure rule on the default bus (dimension RuleName only)."""
    return cw.Metric(namespace=EVENTS_NAMESPACE, metric_name=name,
                     dimensions_map={"RuleName": resources.rule.rule_name}, statistic=cw.Stats.SUM, period=period,
                     label=f"Rule {name}")


def saga_metric(name: str, period: Duration) -> cw.Metric:
    """A count the handlers publish with Powertools (namespace FireAndForget, dimension service)."""
    return cw.Metric(namespace=METRICS_NAMESPACE, metric_name=name, dimensions_map={"service": SERVICE_NAME},
                     statistic=cw.Stats.SUM, period=period, label=name)


def unexpected_errors(task: str, function: lambda_.IFunction, period: Duration) -> cw.MathExpression:
    """Errors of one function minus the business errors it raises on purpose: what nobody designed for."""
    using: dict[str, cw.IMetric] = {"errors": function.metric_errors(statistic=cw.Stats.SUM, period=period)}
    expression = "FILL(errors, 0)"
    for index, name in enumerate(EXPECTED_ERRORS[task]):
        using[f"expected{index}"] = saga_metric(name, period)
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
