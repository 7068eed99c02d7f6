"""BookCarrier: ask the carrier of the destination (common/carriers.py) to take the shipment, and keep this task's
token so that its answer, hours later, reaches the waiting workflow.

The workflow invokes it with `.waitForTaskToken`: what it returns is not the step's result, the carrier's answer is
(sent through the pattern's callback entry point: SendTaskSuccess with the booking, SendTaskFailure with
CarrierDeclined, or a heartbeat). The token stays in the waits table (fire_and_forget.runtime.callbacks); the carrier
answers by the order id and the request id sent with the request. Each attempt keeps its own token and sends the
request again with a new request id: only answers to the last request for an order reach the workflow.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

from common import aws, progress
from common.carriers import carrier_for
from common.errors import InvalidOrder, aws_errors_as_transient
from common.observability import correlate, count, logger
from common.order_context import ShippingInput, shipping_input
from common.settings import BookCarrierSettings
from fire_and_forget.runtime.callbacks import CallbackWaits

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

STEP = "BookCarrier"


def handle(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Wire the waits table and the carrier's queue from the environment and run the step."""
    settings = BookCarrierSettings.from_env(os.environ)
    waits = CallbackWaits(aws.dynamodb(), settings.waits_table)
    return book_carrier(event, settings=settings, waits=waits, sqs=aws.sqs())


def book_carrier(event: dict[str, Any], *, settings: BookCarrierSettings, waits: CallbackWaits,
                 sqs: Any) -> dict[str, Any]:
    """Hand the order over; raise ShippingUnavailable (nobody serves the country) or InvalidOrder."""
    order = shipping_input(event)
    token = event.get("taskToken")
    if not isinstance(token, str) or not token:
        raise InvalidOrder("BookCarrier's input has no taskToken: the state must invoke it with .waitForTaskToken")
    correlate(order_id=order.order_id, message_id=order.attempt_id)
    carrier = carrier_for(order.order_id, order.country, settings.served_countries)
    # The token first: an answer that comes back before this returns must find it.
    request = waits.hand_over(order.order_id, token, order.execution_arn, STEP, settings.timeout_seconds)
    with aws_errors_as_transient("send the request to the carrier"):
        sqs.send_message(QueueUrl=settings.carrier_requests_queue_url,
                         MessageBody=json.dumps(_request(order, carrier, request)))
    count("CarrierRequests")
    logger.info("shipment handed to the carrier", extra={"carrier": carrier})
    progress.report(settings.deliveries_table, message_id=order.attempt_id, execution_arn=order.execution_arn,
                    stage=progress.AWAITING_CARRIER)
    return {"orderId": order.order_id, "carrier": carrier, "request": request}


def _request(order: ShippingInput, carrier: str, request: str) -> dict[str, Any]:
    """What the carrier reads: whom to ship to, and the key and request id to answer with."""
    return {"key": order.order_id, "request": request, "carrier": carrier, "shippingAddress": order.address}
