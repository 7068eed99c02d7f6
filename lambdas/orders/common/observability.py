"""Logger and Metrics, created once per execution environment and shared by every module.

The Tracer lives in common.tracing, imported only by the handlers that use it: creating it loads the X-Ray SDK
(and asyncio through wrapt), about 15 ms of cold start. ReserveInventory, the one handler that must also import
pydantic, goes without it to stay within its cold-start budget; Lambda's active tracing still records its
invocation in the workflow's X-Ray trace.
"""

from __future__ import annotations

import sys

from aws_lambda_powertools.logging import Logger
from aws_lambda_powertools.metrics import Metrics, MetricUnit

# Service name and namespace come from POWERTOOLS_SERVICE_NAME / POWERTOOLS_METRICS_NAMESPACE.
logger = Logger()
metrics = Metrics()


def correlate(*, order_id: str | None = None, message_id: str | None = None) -> None:
    """Attach the correlation ids to every later log line of this invocation (and the trace, where traced)."""
    keys = {"orderId": order_id, "messageId": message_id}
    logger.append_keys(**{key: value for key, value in keys.items() if value})
    tracing = sys.modules.get("common.tracing")
    if order_id and tracing is not None:
        tracing.annotate(order_id)


def count(metric: str) -> None:
    """Add one to a saga metric (names as in the contract); flushed by the handler's log_metrics."""
    metrics.add_metric(name=metric, unit=MetricUnit.Count, value=1)
