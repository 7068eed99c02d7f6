"""The light checks ChargePayment and ArrangeShipping apply to ReserveInventory's order context (no pydantic)."""

from __future__ import annotations

import json
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from common.errors import InvalidOrder
from common.models import parse_order
from common.order_context import charge_input, shipping_input
from tests.support import events


def context(**order_overrides: Any) -> dict[str, Any]:
    """The order context ReserveInventory returns for the canonical order, through a JSON round trip."""
    order = parse_order(json.dumps(events.order())).to_json_dict()
    order.update(order_overrides)
    return json.loads(json.dumps({"orderId": order["orderId"], "messageId": "m-1", "executionArn": "arn:e-1",
                                  "order": order}))


def test_charge_input_reads_the_payment_fields_of_the_validated_order() -> None:
    assert charge_input(context()) == (
        "ord-1001",
        "cust-42",
        "m-1",
        Decimal("38.50"),
        "USD",
        "tok_visa_4242",
    )


def test_shipping_input_reads_the_address_of_the_validated_order() -> None:
    shipping = shipping_input(context())
    assert (shipping.order_id, shipping.attempt_id, shipping.country) == ("ord-1001", "m-1", "GB")
    assert shipping.execution_arn == "arn:e-1"
    assert shipping.address == events.order()["shippingAddress"]


def test_shipping_input_without_the_execution_is_refused() -> None:
    # Without it ArrangeShipping could not check that its attempt owns the order in the ledger.
    task_input = {key: value for key, value in context().items() if key != "executionArn"}
    with pytest.raises(InvalidOrder, match="executionArn"):
        shipping_input(task_input)


@pytest.mark.parametrize("read", [charge_input, shipping_input])
@pytest.mark.parametrize(
    ("task_input", "named"),
    [
        (None, "ReserveInventory"),
        ([], "ReserveInventory"),
        ({"orderId": "ord-1001"}, "ReserveInventory"),
        ({"messageId": "m-1", "order": "{}"}, "ReserveInventory"),
        ({"order": events.order()}, "messageId"),
        ({"messageId": "", "order": events.order()}, "messageId"),
    ],
)
def test_an_input_that_is_not_an_order_context_is_invalid(read: Any, task_input: object, named: str) -> None:
    with pytest.raises(InvalidOrder, match=named):
        read(task_input)


@pytest.mark.parametrize(
    ("override", "named"),
    [
        ({"orderId": 7}, "order.orderId"),
        ({"customerId": ""}, "order.customerId"),
        ({"payment": None}, "order.payment"),
        ({"payment": {"amount": "1.00", "currency": "XYZ", "paymentToken": "tok_a"}}, "currency"),
        ({"payment": {"amount": 38.5, "currency": "USD", "paymentToken": "tok_a"}}, "amount"),
        ({"payment": {"amount": "lots", "currency": "USD", "paymentToken": "tok_a"}}, "amount"),
        ({"payment": {"amount": "NaN", "currency": "USD", "paymentToken": "tok_a"}}, "amount"),
        ({"payment": {"amount": "-1", "currency": "USD", "paymentToken": "tok_a"}}, "amount"),
        ({"payment": {"amount": "1.5", "currency": "JPY", "paymentToken": "tok_a"}}, "decimals"),
        ({"payment": {"amount": "1.00", "currency": "USD"}}, "paymentToken"),
    ],
)
def test_a_wrong_payment_field_is_invalid_and_named(override: dict[str, Any], named: str) -> None:
    with pytest.raises(InvalidOrder, match=named):
        charge_input(context(**override))


@pytest.mark.parametrize(
    ("address", "named"),
    [
        (None, "order.shippingAddress"),
        ({"name": "A", "line1": "1 Road", "city": "X", "postalCode": "1"}, "country"),
        ({"name": "A", "line1": "1 Road", "city": "X", "postalCode": "1", "country": "gb"}, "country"),
        ({"name": "A", "line1": "1 Road", "city": "X", "postalCode": "1", "country": "GBR"}, "country"),
        ({"name": " ", "line1": "1 Road", "city": "X", "postalCode": "1", "country": "GB"}, "name"),
    ],
)
def test_a_wrong_address_is_invalid_and_named(address: object, named: str) -> None:
    with pytest.raises(InvalidOrder, match=named):
        shipping_input(context(shippingAddress=address))


def test_charge_and_shipping_do_not_import_pydantic() -> None:
    # The point of the light checks: the cold start of these two functions carries no pydantic.
    lambdas = Path(__file__).resolve().parents[2] / "lambdas" / "orders"
    code = "import sys, charge_payment.handler, arrange_shipping.handler; print('pydantic' in sys.modules)"
    env = {"PYTHONPATH": f"{lambdas}:{lambdas.parent}", "POWERTOOLS_SERVICE_NAME": "order-saga",
           "AWS_DEFAULT_REGION": "us-east-1"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
