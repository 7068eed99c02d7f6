"""Lambda entry point of IndexProduct (``index_product.handler.handler``): Powertools decorators over the logic."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from index_product.logic import handle
from index_product.telemetry import logger, metrics

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return handle(event)
