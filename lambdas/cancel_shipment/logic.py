"""CancelShipment: cancel the shipment this saga attempt arranged, once; a no-op when it arranged none.

It compensates ArrangeShipping, the pivot of the saga: when the shipment row was written but every retry of
ArrangeShipping then failed (the first response lost, the next attempts throttled), the saga would otherwise refund
and release while the shipment stays active.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from common import aws
from common.compensation import attempt_to_undo, undo_or_fail
from common.idempotency import StepKey, run_once
from common.observability import count, logger
from common.settings import CancelShipmentSettings
from common.shipments import DynamoDBShipments, ShipmentStore

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

STEP = "CancelShipment"
CANCELLED = {"status": "CANCELLED"}
NOTHING_TO_CANCEL = {"status": "NOTHING_TO_CANCEL"}


def handle(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Wire the shipment adapter from the environment and run the compensation."""
    with undo_or_fail("CancelShipment"):
        settings = CancelShipmentSettings.from_env(os.environ)
        shipments = DynamoDBShipments(aws.dynamodb(), settings.shipments_table)
        return cancel_shipment(event, context, settings=settings, shipments=shipments)


def cancel_shipment(
    event: dict[str, Any], context: LambdaContext, *, settings: CancelShipmentSettings, shipments: ShipmentStore
) -> dict[str, Any]:
    """Return CANCELLED or NOTHING_TO_CANCEL; raise TransientError or CompensationFailed."""
    with undo_or_fail("CancelShipment"):
        order_id, attempt_id = attempt_to_undo(event)
        if order_id is None:
            logger.info("body names no order; nothing can have been shipped")
            return dict(NOTHING_TO_CANCEL)
        key = StepKey(order_id, STEP, attempt_id)
        return run_once(
            key, lambda: _cancel(order_id, attempt_id, shipments), settings=settings.idempotency, context=context
        )


def _cancel(order_id: str, attempt_id: str, shipments: ShipmentStore) -> dict[str, Any]:
    # Absent, already cancelled, or arranged by another attempt (which may still complete): nothing of ours to undo.
    shipment = shipments.cancel(order_id, attempt_id)
    if shipment is None:
        logger.info("no shipment of this attempt to cancel")
        return dict(NOTHING_TO_CANCEL)
    count("ShipmentsCancelled")
    logger.info("shipment cancelled", extra={"shipmentId": shipment.shipment_id, "carrier": shipment.carrier})
    return dict(CANCELLED)
