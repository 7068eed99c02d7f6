"""The order context ReserveInventory returns, read by ChargePayment and ArrangeShipping with light typed checks.

ReserveInventory validated the whole order with the pydantic model before it reserved anything; the later steps
get that validated order back from the state machine. Validating it all again would only cost them pydantic's
import at every cold start, so each step checks just the fields it uses, by the same rules, and raises
InvalidOrder for anything wrong: a task wired to the wrong input fails instead of charging or shipping garbage.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any, NamedTuple

from common.errors import InvalidOrder
from common.order_rules import CURRENCY_MINOR_UNITS, amount_problem

ADDRESS_FIELDS = ("name", "line1", "city", "postalCode", "country")
_EXPECTED = "expected the output of ReserveInventory"


class ChargeInput(NamedTuple):
    """What ChargePayment uses of the order."""

    order_id: str
    customer_id: str
    attempt_id: str
    amount: Decimal
    currency: str
    payment_token: str


class ShippingInput(NamedTuple):
    """What ArrangeShipping uses of the order."""

    order_id: str
    attempt_id: str
    execution_arn: str
    country: str
    address: dict[str, str]


def charge_input(context: object) -> ChargeInput:
    """The payment fields of the order context; InvalidOrder when one is missing or wrong."""
    order, attempt_id = _order_and_attempt(context)
    payment = _object(order, "payment")
    currency = _text(payment, "currency", "order.payment")
    if currency not in CURRENCY_MINOR_UNITS:
        raise InvalidOrder(f"task input: order.payment.currency {currency!r} is not accepted; {_EXPECTED}")
    amount = _amount(payment, currency)
    return ChargeInput(
        order_id=_text(order, "orderId", "order"),
        customer_id=_text(order, "customerId", "order"),
        attempt_id=attempt_id,
        amount=amount,
        currency=currency,
        payment_token=_text(payment, "paymentToken", "order.payment"),
    )


def shipping_input(context: object) -> ShippingInput:
    """The shipping fields of the order context; InvalidOrder when one is missing or wrong."""
    order, attempt_id = _order_and_attempt(context)
    source = _object(order, "shippingAddress")
    address = {field: _text(source, field, "order.shippingAddress") for field in ADDRESS_FIELDS}
    country = address["country"]
    if len(country) != 2 or not (country.isascii() and country.isalpha() and country.isupper()):
        raise InvalidOrder(f"task input: order.shippingAddress.country {country!r} is not an ISO 3166 code")
    execution_arn = context.get("executionArn") if isinstance(context, Mapping) else None
    if not isinstance(execution_arn, str) or not execution_arn:
        raise InvalidOrder(f"task input has no executionArn (the attempt's execution); {_EXPECTED}")
    return ShippingInput(
        order_id=_text(order, "orderId", "order"),
        attempt_id=attempt_id,
        execution_arn=execution_arn,
        country=country,
        address=address,
    )


def _order_and_attempt(context: object) -> tuple[Mapping[str, Any], str]:
    if not isinstance(context, Mapping) or not isinstance(context.get("order"), Mapping):
        raise InvalidOrder(f"task input has no 'order' object; {_EXPECTED}")
    attempt_id = context.get("messageId")
    if not isinstance(attempt_id, str) or not attempt_id:
        raise InvalidOrder(f"task input has no messageId (the attempt id); {_EXPECTED}")
    order: Mapping[str, Any] = context["order"]
    return order, attempt_id


def _object(parent: Mapping[str, Any], field: str) -> Mapping[str, Any]:
    value = parent.get(field)
    if not isinstance(value, Mapping):
        raise InvalidOrder(f"task input: order.{field} must be an object; {_EXPECTED}")
    return value


def _text(parent: Mapping[str, Any], field: str, where: str) -> str:
    value = parent.get(field)
    if not isinstance(value, str) or not value.strip():
        raise InvalidOrder(f"task input: {where}.{field} must be a non-empty string; {_EXPECTED}")
    return value


def _amount(payment: Mapping[str, Any], currency: str) -> Decimal:
    # ReserveInventory's output carries the amount as a string: Lambda cannot marshal Decimal, a float loses cents.
    raw = _text(payment, "amount", "order.payment")
    try:
        amount = Decimal(raw)
    except InvalidOperation:
        raise InvalidOrder(f"task input: order.payment.amount {raw!r} is not a decimal number") from None
    problem = amount_problem(amount, currency)
    if problem is not None:
        raise InvalidOrder(f"task input: order.payment.{problem}")
    return amount
