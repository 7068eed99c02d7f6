"""Lambda entry point of ReserveInventory (``reserve_inventory.handler.handler``).

No Powertools Tracer here: see common.observability for why; Lambda active tracing still covers the invocation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from common.observability import logger, metrics
from reserve_inventory.logic import handle

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return handle(event, context)
