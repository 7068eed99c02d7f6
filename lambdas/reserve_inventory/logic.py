"""ReserveInventory: claim the delivery, validate the order, reserve every line item in one transaction."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from common import aws
from common.errors import DuplicateDelivery, InvalidOrder, OutOfStock
from common.idempotency import StepKey, run_once
from common.inventory import DynamoDBInventory, InventoryStore
from common.models import Order, parse_order
from common.observability import correlate, count, logger
from common.records import sqs_record
from common.settings import ReserveInventorySettings
from reserve_inventory.deliveries import DeliveryClaims, DynamoDBDeliveryClaims

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

STEP = "ReserveInventory"


def handle(event: Mapping[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Wire the DynamoDB adapters from the environment and run the step."""
    settings = ReserveInventorySettings.from_env(os.environ)
    client = aws.dynamodb()
    return reserve_inventory(
        event,
        context,
        settings=settings,
        claims=DynamoDBDeliveryClaims(client, settings.deliveries_table, settings.idempotency.expiry_seconds),
        inventory=DynamoDBInventory(client, settings.inventory_table, settings.reservations_table),
    )


def reserve_inventory(
    event: Mapping[str, Any],
    context: LambdaContext,
    *,
    settings: ReserveInventorySettings,
    claims: DeliveryClaims,
    inventory: InventoryStore,
) -> dict[str, Any]:
    """Return the order context for the next steps; raise DuplicateDelivery, InvalidOrder or OutOfStock."""
    record = sqs_record(event)
    correlate(message_id=record.message_id)
    execution_arn = event.get("executionArn")
    if not isinstance(execution_arn, str) or not execution_arn:
        raise InvalidOrder("task input has no executionArn; the state machine must pass $$.Execution.Id")
    # The claim comes before idempotency: a duplicate execution must stop here, not replay the cached result.
    if not claims.claim(record.message_id, execution_arn):
        count("DuplicateDeliveries")
        logger.warning("SQS message already claimed by another execution", extra={"executionArn": execution_arn})
        raise DuplicateDelivery(f"message {record.message_id} is handled by another execution")
    try:
        order = parse_order(record.body)
    except InvalidOrder:
        count("InvalidOrders")
        raise
    correlate(order_id=order.orderId)
    key = StepKey(order.orderId, STEP, record.message_id)
    return run_once(
        key,
        lambda: _reserve(order, record.message_id, inventory),
        settings=settings.idempotency,
        context=context,
    )


def _reserve(order: Order, attempt_id: str, inventory: InventoryStore) -> dict[str, Any]:
    lines = [(item.sku, item.quantity) for item in order.items]
    try:
        reservation, created = inventory.reserve(order.orderId, attempt_id, lines)
    except OutOfStock as error:
        count("OutOfStock")
        logger.info("order cannot be reserved", extra={"sku": error.sku})
        raise
    if created:
        count("OrdersReserved")
    else:
        logger.info("order already holds a reservation", extra={"reservedBy": reservation.attempt_id})
    return {
        "orderId": order.orderId,
        "customerId": order.customerId,
        "messageId": attempt_id,
        "order": order.to_json_dict(),
        "reservation": reservation.as_output(),
    }
