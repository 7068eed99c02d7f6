"""ArrangeShipping against moto: one shipment per order, the served-countries rule, idempotency."""

from __future__ import annotations

from typing import Any

import pytest

from arrange_shipping.handler import handler
from common.errors import ShippingUnavailable, TransientError
from tests.handlers.account import Account
from tests.handlers.saga import emitted_metrics, faults
from tests.handlers.steps import charged
from tests.support import events


def order_to(country: str) -> dict[str, Any]:
    address = {**events.order()["shippingAddress"], "country": country}
    return events.order(shippingAddress=address)


def test_happy_path_records_the_shipment_with_the_carrier_for_the_country(
    account: Account, lambda_context: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    record = events.sqs_record(events.order())
    context = charged(account, lambda_context, record)

    result = handler(context, lambda_context)

    shipment = account.shipment("ord-1001")
    assert shipment is not None
    assert (shipment["status"], shipment["carrier"], shipment["attemptId"]) == (
        "ARRANGED",
        "RoyalMail",
        record["messageId"],
    )
    assert shipment["address"]["postalCode"] == "SW1Y 4JH"
    assert result["shipment"]["shipmentId"] == shipment["shipmentId"]
    assert result["payment"] == context["payment"]
    assert emitted_metrics(capsys.readouterr().out)["OrdersShipped"] == 1


@pytest.mark.parametrize("country", ["BR", "ZA", "IN"])
def test_destination_outside_served_countries_is_unavailable(
    account: Account, lambda_context: Any, country: str, capsys: pytest.CaptureFixture[str]
) -> None:
    context = charged(account, lambda_context, events.sqs_record(order_to(country)))

    with pytest.raises(ShippingUnavailable, match=country):
        handler(context, lambda_context)

    assert account.shipment("ord-1001") is None
    assert emitted_metrics(capsys.readouterr().out)["ShippingUnavailable"] == 1


def test_served_countries_come_from_the_environment(
    account: Account, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given an operator narrowed the served countries to Japan
    monkeypatch.setenv("SERVED_COUNTRIES", "JP")
    context = charged(account, lambda_context, events.sqs_record(events.order()))  # ships to GB
    with pytest.raises(ShippingUnavailable):
        handler(context, lambda_context)


def test_arranging_twice_ships_once(account: Account, lambda_context: Any) -> None:
    context = charged(account, lambda_context, events.sqs_record(events.order()))
    first = handler(context, lambda_context)
    second = handler(context, lambda_context)
    assert second == first
    assert account.count(account.shipments_table) == 1


@pytest.mark.parametrize(
    "code", ["ThrottlingException", "ProvisionedThroughputExceededException", "InternalServerError"]
)
def test_transient_errors_are_transient_and_the_retry_ships_once(
    account: Account, lambda_context: Any, code: str
) -> None:
    context = charged(account, lambda_context, events.sqs_record(events.order()))
    lost = faults("transact_write_items", code, table=account.shipments_table, after_write=True)
    with lost, pytest.raises(TransientError):
        handler(context, lambda_context)
    handler(context, lambda_context)
    assert account.count(account.shipments_table) == 1
