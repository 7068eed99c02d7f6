"""ChargePayment: charge the order through the payment provider port; decline by the documented rules."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from common import aws
from common.errors import PaymentDeclined
from common.idempotency import StepKey, run_once
from common.observability import correlate, count, logger
from common.order_context import ChargeInput, charge_input
from common.payments import ChargeRequest, LedgerPaymentProvider, PaymentProvider
from common.settings import ChargePaymentSettings

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

STEP = "ChargePayment"


def handle(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Wire the ledger adapter from the environment and run the step."""
    settings = ChargePaymentSettings.from_env(os.environ)
    provider = LedgerPaymentProvider(aws.dynamodb(), settings.payments_table, settings.default_credit_limit)
    return charge_payment(event, context, settings=settings, provider=provider)


def charge_payment(
    event: dict[str, Any], context: LambdaContext, *, settings: ChargePaymentSettings, provider: PaymentProvider
) -> dict[str, Any]:
    """Return the order context plus ``payment``; raise PaymentDeclined or InvalidOrder."""
    order = charge_input(event)
    correlate(order_id=order.order_id, message_id=order.attempt_id)
    key = StepKey(order.order_id, STEP, order.attempt_id)
    payment = run_once(key, lambda: _charge(order, provider), settings=settings.idempotency, context=context)
    return {**event, "payment": payment}


def _charge(order: ChargeInput, provider: PaymentProvider) -> dict[str, Any]:
    request = ChargeRequest(
        order_id=order.order_id,
        customer_id=order.customer_id,
        attempt_id=order.attempt_id,
        amount=order.amount,
        currency=order.currency,
        payment_token=order.payment_token,
    )
    try:
        charge, created = provider.charge(request)
    except PaymentDeclined:
        count("PaymentsDeclined")
        raise
    if created:
        count("OrdersCharged")
    else:
        logger.info("order already charged", extra={"chargeId": charge.charge_id, "chargedBy": charge.attempt_id})
    return charge.as_output()
