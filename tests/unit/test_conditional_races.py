"""Conditional-write races in the adapters, on botocore's Stubber: what DynamoDB answers, and the exact requests sent.

A conditional write failed, and the adapter reads what is there to explain it. moto cannot stage the race (the row
changing between the write and the read), nor show a read that is not strongly consistent: the Stubber can, and it
also checks every request against the DynamoDB service model and against the exact parameters expected here
(``ConsistentRead=True`` on the explaining read, a numeric ``:now``).
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber

from common.errors import DuplicateOrder, OutOfStock, TransientError
from common.inventory import RELEASED, RESERVED, ClaimLost, DynamoDBInventory, Reservation
from common.order_ledger import DynamoDBOrderLedger
from common.payments import CHARGED, REFUNDED, ChargeRequest, LedgerPaymentProvider
from common.shipments import ARRANGED, CANCELLED, DynamoDBShipments
from tests.support.stubbed_dynamodb import ATTEMPT, CCF, NONE, NOW, ORDER, charge_item, client_of, stubbed

OTHER = "msg-0"
LINES = [("SKU-A", 2), ("SKU-B", 1)]


@pytest.fixture
def stub(monkeypatch: pytest.MonkeyPatch) -> Iterator[Stubber]:
    yield from stubbed(monkeypatch)


def cancelled(stub: Stubber, *reasons: dict[str, str]) -> None:
    stub.add_client_error(
        "transact_write_items",
        service_error_code="TransactionCanceledException",
        modeled_fields={"CancellationReasons": list(reasons)},
    )


def consistent_read(stub: Stubber, table: str, key: dict[str, Any], item: dict[str, Any] | None) -> None:
    """The read that explains a failed condition: it must be strongly consistent, or it may see the old row."""
    stub.add_response(
        "get_item",
        {"Item": item} if item is not None else {},
        {"TableName": table, "Key": key, "ConsistentRead": True},
    )


# --- ReserveInventory: the reservation record's condition failed ------------------------------------------------


def reservation_item(status: str, attempt: str) -> dict[str, Any]:
    lines = [{"M": {"sku": {"S": sku}, "quantity": {"N": str(quantity)}}} for sku, quantity in LINES]
    return {"orderId": {"S": ORDER}, "attemptId": {"S": attempt}, "status": {"S": status}, "items": {"L": lines}}


def reserve(stub: Stubber) -> tuple[Reservation, bool]:
    client = client_of(stub)
    claim = DynamoDBOrderLedger(client, "Orders").claim_item(ORDER, "fp", ATTEMPT, "arn:exec", None)
    return DynamoDBInventory(client, "Inventory", "Reservations").reserve(ORDER, ATTEMPT, LINES, claim)


def test_a_reservation_this_attempt_already_holds_is_returned_as_not_created(stub: Stubber) -> None:
    cancelled(stub, NONE, NONE, CCF, NONE)
    consistent_read(stub, "Reservations", {"orderId": {"S": ORDER}}, reservation_item(RESERVED, ATTEMPT))
    reservation, created = reserve(stub)
    assert (reservation.status, reservation.attempt_id, reservation.items, created) == (
        RESERVED,
        ATTEMPT,
        tuple(LINES),
        False,
    )


@pytest.mark.parametrize(("status", "attempt"), [(RELEASED, ATTEMPT), (RESERVED, OTHER), (RELEASED, OTHER)], ids=str)
def test_a_reservation_released_or_another_attempts_is_never_returned_as_live(
    stub: Stubber, status: str, attempt: str
) -> None:
    cancelled(stub, NONE, NONE, CCF, NONE)
    consistent_read(stub, "Reservations", {"orderId": {"S": ORDER}}, reservation_item(status, attempt))
    with pytest.raises(TransientError, match="changed while reserving"):
        reserve(stub)


def test_a_reservation_gone_by_the_time_it_is_read_is_transient(stub: Stubber) -> None:
    cancelled(stub, NONE, NONE, CCF, NONE)
    consistent_read(stub, "Reservations", {"orderId": {"S": ORDER}}, None)
    with pytest.raises(TransientError):
        reserve(stub)


def test_a_failed_ledger_claim_means_another_attempt_claimed_first(stub: Stubber) -> None:
    cancelled(stub, NONE, NONE, NONE, CCF)
    with pytest.raises(ClaimLost):
        reserve(stub)


def test_a_failed_stock_condition_names_the_short_sku(stub: Stubber) -> None:
    cancelled(stub, NONE, CCF, NONE, NONE)
    with pytest.raises(OutOfStock) as raised:
        reserve(stub)
    assert (raised.value.sku, raised.value.requested) == ("SKU-B", 1)


def test_a_cancellation_for_another_reason_is_the_aws_error_itself(stub: Stubber) -> None:
    cancelled(stub, NONE, {"Code": "ValidationError"}, NONE, NONE)
    with pytest.raises(ClientError):
        reserve(stub)


# --- ReleaseInventory: the exact request, and which cancellations mean "nothing to release" ------------------------


def release_request() -> dict[str, Any]:
    mark = {
        "Update": {
            "TableName": "Reservations",
            "Key": {"orderId": {"S": ORDER}},
            "UpdateExpression": "SET #status = :released, releasedAt = :now",
            "ConditionExpression": "#status = :reserved AND attemptId = :attempt",
            "ExpressionAttributeNames": {"#status": "status"},
            "ExpressionAttributeValues": {
                ":released": {"S": RELEASED},
                ":reserved": {"S": RESERVED},
                ":attempt": {"S": ATTEMPT},
                ":now": {"N": str(NOW)},
            },
        }
    }
    returns = [
        {
            "Update": {
                "TableName": "Inventory",
                "Key": {"sku": {"S": sku}},
                "UpdateExpression": "ADD available :q",
                "ExpressionAttributeValues": {":q": {"N": str(quantity)}},
            }
        }
        for sku, quantity in LINES
    ]
    return {"TransactItems": [mark, hand_over_action(), *returns]}


def hand_over_action() -> dict[str, Any]:
    return {"ConditionCheck": {"TableName": "Orders", "Key": {"orderId": {"S": ORDER}}, "ConditionExpression": "x"}}


def release(stub: Stubber) -> bool:
    reservation = Reservation(ORDER, ATTEMPT, RESERVED, tuple(LINES))
    inventory = DynamoDBInventory(client_of(stub), "Inventory", "Reservations")
    return inventory.release(reservation, hand_over_action())  # type: ignore[arg-type]


def test_release_sends_one_transaction_marking_the_reservation_and_returning_each_line(stub: Stubber) -> None:
    stub.add_response("transact_write_items", {}, release_request())
    assert release(stub) is True


@pytest.mark.parametrize("reasons", [(CCF, NONE, NONE, NONE), (NONE, CCF, NONE, NONE)], ids=["mark", "hand-over"])
def test_release_whose_own_conditions_failed_is_nothing_to_release(
    stub: Stubber, reasons: tuple[dict[str, str], ...]
) -> None:
    cancelled(stub, *reasons)
    assert release(stub) is False


@pytest.mark.parametrize(
    "reasons",
    [(NONE, NONE, {"Code": "ValidationError"}, NONE), (NONE, NONE, NONE, CCF)],
    ids=["validation", "condition-on-a-stock-line"],
)
def test_release_cancelled_for_any_other_reason_is_an_error_not_nothing_to_release(
    stub: Stubber, reasons: tuple[dict[str, str], ...]
) -> None:
    cancelled(stub, *reasons)
    with pytest.raises(ClientError):
        release(stub)


# --- ChargePayment: the charge's condition failed ----------------------------------------------------------------


def test_a_charge_already_made_is_returned_as_not_created(stub: Stubber) -> None:
    consistent = {"TableName": "Payments", "Key": {"pk": {"S": f"ORDER#{ORDER}"}}, "ConsistentRead": True}
    stub.add_response(
        "get_item",
        {},
        {"TableName": "Payments", "Key": {"pk": {"S": "CUSTOMER#c-1"}}, "ProjectionExpression": "creditLimit"},
    )
    stub.add_client_error("put_item", service_error_code="ConditionalCheckFailedException")
    stub.add_response("get_item", {"Item": charge_item(CHARGED)}, consistent)
    provider = LedgerPaymentProvider(client_of(stub), "Payments", Decimal("5000"))
    existing, created = provider.charge(ChargeRequest(ORDER, "c-1", ATTEMPT, Decimal("25.00"), "USD", "tok_visa"))
    assert (existing.status, existing.amount, created) == (CHARGED, Decimal("25.00"), False)


@pytest.mark.parametrize("stored", [REFUNDED, None], ids=["refunded", "gone"])
def test_a_refunded_charge_is_never_returned_as_live(stub: Stubber, stored: str | None) -> None:
    with pytest.raises(TransientError, match="changed while charging"):
        # The put fails, then the read finds a refunded (or no) charge: an order whose payment was refunded must not
        # go on to ship as if it were paid.
        stub.add_response(
            "get_item",
            {},
            {"TableName": "Payments", "Key": {"pk": {"S": "CUSTOMER#c-1"}}, "ProjectionExpression": "creditLimit"},
        )
        stub.add_client_error("put_item", service_error_code="ConditionalCheckFailedException")
        consistent_read(
            stub, "Payments", {"pk": {"S": f"ORDER#{ORDER}"}}, charge_item(stored) if stored is not None else None
        )
        provider = LedgerPaymentProvider(client_of(stub), "Payments", Decimal("5000"))
        provider.charge(ChargeRequest(ORDER, "c-1", ATTEMPT, Decimal("25.00"), "USD", "tok_visa"))


# --- ArrangeShipping: the shipment's condition failed ------------------------------------------------------------


def shipment_item(status: str, attempt: str) -> dict[str, Any]:
    return {
        "orderId": {"S": ORDER},
        "shipmentId": {"S": "shp_1"},
        "attemptId": {"S": attempt},
        "carrier": {"S": "yamato"},
        "address": {"M": {"country": {"S": "JP"}}},
        "status": {"S": status},
    }


def arrange(stub: Stubber) -> Any:
    complete = DynamoDBOrderLedger(client_of(stub), "Orders").transition_item(
        ORDER, ATTEMPT, "arn:exec", to="COMPLETED", allowed_from=("ACTIVE",)
    )
    return DynamoDBShipments(client_of(stub), "Shipments").arrange(
        ORDER, ATTEMPT, "yamato", {"country": "JP"}, complete
    )


def test_a_shipment_this_attempt_arranged_is_returned_as_not_created(stub: Stubber) -> None:
    cancelled(stub, CCF, CCF)
    consistent_read(stub, "Shipments", {"orderId": {"S": ORDER}}, shipment_item(ARRANGED, ATTEMPT))
    shipment, created = arrange(stub)
    assert (shipment.status, shipment.attempt_id, created) == (ARRANGED, ATTEMPT, False)


@pytest.mark.parametrize("attempt", [ATTEMPT, OTHER])
def test_a_cancelled_shipment_is_never_returned_as_live(stub: Stubber, attempt: str) -> None:
    cancelled(stub, CCF, NONE)
    consistent_read(stub, "Shipments", {"orderId": {"S": ORDER}}, shipment_item(CANCELLED, attempt))
    with pytest.raises(TransientError, match="changed while arranging"):
        arrange(stub)


def test_another_attempts_live_shipment_with_the_ledger_refusing_is_a_duplicate_order(stub: Stubber) -> None:
    cancelled(stub, CCF, CCF)
    consistent_read(stub, "Shipments", {"orderId": {"S": ORDER}}, shipment_item(ARRANGED, OTHER))
    with pytest.raises(DuplicateOrder):
        arrange(stub)


def test_another_attempts_live_shipment_while_the_ledger_is_ours_is_transient(stub: Stubber) -> None:
    cancelled(stub, CCF, NONE)
    consistent_read(stub, "Shipments", {"orderId": {"S": ORDER}}, shipment_item(ARRANGED, OTHER))
    with pytest.raises(TransientError):
        arrange(stub)


# --- Compensations: the one conditional undo ---------------------------------------------------------------------


def test_the_undo_request_is_conditional_on_this_attempt_and_stamps_a_numeric_time(stub: Stubber) -> None:
    stub.add_response(
        "update_item",
        {"Attributes": charge_item(REFUNDED)},
        {
            "TableName": "Payments",
            "Key": {"pk": {"S": f"ORDER#{ORDER}"}},
            "UpdateExpression": "SET #status = :undone, refundedAt = :now",
            "ConditionExpression": "#status = :done AND attemptId = :attempt",
            "ExpressionAttributeNames": {"#status": "status"},
            "ExpressionAttributeValues": {
                ":undone": {"S": REFUNDED},
                ":done": {"S": CHARGED},
                ":attempt": {"S": ATTEMPT},
                ":now": {"N": str(NOW)},
            },
            "ReturnValues": "ALL_NEW",
        },
    )
    refunded = LedgerPaymentProvider(client_of(stub), "Payments", Decimal("5000")).refund(ORDER, ATTEMPT)
    assert refunded is not None and refunded.status == REFUNDED


def test_an_undo_whose_condition_failed_is_nothing_to_undo(stub: Stubber) -> None:
    stub.add_client_error("update_item", service_error_code="ConditionalCheckFailedException")
    assert DynamoDBShipments(client_of(stub), "Shipments").cancel(ORDER, ATTEMPT) is None


def test_an_undo_refused_for_another_reason_is_the_aws_error(stub: Stubber) -> None:
    stub.add_client_error("update_item", service_error_code="AccessDeniedException")
    with pytest.raises(ClientError):
        DynamoDBShipments(client_of(stub), "Shipments").cancel(ORDER, ATTEMPT)
