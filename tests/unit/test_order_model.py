"""The order model and parse_order: every malformed body becomes InvalidOrder, never anything else."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import get_args

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from common.errors import InvalidOrder
from common.models import parse_order
from common.order_rules import CURRENCY_MINOR_UNITS, MAX_BODY_CHARS, Currency
from tests.support import events

CORPUS = events.invalid_bodies()


def test_the_corpus_holds_at_least_fifty_malformed_bodies() -> None:
    assert len(CORPUS) >= 50


@pytest.mark.parametrize(("name", "body"), CORPUS, ids=[name for name, _ in CORPUS])
def test_every_malformed_body_raises_invalid_order_with_a_message(name: str, body: str) -> None:
    with pytest.raises(InvalidOrder) as raised:
        parse_order(body)
    message = str(raised.value)
    # A person can act on it: it says what is wrong, and it never dumps the body back.
    assert message.startswith(("invalid order:", "order body is"))
    assert len(message) < 600


def test_the_canonical_order_is_valid_and_keeps_the_exact_amount() -> None:
    order = parse_order(json.dumps(events.order()))
    assert order.orderId == "ord-1001"
    assert order.payment.amount == Decimal("38.50")
    assert order.to_json_dict()["payment"]["amount"] == "38.50"


def test_messages_point_at_the_field_and_say_what_to_do() -> None:
    body = json.dumps(events.order(items=[{"sku": "SKU-A", "quantity": 0}], couponCode="X"))
    with pytest.raises(InvalidOrder) as raised:
        parse_order(body)
    assert "items[0].quantity" in str(raised.value)
    assert "couponCode: unknown field" in str(raised.value)


def test_jpy_amounts_take_no_decimals_but_whole_yen_pass() -> None:
    payment = {"amount": "1500", "currency": "JPY", "paymentToken": "tok_visa_4242"}
    assert parse_order(json.dumps(events.order(payment=payment))).payment.amount == Decimal("1500")


@pytest.mark.parametrize("body", [None, 42, {"orderId": "x"}, ["x"]])
def test_a_body_that_is_not_a_string_is_invalid(body: object) -> None:
    with pytest.raises(InvalidOrder, match="JSON string"):
        parse_order(body)


def test_a_body_over_the_size_limit_is_rejected_before_parsing() -> None:
    with pytest.raises(InvalidOrder, match=str(MAX_BODY_CHARS)):
        parse_order(" " * (MAX_BODY_CHARS + 1))


def test_the_currency_literal_and_the_minor_units_list_the_same_codes() -> None:
    assert set(get_args(Currency)) == set(CURRENCY_MINOR_UNITS)


def test_an_unknown_currency_names_the_accepted_codes() -> None:
    payment = {"amount": "10.00", "currency": "XYZ", "paymentToken": "tok_visa_4242"}
    with pytest.raises(InvalidOrder) as raised:
        parse_order(json.dumps(events.order(payment=payment)))
    assert "payment.currency" in str(raised.value) and "'JPY'" in str(raised.value)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=200)
@given(body=st.text(max_size=200) | json_values.map(json.dumps))
def test_arbitrary_text_or_json_is_either_a_valid_order_or_invalid_order(body: str) -> None:
    try:
        order = parse_order(body)
    except InvalidOrder as error:
        # Refused with a message a person can act on, never the raw body echoed back.
        assert str(error).startswith(("invalid order:", "order body")), str(error)
        assert len(str(error)) < 600
    else:
        # Accepted only if it really is an order: it reads back as the same order.
        assert parse_order(json.dumps(order.to_json_dict())) == order


@settings(max_examples=200)
@given(field=st.sampled_from(["orderId", "customerId", "items", "payment", "shippingAddress"]), value=json_values)
def test_any_value_in_any_top_level_field_never_escapes_as_another_error(field: str, value: object) -> None:
    # Only the replaced field can be wrong, so a refusal must point at it; an acceptance must keep the value.
    try:
        order = parse_order(json.dumps(events.order(**{field: value})))
    except InvalidOrder as error:
        assert str(error).startswith(f"invalid order: {field}"), str(error)
    else:
        assert order.to_json_dict()[field] == value
