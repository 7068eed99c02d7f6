"""Logger, Metrics and Tracer, created once per execution environment and shared by every module."""

from __future__ import annotations

from aws_lambda_powertools.logging import Logger
from aws_lambda_powertools.metrics import Metrics, MetricUnit
from aws_lambda_powertools.tracing import Tracer

# Service name and namespace come from POWERTOOLS_SERVICE_NAME / POWERTOOLS_METRICS_NAMESPACE.
logger = Logger()
metrics = Metrics()
# Patch botocore only: patch_all would import every library X-Ray knows (requests, sqlite3, ...) at cold start.
tracer = Tracer(patch_modules=("botocore",))


def correlate(*, order_id: str | None = None, message_id: str | None = None) -> None:
    """Attach the correlation ids to every later log line of this invocation."""
    keys = {"orderId": order_id, "messageId": message_id}
    logger.append_keys(**{key: value for key, value in keys.items() if value})
    if order_id:
        tracer.put_annotation(key="orderId", value=order_id)


def count(metric: str) -> None:
    """Add one to a saga metric (names as in the contract); flushed by the handler's log_metrics."""
    metrics.add_metric(name=metric, unit=MetricUnit.Count, value=1)
