"""ReleaseInventory: return exactly what this saga attempt reserved, once; a no-op when it reserved nothing."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from common import aws
from common.compensation import Compensation, compensate, undo_or_fail
from common.inventory import RESERVED, DynamoDBInventory, InventoryStore, Reservation
from common.observability import logger
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
        return release_inventory(event, context, settings=settings, inventory=inventory)


def release_inventory(
    event: dict[str, Any], context: LambdaContext, *, settings: ReleaseInventorySettings, inventory: InventoryStore
) -> dict[str, Any]:
    """Return RELEASED or NOTHING_TO_RELEASE; raise TransientError or CompensationFailed."""

    def release(order_id: str, attempt_id: str) -> Reservation | None:
        reservation = inventory.find_reservation(order_id)
        # Another attempt's reservation is not ours to return: that attempt may still succeed.
        if reservation is None or reservation.status != RESERVED or reservation.attempt_id != attempt_id:
            return None
        if not inventory.release(reservation):
            logger.info("reservation released concurrently")
            return None
        return reservation

    return compensate(event, context, RELEASE, idempotency=settings.idempotency, undo=release)
