"""ChargePayment: charge the order through the payment provider port; decline by the documented rules.

One live charge per order: a charge the order still carries from another attempt is that attempt's, never this
one's. This attempt owns the order (ReserveInventory claimed it in the order ledger), so such a charge belongs to an
attempt that no longer does: one whose invocation committed after its execution had ended and been compensated. It
is refunded here, once, before this attempt charges (counted as OrphanChargesRefunded).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from common import aws, progress
from common.errors import DuplicateOrder, PaymentDeclined, TransientError
from common.idempotency import StepKey, run_once
from common.observability import correlate, count, logger
from common.order_context import ChargeInput, charge_input
from common.order_ledger import DynamoDBOrderLedger
from common.payments import Charge, ChargeOfAnotherAttempt, ChargeRequest, LedgerPaymentProvider, PaymentProvider
from common.settings import ChargePaymentSettings

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

STEP = "ChargePayment"
CHARGE_TRIES = 2  # the charge, and once more after refunding another attempt's


def handle(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Wire the ledger adapters from the environment and run the step."""
    settings = ChargePaymentSettings.from_env(os.environ)
    client = aws.dynamodb()
    provider = LedgerPaymentProvider(client, settings.payments_table, settings.default_credit_limit)
    return charge_payment(event, context, settings=settings, provider=provider,
                          ledger=DynamoDBOrderLedger(client, settings.orders_table))


def charge_payment(
    event: dict[str, Any], context: LambdaContext, *, settings: ChargePaymentSettings, provider: PaymentProvider,
    ledger: DynamoDBOrderLedger,
) -> dict[str, Any]:
    """Return the order context plus ``payment``; raise PaymentDeclined or InvalidOrder."""
    order = charge_input(event)
    correlate(order_id=order.order_id, message_id=order.attempt_id)
    execution_arn = str(event.get("executionArn") or "")
    key = StepKey(order.order_id, STEP, order.attempt_id)
    payment = run_once(key, lambda: _charge(order, execution_arn, provider, ledger, settings.deliveries_table),
                       settings=settings.idempotency, context=context)
    return {**event, "payment": payment}


def _charge(order: ChargeInput, execution_arn: str, provider: PaymentProvider,
            ledger: DynamoDBOrderLedger, deliveries_table: str | None) -> dict[str, Any]:
    request = ChargeRequest(
        order_id=order.order_id,
        customer_id=order.customer_id,
        attempt_id=order.attempt_id,
        amount=order.amount,
        currency=order.currency,
        payment_token=order.payment_token,
    )
    for _ in range(CHARGE_TRIES):
        try:
            charge, created = provider.charge(request)
        except PaymentDeclined:
            count("PaymentsDeclined")
            raise
        except ChargeOfAnotherAttempt as found:
            _refund_orphan(found.charge, order, execution_arn, provider, ledger)
            continue
        break
    else:
        raise TransientError(f"the charge of order {order.order_id} kept changing; retry")
    if created:
        count("OrdersCharged")
    else:
        logger.info("order already charged by this attempt", extra={"chargeId": charge.charge_id})
    progress.report(deliveries_table, message_id=order.attempt_id, execution_arn=execution_arn, stage=progress.CHARGED)
    return charge.as_output()


def _refund_orphan(orphan: Charge, order: ChargeInput, execution_arn: str, provider: PaymentProvider,
                   ledger: DynamoDBOrderLedger) -> None:
    entry = ledger.find(order.order_id)
    if entry is None or not entry.owned_by(order.attempt_id, execution_arn):
        # Cannot happen after ReserveInventory claimed the order for this attempt: fail loudly, charge nothing.
        raise DuplicateOrder(f"order {order.order_id} is not owned by attempt {order.attempt_id}; nothing charged")
    refunded = provider.refund(order.order_id, orphan.attempt_id)
    if refunded is not None:
        count("OrphanChargesRefunded")
        logger.warning("refunded a charge of an attempt that no longer owns the order",
                       extra={"chargeId": orphan.charge_id, "chargedBy": orphan.attempt_id})
