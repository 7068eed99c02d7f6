"""ReleaseInventory: return exactly what this saga attempt reserved, once; a no-op when it reserved nothing."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from common import aws
from common.compensation import Compensation, compensate, undo_or_fail
from common.inventory import RESERVED, DynamoDBInventory, InventoryStore, Reservation
from common.observability import logger
from common.order_ledger import ACTIVE, COMPENSATED, COMPLETED, DynamoDBOrderLedger, OrderEntry
from common.settings import ReleaseInventorySettings

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

RELEASE = Compensation(
    step="ReleaseInventory",
    done="RELEASED",
    nothing="NOTHING_TO_RELEASE",
    metric="InventoryReleased",
    describe=lambda reservation: {"items": reservation.as_output()["items"]},
)


def handle(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Wire the inventory adapter from the environment and run the compensation."""
    with undo_or_fail(RELEASE.step):
        settings = ReleaseInventorySettings.from_env(os.environ)
        inventory = DynamoDBInventory(aws.dynamodb(), settings.inventory_table, settings.reservations_table)
        ledger = DynamoDBOrderLedger(aws.dynamodb(), settings.orders_table)
        return release_inventory(event, context, settings=settings, inventory=inventory, ledger=ledger)


def release_inventory(
    event: dict[str, Any],
    context: LambdaContext,
    *,
    settings: ReleaseInventorySettings,
    inventory: InventoryStore,
    ledger: DynamoDBOrderLedger,
) -> dict[str, Any]:
    """Return RELEASED or NOTHING_TO_RELEASE; raise TransientError or CompensationFailed.

    The last compensation of every failure path: besides the stock, it hands the order over (COMPENSATED), so that
    a later attempt (an operator redrive) may take it.
    """

    def release(entry: OrderEntry) -> Reservation | None:
        if entry.status == COMPENSATED:
            return None  # handed over already (a retry after the response was lost)
        hand_over = ledger.transition_item(
            entry.order_id, entry.attempt_id, entry.execution_arn, to=COMPENSATED, allowed_from=(ACTIVE, COMPLETED)
        )
        reservation = inventory.find_reservation(entry.order_id)
        if reservation is None or reservation.status != RESERVED or reservation.attempt_id != entry.attempt_id:
            ledger.hand_over(entry)
            return None
        if not inventory.release(reservation, hand_over):
            logger.info("reservation released concurrently")
            return None
        return reservation

    return compensate(event, context, RELEASE, idempotency=settings.idempotency, ledger=ledger, undo=release)
