"""Lambda entry point of BookCarrier (``book_carrier.handler.handler``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from book_carrier.logic import handle
from common.observability import logger, metrics
from common.tracing import tracer

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
@tracer.capture_lambda_handler(capture_response=False)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return handle(event, context)
