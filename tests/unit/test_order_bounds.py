"""Every bound of the order model, from both sides: the value AT the bound is accepted, the one just past it is not.

The corpus (tests/events/invalid) only proves rejection past a bound; a bound tightened by one (64 -> 63, min 1 -> 2,
`gt=0` -> `gt=1`, `>` -> `>=` on the body size) would still pass it and refuse real orders. These tests would not.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest

from common.errors import InvalidOrder
from common.models import Order, parse_order
from common.order_rules import MAX_AMOUNT, MAX_BODY_CHARS, MAX_LINE_ITEMS, MAX_QUANTITY
from tests.support import events


def lines(count: int) -> list[dict[str, Any]]:
    return [{"sku": f"SKU-{index}", "quantity": 1} for index in range(count)]


def address(**fields: str) -> dict[str, str]:
    return {**events.order()["shippingAddress"], **fields}


def payment(**fields: str) -> dict[str, str]:
    return {**events.order()["payment"], **fields}


# (what, top-level overrides at the bound, overrides just past it, the field the refusal must name)
BOUNDS: list[tuple[str, dict[str, Any], dict[str, Any], str]] = [
    ("one line item", {"items": lines(1)}, {"items": []}, "items"),
    ("the most line items", {"items": lines(MAX_LINE_ITEMS)}, {"items": lines(MAX_LINE_ITEMS + 1)}, "items"),
    (
        "quantity 1",
        {"items": [{"sku": "SKU-A", "quantity": 1}]},
        {"items": [{"sku": "SKU-A", "quantity": 0}]},
        "items[0].quantity",
    ),
    (
        "the largest quantity",
        {"items": [{"sku": "SKU-A", "quantity": MAX_QUANTITY}]},
        {"items": [{"sku": "SKU-A", "quantity": MAX_QUANTITY + 1}]},
        "items[0].quantity",
    ),
    ("a one-character orderId", {"orderId": "o"}, {"orderId": ""}, "orderId"),
    ("a 64-character orderId", {"orderId": "o" * 64}, {"orderId": "o" * 65}, "orderId"),
    ("a 64-character customerId", {"customerId": "c" * 64}, {"customerId": "c" * 65}, "customerId"),
    ("a one-character customerId", {"customerId": "c"}, {"customerId": ""}, "customerId"),
    (
        "a 64-character sku",
        {"items": [{"sku": "S" * 64, "quantity": 1}]},
        {"items": [{"sku": "S" * 65, "quantity": 1}]},
        "items[0].sku",
    ),
    (
        "a one-character sku",
        {"items": [{"sku": "S", "quantity": 1}]},
        {"items": [{"sku": "", "quantity": 1}]},
        "items[0].sku",
    ),
    (
        "a 200-character address line",
        {"shippingAddress": address(line1="l" * 200)},
        {"shippingAddress": address(line1="l" * 201)},
        "shippingAddress.line1",
    ),
    (
        "a one-character address line",
        {"shippingAddress": address(line1="l")},
        {"shippingAddress": address(line1="")},
        "shippingAddress.line1",
    ),
    (
        "a 100-character name",
        {"shippingAddress": address(name="n" * 100)},
        {"shippingAddress": address(name="n" * 101)},
        "shippingAddress.name",
    ),
    (
        "a 100-character city",
        {"shippingAddress": address(city="c" * 100)},
        {"shippingAddress": address(city="c" * 101)},
        "shippingAddress.city",
    ),
    (
        "a one-character city",
        {"shippingAddress": address(city="c")},
        {"shippingAddress": address(city="")},
        "shippingAddress.city",
    ),
    (
        "a two-character postal code",
        {"shippingAddress": address(postalCode="12")},
        {"shippingAddress": address(postalCode="1")},
        "shippingAddress.postalCode",
    ),
    (
        "a 16-character postal code",
        {"shippingAddress": address(postalCode="1" * 16)},
        {"shippingAddress": address(postalCode="1" * 17)},
        "shippingAddress.postalCode",
    ),
    (
        "a two-letter country",
        {"shippingAddress": address(country="JP")},
        {"shippingAddress": address(country="JPN")},
        "shippingAddress.country",
    ),
    (
        "the shortest payment token",
        {"payment": payment(paymentToken="tok_a")},
        {"payment": payment(paymentToken="tok_")},
        "payment.paymentToken",
    ),
    (
        "a 128-character payment token",
        {"payment": payment(paymentToken="tok_" + "a" * 124)},
        {"payment": payment(paymentToken="tok_" + "a" * 125)},
        "payment.paymentToken",
    ),
    ("the smallest amount", {"payment": payment(amount="0.01")}, {"payment": payment(amount="0")}, "payment.amount"),
    ("an amount of 1", {"payment": payment(amount="1")}, {"payment": payment(amount="-1")}, "payment.amount"),
    (
        "the largest amount",
        {"payment": payment(amount=str(MAX_AMOUNT))},
        {"payment": payment(amount=str(MAX_AMOUNT + Decimal("0.01")))},
        "payment.amount",
    ),
    (
        "two decimals in USD",
        {"payment": payment(amount="10.55", currency="USD")},
        {"payment": payment(amount="10.555", currency="USD")},
        "payment",
    ),
    (
        "whole yen",
        {"payment": payment(amount="1500", currency="JPY")},
        {"payment": payment(amount="1500.0", currency="JPY")},
        "payment",
    ),
]
IDS = [what for what, *_ in BOUNDS]


@pytest.mark.parametrize(("what", "at_bound", "past_bound", "field"), BOUNDS, ids=IDS)
def test_an_order_at_the_bound_is_accepted(
    what: str, at_bound: dict[str, Any], past_bound: dict[str, Any], field: str
) -> None:
    body = events.order(**at_bound)
    order = parse_order(json.dumps(body))
    # Accepted as sent: nothing is trimmed, rounded or dropped on the way.
    assert order.to_json_dict() == {
        **body,
        "payment": {**body["payment"], "amount": str(Decimal(body["payment"]["amount"]))},
    }


@pytest.mark.parametrize(("what", "at_bound", "past_bound", "field"), BOUNDS, ids=IDS)
def test_an_order_just_past_the_bound_is_invalid_and_names_the_field(
    what: str, at_bound: dict[str, Any], past_bound: dict[str, Any], field: str
) -> None:
    with pytest.raises(InvalidOrder) as raised:
        parse_order(json.dumps(events.order(**past_bound)))
    assert f"{field}:" in str(raised.value)


def test_fewer_decimals_than_the_currency_allows_are_accepted() -> None:
    # "10.5" USD is a valid amount: the rule is "at most the minor units", not "exactly".
    order = parse_order(json.dumps(events.order(payment=payment(amount="10.5", currency="USD"))))
    assert order.payment.amount == Decimal("10.5")


def padded_order(size: int) -> str:
    """The canonical order as a body of exactly ``size`` characters (JSON allows trailing whitespace)."""
    body = json.dumps(events.order())
    return body + " " * (size - len(body))


def test_a_valid_body_of_exactly_the_size_limit_is_accepted() -> None:
    body = padded_order(MAX_BODY_CHARS)
    assert len(body) == MAX_BODY_CHARS
    assert isinstance(parse_order(body), Order)


def test_a_valid_body_one_character_over_the_limit_is_refused_for_its_size() -> None:
    with pytest.raises(InvalidOrder, match=f"is {MAX_BODY_CHARS + 1} characters; the limit is {MAX_BODY_CHARS}"):
        parse_order(padded_order(MAX_BODY_CHARS + 1))


def test_bytes_bodies_are_parsed_like_text() -> None:
    assert parse_order(json.dumps(events.order()).encode()).orderId == "ord-1001"
