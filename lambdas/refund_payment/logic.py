"""RefundPayment: refund the charge this saga attempt made, once; a no-op when there is nothing to refund."""

from __future__ import annotations

import os
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from common import aws
from common.compensation import attempt_to_undo, undo_or_fail
from common.idempotency import StepKey, run_once
from common.observability import count, logger
from common.payments import LedgerPaymentProvider, PaymentProvider
from common.settings import RefundPaymentSettings

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

STEP = "RefundPayment"
REFUNDED = {"status": "REFUNDED"}
NOTHING_TO_REFUND = {"status": "NOTHING_TO_REFUND"}


def handle(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Wire the ledger adapter from the environment and run the compensation."""
    with undo_or_fail("RefundPayment"):
        settings = RefundPaymentSettings.from_env(os.environ)
        # Refunds apply no credit limit; the provider only needs one to charge.
        provider = LedgerPaymentProvider(aws.dynamodb(), settings.payments_table, default_credit_limit=Decimal(0))
        return refund_payment(event, context, settings=settings, provider=provider)


def refund_payment(
    event: dict[str, Any], context: LambdaContext, *, settings: RefundPaymentSettings, provider: PaymentProvider
) -> dict[str, Any]:
    """Return REFUNDED or NOTHING_TO_REFUND; raise TransientError or CompensationFailed."""
    with undo_or_fail("RefundPayment"):
        order_id, attempt_id = attempt_to_undo(event)
        if order_id is None:
            logger.info("body names no order; nothing can have been charged")
            return dict(NOTHING_TO_REFUND)
        key = StepKey(order_id, STEP, attempt_id)
        return run_once(
            key, lambda: _refund(order_id, attempt_id, provider), settings=settings.idempotency, context=context
        )


def _refund(order_id: str, attempt_id: str, provider: PaymentProvider) -> dict[str, Any]:
    charge = provider.refund(order_id, attempt_id)
    if charge is None:
        logger.info("no charge of this attempt to refund")
        return dict(NOTHING_TO_REFUND)
    count("PaymentsRefunded")
    logger.info("charge refunded", extra={"chargeId": charge.charge_id, "amount": str(charge.amount)})
    return dict(REFUNDED)
