"""RefundPayment: refund the charge this saga attempt made, once; a no-op when there is nothing to refund."""

from __future__ import annotations

import os
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from common import aws
from common.compensation import Compensation, compensate, undo_or_fail
from common.order_ledger import DynamoDBOrderLedger
from common.payments import LedgerPaymentProvider, PaymentProvider
from common.settings import RefundPaymentSettings

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

REFUND = Compensation(
    step="RefundPayment",
    done="REFUNDED",
    nothing="NOTHING_TO_REFUND",
    metric="PaymentsRefunded",
    describe=lambda charge: {"chargeId": charge.charge_id, "amount": str(charge.amount)},
)


def handle(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Wire the ledger adapter from the environment and run the compensation."""
    with undo_or_fail(REFUND.step):
        settings = RefundPaymentSettings.from_env(os.environ)
        # Refunds apply no credit limit; the provider only needs one to charge.
        provider = LedgerPaymentProvider(aws.dynamodb(), settings.payments_table, default_credit_limit=Decimal(0))
        ledger = DynamoDBOrderLedger(aws.dynamodb(), settings.orders_table)
        return refund_payment(event, context, settings=settings, provider=provider, ledger=ledger)


def refund_payment(
    event: dict[str, Any],
    context: LambdaContext,
    *,
    settings: RefundPaymentSettings,
    provider: PaymentProvider,
    ledger: DynamoDBOrderLedger,
) -> dict[str, Any]:
    """Return REFUNDED or NOTHING_TO_REFUND; raise TransientError or CompensationFailed."""
    # Only the execution that owns the order refunds, and the provider refunds only a CHARGED charge of this attempt.
    return compensate(event, context, REFUND, idempotency=settings.idempotency, ledger=ledger,
                      undo=lambda entry: provider.refund(entry.order_id, entry.attempt_id))
