"""ArrangeShipping: record the shipment with the carrier that serves the destination country (common/carriers.py:
an unserved country raises ShippingUnavailable), and complete the order."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from common import aws, progress
from common.carriers import carrier_for
from common.idempotency import StepKey, run_once
from common.observability import correlate, count, logger
from common.order_context import ShippingInput, shipping_input
from common.order_ledger import ACTIVE, COMPLETED, DynamoDBOrderLedger
from common.settings import ArrangeShippingSettings
from common.shipments import DynamoDBShipments, ShipmentStore

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

STEP = "ArrangeShipping"


def handle(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Wire the shipment adapter from the environment and run the step."""
    settings = ArrangeShippingSettings.from_env(os.environ)
    shipments = DynamoDBShipments(aws.dynamodb(), settings.shipments_table)
    ledger = DynamoDBOrderLedger(aws.dynamodb(), settings.orders_table)
    return arrange_shipping(event, context, settings=settings, shipments=shipments, ledger=ledger)


def arrange_shipping(
    event: dict[str, Any],
    context: LambdaContext,
    *,
    settings: ArrangeShippingSettings,
    shipments: ShipmentStore,
    ledger: DynamoDBOrderLedger,
) -> dict[str, Any]:
    """Return the order context plus ``shipment``; raise ShippingUnavailable or InvalidOrder."""
    order = shipping_input(event)
    correlate(order_id=order.order_id, message_id=order.attempt_id)
    key = StepKey(order.order_id, STEP, order.attempt_id)
    shipment = run_once(
        key,
        lambda: _arrange(order, settings, shipments, ledger),
        settings=settings.idempotency,
        context=context,
    )
    return {**event, "shipment": shipment}


def _arrange(
    order: ShippingInput, settings: ArrangeShippingSettings, shipments: ShipmentStore, ledger: DynamoDBOrderLedger
) -> dict[str, Any]:
    carrier = carrier_for(order.order_id, order.country, settings.served_countries)
    # The shipment and the ledger's COMPLETED in one transaction: only the order's owner ships.
    complete = ledger.transition_item(
        order.order_id, order.attempt_id, order.execution_arn, to=COMPLETED, allowed_from=(ACTIVE,)
    )
    shipment, created = shipments.arrange(order.order_id, order.attempt_id, carrier, order.address, complete)
    if created:
        count("OrdersShipped")
    else:
        logger.info("order already shipped", extra={"shipmentId": shipment.shipment_id})
    # The saga's last step: the order is done for its caller.
    progress.report(settings.deliveries_table, message_id=order.attempt_id, execution_arn=order.execution_arn,
                    stage=progress.SHIPPED, done=True)
    return shipment.as_output()
