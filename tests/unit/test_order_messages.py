"""The exact text of InvalidOrder: what a producer reads in the failure record to repair a message.

test_order_model.py checks that every bad body is refused with a short message; these pin the message itself, one
kind of problem per test, since an operator acts on that text (docs/runbook.md) and a changed word is a changed
contract.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError
from pydantic_core import InitErrorDetails

from common.errors import InvalidOrder
from common.models import describe, parse_order
from tests.support import events

MISSING = "required field is missing"
ALL_FIVE_MISSING = "; ".join(
    f"{field}: {MISSING}" for field in ("orderId", "customerId", "items", "payment", "shippingAddress")
)


def refusal(body: str) -> str:
    with pytest.raises(InvalidOrder) as raised:
        parse_order(body)
    return str(raised.value)


def refusal_of(**fields: Any) -> str:
    return refusal(json.dumps(events.order(**fields)))


def test_a_body_that_is_not_json_says_so_with_the_parsers_reason() -> None:
    assert refusal("{not json") == "invalid order: body is not valid JSON (key must be a string at line 1 column 2)"


@pytest.mark.parametrize("body", ["[]", "null", '"an order"', "42"])
def test_a_json_body_that_is_not_an_object_names_the_fields_an_order_has(body: str) -> None:
    assert refusal(body) == (
        "invalid order: body must be a JSON object with orderId, customerId, items, payment, shippingAddress"
    )


def test_a_missing_field_is_named_and_said_to_be_required() -> None:
    order = events.order()
    del order["customerId"]
    assert refusal(json.dumps(order)) == f"invalid order: customerId: {MISSING}"


def test_an_unknown_field_is_named_and_said_to_be_removed() -> None:
    assert refusal_of(couponCode="X") == "invalid order: couponCode: unknown field (remove it)"


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"orderId": "-bad"}, "orderId: use letters, digits and _ . : - only, starting with a letter or digit"),
        ({"items": [{"sku": "sku-a", "quantity": 1}]}, "items[0].sku: use upper-case letters, digits, _ and - only"),
        (
            {"payment": {"amount": "1.00", "currency": "GBP", "paymentToken": "card_4242"}},
            "payment.paymentToken: must be a payment token of the form tok_...",
        ),
    ],
    ids=["identifier", "sku", "token"],
)
def test_a_pattern_mismatch_says_what_to_use_instead_of_the_regex(fields: dict[str, Any], message: str) -> None:
    assert refusal_of(**fields) == f"invalid order: {message}"


def test_a_validators_message_is_given_without_pydantics_value_error_prefix() -> None:
    items = [{"sku": "SKU-A", "quantity": 1}, {"sku": "SKU-A", "quantity": 2}]
    assert refusal_of(items=items) == (
        "invalid order: items: sku SKU-A appears on more than one line; merge the quantities"
    )


def test_five_problems_are_all_listed_and_nothing_is_said_to_be_left_out() -> None:
    assert refusal("{}") == f"invalid order: {ALL_FIVE_MISSING}"


def test_a_sixth_problem_is_counted_not_listed() -> None:
    assert refusal('{"a": 1}') == f"invalid order: {ALL_FIVE_MISSING} (and 1 more)"


def test_many_problems_are_counted_beyond_the_first_five() -> None:
    assert refusal('{"a": 1, "b": 2, "c": 3}') == f"invalid order: {ALL_FIVE_MISSING} (and 3 more)"


def validation_error(*details: InitErrorDetails) -> ValidationError:
    return ValidationError.from_exception_data("Order", list(details))


def test_a_problem_of_the_whole_body_is_placed_on_the_body() -> None:
    # A model-level rule (none today) reports an empty location: the message still says where.
    error = validation_error({"type": "value_error", "loc": (), "input": {}, "ctx": {"error": ValueError("too late")}})
    assert describe(error) == "invalid order: body: too late"


def test_a_pattern_without_a_hint_still_says_the_format_is_wrong() -> None:
    # A field added later with a new pattern but no entry in PATTERN_HINTS: never the raw regex, never a KeyError.
    error = validation_error(
        {"type": "string_pattern_mismatch", "loc": ("note",), "input": "x", "ctx": {"pattern": "^[0-9]+$"}}
    )
    assert describe(error) == "invalid order: note: has an unexpected format"


@pytest.mark.parametrize(("kind", "needed"), [("json_invalid", "error"), ("string_pattern_mismatch", "pattern")])
def test_pydantic_cannot_report_a_bad_json_or_pattern_without_the_context_describe_reads(
    kind: str, needed: str
) -> None:
    # describe() reads ctx.error and ctx.pattern without a default: this is the guarantee it relies on.
    with pytest.raises(TypeError, match=f"'{needed}' required in context"):
        validation_error({"type": kind, "loc": ("field",), "input": "x"})


@pytest.mark.parametrize(("body", "kind"), [(123, "int"), (None, "NoneType"), ({"orderId": "o-1"}, "dict")])
def test_a_body_that_is_not_text_names_the_type_it_was(body: object, kind: str) -> None:
    # A task input whose body is not a string (a hand-built event, a broken redrive) says what it got instead.
    with pytest.raises(InvalidOrder) as raised:
        parse_order(body)
    assert str(raised.value) == f"order body must be a JSON string, got {kind}"
