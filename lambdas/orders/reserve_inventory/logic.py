"""ReserveInventory: claim the delivery, validate the order, reserve every line item in one transaction."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from common import aws, progress
from common.errors import DuplicateDelivery, DuplicateOrder, InvalidOrder, OrderConflict, OutOfStock, TransientError
from common.idempotency import StepKey, run_once
from common.inventory import RESERVED, ClaimLost, DynamoDBInventory, InventoryStore
from common.models import Order, parse_order
from common.observability import correlate, count, logger
from common.order_ledger import CLAIM, OWN, DynamoDBOrderLedger, decide, fingerprint
from common.records import sqs_record
from common.settings import ReserveInventorySettings
from fire_and_forget.runtime.deliveries import DeliveryClaims, DynamoDBDeliveryClaims

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

STEP = "ReserveInventory"
CLAIM_TRIES = 3  # re-reads of the ledger when another attempt changed it between the read and the transaction


def handle(event: Mapping[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Wire the DynamoDB adapters from the environment and run the step."""
    settings = ReserveInventorySettings.from_env(os.environ)
    client = aws.dynamodb()
    return reserve_inventory(
        event,
        context,
        settings=settings,
        claims=DynamoDBDeliveryClaims(client, settings.deliveries_table, settings.idempotency.expiry_seconds,
                                      settings.claim_stale_after_seconds),
        inventory=DynamoDBInventory(client, settings.inventory_table, settings.reservations_table),
        ledger=DynamoDBOrderLedger(client, settings.orders_table),
    )


def reserve_inventory(
    event: Mapping[str, Any],
    context: LambdaContext,
    *,
    settings: ReserveInventorySettings,
    claims: DeliveryClaims,
    inventory: InventoryStore,
    ledger: DynamoDBOrderLedger,
) -> dict[str, Any]:
    """Return the order context for the next steps; raise DuplicateDelivery, InvalidOrder, OrderConflict,
    DuplicateOrder or OutOfStock."""
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
        lambda: _reserve(order, record.message_id, execution_arn, inventory, ledger, settings.deliveries_table),
        settings=settings.idempotency,
        context=context,
    )


def _reserve(
    order: Order, attempt_id: str, execution_arn: str, inventory: InventoryStore, ledger: DynamoDBOrderLedger,
    deliveries_table: str | None,
) -> dict[str, Any]:
    body = order.to_json_dict()
    order_fingerprint = fingerprint(body)
    lines = [(item.sku, item.quantity) for item in order.items]
    for _ in range(CLAIM_TRIES):
        entry = ledger.find(order.orderId)
        try:
            decision = decide(entry, order_fingerprint, attempt_id, execution_arn)
        except OrderConflict:
            count("OrderConflicts")
            logger.warning("order already received with another body", extra={"ownedBy": entry and entry.attempt_id})
            raise
        except DuplicateOrder:
            count("DuplicateOrders")
            logger.info("another attempt owns this order", extra={"ownedBy": entry and entry.attempt_id})
            if entry is not None:
                progress.absorbed(deliveries_table, message_id=attempt_id, execution_arn=execution_arn,
                                  owner_message_id=entry.attempt_id)
            raise
        if decision == OWN:
            # A retry of this attempt after its transaction committed: the reservation is already ours.
            existing = inventory.find_reservation(order.orderId)
            if existing is None or existing.status != RESERVED or existing.attempt_id != attempt_id:
                raise TransientError(f"order {order.orderId} is ours but its reservation is not; retry")
            reservation, created = existing, False
            break
        claim = ledger.claim_item(
            order.orderId, order_fingerprint, attempt_id, execution_arn, None if decision == CLAIM else entry
        )
        try:
            reservation, created = inventory.reserve(order.orderId, attempt_id, lines, claim)
        except ClaimLost:
            continue  # another attempt claimed first: read the ledger again and decide
        except OutOfStock as error:
            count("OutOfStock")
            logger.info("order cannot be reserved", extra={"sku": error.sku})
            raise
        break
    else:
        raise TransientError(f"the ledger row of order {order.orderId} kept changing; retry")
    if created:
        count("OrdersReserved")
    else:
        logger.info("order already holds a reservation", extra={"reservedBy": reservation.attempt_id})
    progress.report(deliveries_table, message_id=attempt_id, execution_arn=execution_arn, stage=progress.RESERVED)
    return {
        "orderId": order.orderId,
        "customerId": order.customerId,
        "messageId": attempt_id,
        "executionArn": execution_arn,
        "order": body,
        "reservation": reservation.as_output(),
    }
