"""CancelShipment: cancel the shipment this saga attempt arranged, once; a no-op when it arranged none.

It compensates ArrangeShipping, the pivot of the saga: when the shipment row was written but every retry of
ArrangeShipping then failed (the first response lost, the next attempts throttled), the saga would otherwise refund
and release while the shipment stays active.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from common import aws
from common.compensation import Compensation, compensate, undo_or_fail
from common.order_ledger import DynamoDBOrderLedger
from common.settings import CancelShipmentSettings
from common.shipments import DynamoDBShipments, ShipmentStore

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

CANCEL = Compensation(
    step="CancelShipment",
    done="CANCELLED",
    nothing="NOTHING_TO_CANCEL",
    metric="ShipmentsCancelled",
    describe=lambda shipment: {"shipmentId": shipment.shipment_id, "carrier": shipment.carrier},
)


def handle(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Wire the shipment adapter from the environment and run the compensation."""
    with undo_or_fail(CANCEL.step):
        settings = CancelShipmentSettings.from_env(os.environ)
        shipments = DynamoDBShipments(aws.dynamodb(), settings.shipments_table)
        ledger = DynamoDBOrderLedger(aws.dynamodb(), settings.orders_table)
        return cancel_shipment(event, context, settings=settings, shipments=shipments, ledger=ledger)


def cancel_shipment(
    event: dict[str, Any],
    context: LambdaContext,
    *,
    settings: CancelShipmentSettings,
    shipments: ShipmentStore,
    ledger: DynamoDBOrderLedger,
) -> dict[str, Any]:
    """Return CANCELLED or NOTHING_TO_CANCEL; raise TransientError or CompensationFailed."""
    # Not the order's owner, absent, already cancelled, or arranged by another attempt: nothing of ours to undo.
    return compensate(event, context, CANCEL, idempotency=settings.idempotency, ledger=ledger,
                      undo=lambda entry: shipments.cancel(entry.order_id, entry.attempt_id))
