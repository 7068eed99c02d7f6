"""Payment provider port and the ledger adapter: charges and refunds recorded in the payments table.

This is the seam where a real provider (Stripe, Adyen, ...) would plug in: the saga only sees ``PaymentProvider``.
The ledger adapter applies deterministic decline rules so every outcome can be reproduced:

1. a payment token starting with ``tok_decline`` is declined (the issuer refused the card);
2. an amount above the customer's credit limit is declined. The limit is the ``creditLimit`` of the
   ``CUSTOMER#<customerId>`` item, or DEFAULT_CREDIT_LIMIT when the customer has none. It is compared in the
   order's currency units: the reference does no FX conversion.
"""

from __future__ import annotations

import time
import uuid
from decimal import Decimal
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from botocore.exceptions import ClientError

from common.errors import PaymentDeclined, TransientError, aws_errors_as_transient, error_code
from common.status_change import undo_once

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient

CHARGED = "CHARGED"
REFUNDED = "REFUNDED"
DECLINED_TOKEN_PREFIX = "tok_decline"
# Charge ids derive from order and attempt, so a provider retry of the same attempt carries the same id.
_CHARGE_NAMESPACE = uuid.UUID("3f6c2a4e-8d1b-4c5e-9a7f-2b0d1e6c9a11")


class ChargeRequest(NamedTuple):
    order_id: str
    customer_id: str
    attempt_id: str
    amount: Decimal
    currency: str
    payment_token: str


class Charge(NamedTuple):
    order_id: str
    charge_id: str
    attempt_id: str
    amount: Decimal
    currency: str
    status: str

    def as_output(self) -> dict[str, Any]:
        # Amount as a string: Lambda cannot marshal Decimal, and a float would lose cents.
        return {
            "chargeId": self.charge_id,
            "amount": str(self.amount),
            "currency": self.currency,
            "status": self.status,
            "attemptId": self.attempt_id,
        }


class ChargeOfAnotherAttempt(Exception):  # noqa: N818 - a signal between adapter and logic, never raised out of a handler
    """The order's live charge was made by another attempt: never this attempt's to return as its own."""

    def __init__(self, charge: Charge) -> None:
        super().__init__(f"order {charge.order_id} is charged by attempt {charge.attempt_id}")
        self.charge = charge


class PaymentProvider(Protocol):
    def charge(self, request: ChargeRequest) -> tuple[Charge, bool]:
        """Charge once per order and attempt; returns the charge and whether this call created it. Raises
        PaymentDeclined, or ChargeOfAnotherAttempt when the order's live charge belongs to another attempt."""
        ...

    def refund(self, order_id: str, attempt_id: str) -> Charge | None:
        """Refund the charge this attempt made, once; None when there is nothing to refund."""
        ...


class LedgerPaymentProvider:
    """Charges as rows of the payments table: ``ORDER#<orderId>`` holds the order's charge."""

    def __init__(self, client: DynamoDBClient, table: str, default_credit_limit: Decimal) -> None:
        self._client = client
        self._table = table
        self._default_limit = default_credit_limit

    def charge(self, request: ChargeRequest) -> tuple[Charge, bool]:
        if request.payment_token.startswith(DECLINED_TOKEN_PREFIX):
            raise PaymentDeclined(f"order {request.order_id}: the card issuer declined the payment token")
        limit = self.credit_limit(request.customer_id)
        if request.amount > limit:
            raise PaymentDeclined(
                f"order {request.order_id}: amount {request.amount} {request.currency} exceeds the credit limit"
                f" {limit} of customer {request.customer_id}"
            )
        charge = Charge(
            order_id=request.order_id,
            charge_id=f"ch_{uuid.uuid5(_CHARGE_NAMESPACE, f'{request.order_id}/{request.attempt_id}').hex}",
            attempt_id=request.attempt_id,
            amount=request.amount,
            currency=request.currency,
            status=CHARGED,
        )
        try:
            with aws_errors_as_transient("recording the charge"):
                self._client.put_item(
                    TableName=self._table,
                    Item={
                        "pk": {"S": _order_key(request.order_id)},
                        "chargeId": {"S": charge.charge_id},
                        "attemptId": {"S": charge.attempt_id},
                        "customerId": {"S": request.customer_id},
                        "amount": {"N": str(charge.amount)},
                        "currency": {"S": charge.currency},
                        "status": {"S": CHARGED},
                        "chargedAt": {"N": str(int(time.time()))},
                    },
                    # One live charge per order: a new attempt may charge again only after a refund.
                    ConditionExpression="attribute_not_exists(pk) OR #status = :refunded",
                    ExpressionAttributeNames={"#status": "status"},
                    ExpressionAttributeValues={":refunded": {"S": REFUNDED}},
                )
        except ClientError as error:
            if error_code(error) != "ConditionalCheckFailedException":
                raise
            existing = self.find_charge(request.order_id)
            if existing is None or existing.status != CHARGED:
                raise TransientError(f"charge of order {request.order_id} changed while charging; retry") from error
            if existing.attempt_id != request.attempt_id:
                raise ChargeOfAnotherAttempt(existing) from error
            return existing, False  # a retry of this attempt after its write committed
        return charge, True

    def credit_limit(self, customer_id: str) -> Decimal:
        with aws_errors_as_transient("reading the credit limit"):
            response = self._client.get_item(
                TableName=self._table,
                Key={"pk": {"S": f"CUSTOMER#{customer_id}"}},
                ProjectionExpression="creditLimit",
            )
        limit = response.get("Item", {}).get("creditLimit", {}).get("N")
        return Decimal(limit) if limit is not None else self._default_limit

    def find_charge(self, order_id: str) -> Charge | None:
        with aws_errors_as_transient("reading the charge"):
            response = self._client.get_item(
                TableName=self._table, Key={"pk": {"S": _order_key(order_id)}}, ConsistentRead=True
            )
        item = response.get("Item")
        return _charge_from_item(order_id, item) if item is not None else None

    def refund(self, order_id: str, attempt_id: str) -> Charge | None:
        # CHARGED -> REFUNDED once, and only by the attempt that charged.
        item = undo_once(self._client, table=self._table, key={"pk": {"S": _order_key(order_id)}}, done=CHARGED,
                         undone=REFUNDED, attempt_id=attempt_id, stamp="refundedAt", action="recording the refund")
        return _charge_from_item(order_id, item) if item is not None else None


def _order_key(order_id: str) -> str:
    return f"ORDER#{order_id}"


def _charge_from_item(order_id: str, item: Any) -> Charge:
    return Charge(
        order_id=order_id,
        charge_id=item["chargeId"]["S"],
        attempt_id=item["attemptId"]["S"],
        amount=Decimal(item["amount"]["N"]),
        currency=item["currency"]["S"],
        status=item["status"]["S"],
    )
