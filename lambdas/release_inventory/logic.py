"""ReleaseInventory: return exactly what this saga attempt reserved, once; a no-op when it reserved nothing."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from common import aws
from common.compensation import attempt_to_undo, undo_or_fail
from common.idempotency import StepKey, run_once
from common.inventory import RESERVED, DynamoDBInventory, InventoryStore
from common.observability import count, logger
from common.settings import ReleaseInventorySettings

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

STEP = "ReleaseInventory"
RELEASED = {"status": "RELEASED"}
NOTHING_TO_RELEASE = {"status": "NOTHING_TO_RELEASE"}


def handle(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Wire the inventory adapter from the environment and run the compensation."""
    with undo_or_fail("ReleaseInventory"):
        settings = ReleaseInventorySettings.from_env(os.environ)
        inventory = DynamoDBInventory(aws.dynamodb(), settings.inventory_table, settings.reservations_table)
        return release_inventory(event, context, settings=settings, inventory=inventory)


def release_inventory(
    event: dict[str, Any], context: LambdaContext, *, settings: ReleaseInventorySettings, inventory: InventoryStore
) -> dict[str, Any]:
    """Return RELEASED or NOTHING_TO_RELEASE; raise TransientError or CompensationFailed."""
    with undo_or_fail("ReleaseInventory"):
        order_id, attempt_id = attempt_to_undo(event)
        if order_id is None:
            logger.info("body names no order; nothing can have been reserved")
            return dict(NOTHING_TO_RELEASE)
        key = StepKey(order_id, STEP, attempt_id)
        return run_once(
            key, lambda: _release(order_id, attempt_id, inventory), settings=settings.idempotency, context=context
        )


def _release(order_id: str, attempt_id: str, inventory: InventoryStore) -> dict[str, Any]:
    reservation = inventory.find_reservation(order_id)
    # Another attempt's reservation is not ours to return: that attempt may still succeed.
    if reservation is None or reservation.status != RESERVED or reservation.attempt_id != attempt_id:
        logger.info("no reservation of this attempt to release")
        return dict(NOTHING_TO_RELEASE)
    if not inventory.release(reservation):
        logger.info("reservation released concurrently")
        return dict(NOTHING_TO_RELEASE)
    count("InventoryReleased")
    logger.info("stock returned", extra={"items": reservation.as_output()["items"]})
    return dict(RELEASED)
