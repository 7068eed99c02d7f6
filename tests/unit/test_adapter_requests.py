"""The DynamoDB adapters on botocore's Stubber: what each read returns, what each write sends, and what a throttled
call says. moto accepts any attribute name and never throttles; these pin what the saga's rows and errors hold."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any

import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber

from common.errors import DuplicateOrder, TransientError
from common.inventory import RESERVED, ClaimLost, DynamoDBInventory, Reservation
from common.order_ledger import ACTIVE, COMPENSATED, COMPLETED, DynamoDBOrderLedger, OrderEntry, fingerprint
from common.payments import CHARGED, REFUNDED, Charge, ChargeRequest, LedgerPaymentProvider
from common.shipments import ARRANGED, CANCELLED, DynamoDBShipments, Shipment
from fire_and_forget.runtime.deliveries import DynamoDBDeliveryClaims
from tests.support import events
from tests.support.stubbed_dynamodb import ATTEMPT, CCF, NONE, NOW, ORDER, charge_item, client_of, stubbed

ARN = "arn:exec"
ADDRESS = {"country": "JP", "city": "Tokyo"}
REQUEST = ChargeRequest(ORDER, "c-1", ATTEMPT, Decimal("25.00"), "USD", "tok_visa")
ENTRY = OrderEntry(ORDER, "fp", ATTEMPT, ARN, ACTIVE)


@pytest.fixture
def stub(monkeypatch: pytest.MonkeyPatch) -> Iterator[Stubber]:
    yield from stubbed(monkeypatch)


def no_credit_limit(stub: Stubber) -> None:
    stub.add_response(
        "get_item",
        {},
        {"TableName": "Payments", "Key": {"pk": {"S": "CUSTOMER#c-1"}}, "ProjectionExpression": "creditLimit"},
    )


def shipment_item(status: str) -> dict[str, Any]:
    return {
        "orderId": {"S": ORDER},
        "shipmentId": {"S": "shp_1"},
        "attemptId": {"S": ATTEMPT},
        "carrier": {"S": "yamato"},
        "address": {"M": {field: {"S": value} for field, value in ADDRESS.items()}},
        "status": {"S": status},
    }


def complete_action(client: Any) -> Any:
    ledger = DynamoDBOrderLedger(client, "Orders")
    return ledger.transition_item(ORDER, ATTEMPT, ARN, to=COMPLETED, allowed_from=(ACTIVE,))


# --- A throttled call names what the step was doing (the message an operator reads in the execution history) -----

Call = Callable[[Any], object]
CALLS: list[tuple[str, str, Call, Callable[[Stubber], None]]] = [
    (
        "get_item",
        "reading the reservation",
        lambda c: DynamoDBInventory(c, "Inventory", "Reservations").find_reservation(ORDER),
        lambda s: None,
    ),
    (
        "transact_write_items",
        "releasing stock",
        lambda c: DynamoDBInventory(c, "Inventory", "Reservations").release(
            Reservation(ORDER, ATTEMPT, RESERVED, (("SKU-A", 1),)), complete_action(c)
        ),
        lambda s: None,
    ),
    (
        "get_item",
        "reading the credit limit",
        lambda c: LedgerPaymentProvider(c, "Payments", Decimal(100)).charge(REQUEST),
        lambda s: None,
    ),
    (
        "put_item",
        "recording the charge",
        lambda c: LedgerPaymentProvider(c, "Payments", Decimal(100)).charge(REQUEST),
        no_credit_limit,
    ),
    (
        "get_item",
        "reading the charge",
        lambda c: LedgerPaymentProvider(c, "Payments", Decimal(100)).find_charge(ORDER),
        lambda s: None,
    ),
    (
        "update_item",
        "recording the refund",
        lambda c: LedgerPaymentProvider(c, "Payments", Decimal(100)).refund(ORDER, ATTEMPT),
        lambda s: None,
    ),
    (
        "transact_write_items",
        "recording the shipment",
        lambda c: DynamoDBShipments(c, "Shipments").arrange(ORDER, ATTEMPT, "yamato", ADDRESS, complete_action(c)),
        lambda s: None,
    ),
    (
        "update_item",
        "cancelling the shipment",
        lambda c: DynamoDBShipments(c, "Shipments").cancel(ORDER, ATTEMPT),
        lambda s: None,
    ),
    ("get_item", "reading the shipment", lambda c: DynamoDBShipments(c, "Shipments").find(ORDER), lambda s: None),
    ("get_item", "reading the order ledger", lambda c: DynamoDBOrderLedger(c, "Orders").find(ORDER), lambda s: None),
    (
        "update_item",
        "handing the order over",
        lambda c: DynamoDBOrderLedger(c, "Orders").hand_over(ENTRY),
        lambda s: None,
    ),
    (
        "update_item",
        "claiming the SQS message",
        lambda c: DynamoDBDeliveryClaims(c, "Deliveries", 60).claim(ATTEMPT, ARN),
        lambda s: None,
    ),
]


@pytest.mark.parametrize(("operation", "action", "call", "before"), CALLS, ids=[action for _, action, _, _ in CALLS])
def test_a_throttled_call_is_transient_and_says_what_failed(
    stub: Stubber, operation: str, action: str, call: Call, before: Callable[[Stubber], None]
) -> None:
    before(stub)
    stub.add_client_error(operation, service_error_code="ThrottlingException", http_status_code=400)
    with pytest.raises(TransientError) as raised:
        call(client_of(stub))
    assert str(raised.value) == f"{action} failed transiently (ThrottlingException); safe to retry"


# --- Reads return the whole record, named by the order asked for ----------------------------------------------------


def test_a_charge_read_back_is_the_stored_charge_of_that_order(stub: Stubber) -> None:
    stub.add_response("get_item", {"Item": charge_item(CHARGED)})
    found = LedgerPaymentProvider(client_of(stub), "Payments", Decimal(100)).find_charge(ORDER)
    assert found == Charge(ORDER, "ch_1", ATTEMPT, Decimal("25.00"), "USD", CHARGED)


def test_a_refund_returns_the_refunded_charge_of_that_order(stub: Stubber) -> None:
    stub.add_response("update_item", {"Attributes": charge_item(REFUNDED)})
    refunded = LedgerPaymentProvider(client_of(stub), "Payments", Decimal(100)).refund(ORDER, ATTEMPT)
    assert refunded == Charge(ORDER, "ch_1", ATTEMPT, Decimal("25.00"), "USD", REFUNDED)


def test_a_shipment_read_back_is_the_stored_shipment_of_that_order(stub: Stubber) -> None:
    stub.add_response("get_item", {"Item": shipment_item(ARRANGED)})
    found = DynamoDBShipments(client_of(stub), "Shipments").find(ORDER)
    assert found == Shipment(ORDER, "shp_1", ATTEMPT, "yamato", ADDRESS, ARRANGED)


def test_no_shipment_reads_back_as_none(stub: Stubber) -> None:
    stub.add_response("get_item", {})
    assert DynamoDBShipments(client_of(stub), "Shipments").find(ORDER) is None


def test_a_cancel_returns_the_cancelled_shipment_of_that_order(stub: Stubber) -> None:
    stub.add_response("update_item", {"Attributes": shipment_item(CANCELLED)})
    cancelled = DynamoDBShipments(client_of(stub), "Shipments").cancel(ORDER, ATTEMPT)
    assert cancelled == Shipment(ORDER, "shp_1", ATTEMPT, "yamato", ADDRESS, CANCELLED)


def test_a_shipments_task_output_names_its_id_carrier_status_and_attempt() -> None:
    shipment = Shipment(ORDER, "shp_1", ATTEMPT, "yamato", ADDRESS, ARRANGED)
    assert shipment.as_output() == {
        "shipmentId": "shp_1",
        "carrier": "yamato",
        "status": ARRANGED,
        "attemptId": ATTEMPT,
    }


def test_a_reservations_task_output_lists_each_line_by_sku_and_quantity() -> None:
    reservation = Reservation("ord-1", "msg-1", RESERVED, (("SKU-A", 2), ("SKU-B", 1)))
    assert reservation.as_output() == {
        "status": RESERVED,
        "attemptId": "msg-1",
        "items": [{"sku": "SKU-A", "quantity": 2}, {"sku": "SKU-B", "quantity": 1}],
    }


# --- Writes: the exact rows -------------------------------------------------------------------------------------


def test_a_charge_row_records_the_customer_amount_and_time(stub: Stubber) -> None:
    no_credit_limit(stub)
    provider = LedgerPaymentProvider(client_of(stub), "Payments", Decimal(100))
    stub.add_response(
        "put_item",
        {},
        {
            "TableName": "Payments",
            "Item": {
                "pk": {"S": f"ORDER#{ORDER}"},
                "chargeId": {"S": "ch_a63b16277f9e5b739c3f5773e2927165"},
                "attemptId": {"S": ATTEMPT},
                "customerId": {"S": "c-1"},
                "amount": {"N": "25.00"},
                "currency": {"S": "USD"},
                "status": {"S": CHARGED},
                "chargedAt": {"N": str(NOW)},
            },
            "ConditionExpression": "attribute_not_exists(pk) OR #status = :refunded",
            "ExpressionAttributeNames": {"#status": "status"},
            "ExpressionAttributeValues": {":refunded": {"S": REFUNDED}},
        },
    )
    charge, created = provider.charge(REQUEST)
    assert (charge.order_id, charge.amount, charge.status, created) == (ORDER, Decimal("25.00"), CHARGED, True)


def test_a_shipment_is_recorded_with_the_ledgers_completion_in_one_transaction(stub: Stubber) -> None:
    client = client_of(stub)
    complete = complete_action(client)
    shipments = DynamoDBShipments(client, "Shipments")
    expected_id = "shp_cb875027fae25cbb885329854d9af4c0"
    stub.add_response(
        "transact_write_items",
        {},
        {
            "TransactItems": [
                {
                    "Put": {
                        "TableName": "Shipments",
                        "Item": {
                            "orderId": {"S": ORDER},
                            "shipmentId": {"S": expected_id},
                            "attemptId": {"S": ATTEMPT},
                            "carrier": {"S": "yamato"},
                            "address": {"M": {"country": {"S": "JP"}, "city": {"S": "Tokyo"}}},
                            "status": {"S": ARRANGED},
                            "arrangedAt": {"N": str(NOW)},
                        },
                        "ConditionExpression": "attribute_not_exists(orderId) OR #status = :cancelled",
                        "ExpressionAttributeNames": {"#status": "status"},
                        "ExpressionAttributeValues": {":cancelled": {"S": CANCELLED}},
                    }
                },
                complete,
            ]
        },
    )
    shipment, created = shipments.arrange(ORDER, ATTEMPT, "yamato", ADDRESS, complete)
    assert (shipment, created) == (Shipment(ORDER, expected_id, ATTEMPT, "yamato", ADDRESS, ARRANGED), True)


def test_another_attempts_shipment_is_a_duplicate_order_naming_the_order_and_the_attempt(stub: Stubber) -> None:
    stub.add_client_error(
        "transact_write_items",
        service_error_code="TransactionCanceledException",
        modeled_fields={"CancellationReasons": [CCF, CCF]},
    )
    other = shipment_item(ARRANGED) | {"attemptId": {"S": "msg-0"}}
    stub.add_response("get_item", {"Item": other})
    client = client_of(stub)
    with pytest.raises(DuplicateOrder) as raised:
        DynamoDBShipments(client, "Shipments").arrange(ORDER, ATTEMPT, "yamato", ADDRESS, complete_action(client))
    assert str(raised.value) == f"order {ORDER} is not owned by {ATTEMPT}; nothing shipped"


# --- ReserveInventory's transaction: which action failed is told by its position -------------------------------


def reserve_one_line(stub: Stubber) -> tuple[Reservation, bool]:
    client = client_of(stub)
    claim = DynamoDBOrderLedger(client, "Orders").claim_item(ORDER, "fp", ATTEMPT, ARN, None)
    return DynamoDBInventory(client, "Inventory", "Reservations").reserve(ORDER, ATTEMPT, [("SKU-A", 1)], claim)


def test_with_one_line_a_failed_reservation_condition_is_read_as_the_reservation(stub: Stubber) -> None:
    # Actions: [stock of SKU-A, reservation, ledger claim]; the reservation is second from the end, not third.
    stub.add_client_error(
        "transact_write_items",
        service_error_code="TransactionCanceledException",
        modeled_fields={"CancellationReasons": [NONE, CCF, NONE]},
    )
    held = {
        "orderId": {"S": ORDER},
        "attemptId": {"S": ATTEMPT},
        "status": {"S": RESERVED},
        "items": {"L": [{"M": {"sku": {"S": "SKU-A"}, "quantity": {"N": "1"}}}]},
    }
    stub.add_response("get_item", {"Item": held})
    assert reserve_one_line(stub) == (Reservation(ORDER, ATTEMPT, RESERVED, (("SKU-A", 1),)), False)


def test_a_lost_claim_names_the_order(stub: Stubber) -> None:
    stub.add_client_error(
        "transact_write_items",
        service_error_code="TransactionCanceledException",
        modeled_fields={"CancellationReasons": [NONE, NONE, CCF]},
    )
    with pytest.raises(ClaimLost) as raised:
        reserve_one_line(stub)
    assert raised.value.args == (ORDER,)


# --- The ledger: handing an order over alone, and the fingerprint that outlives a deployment -------------------


def hand_over_request() -> dict[str, Any]:
    return {
        "TableName": "Orders",
        "Key": {"orderId": {"S": ORDER}},
        "UpdateExpression": "SET #status = :to, changedAt = :now",
        "ConditionExpression": "attemptId = :attempt AND executionArn = :execution AND #status IN (:from0, :from1)",
        "ExpressionAttributeNames": {"#status": "status"},
        "ExpressionAttributeValues": {
            ":to": {"S": COMPENSATED},
            ":attempt": {"S": ATTEMPT},
            ":execution": {"S": ARN},
            ":now": {"N": str(NOW)},
            ":from0": {"S": ACTIVE},
            ":from1": {"S": COMPLETED},
        },
    }


def test_handing_over_moves_the_owners_live_row_to_compensated(stub: Stubber) -> None:
    stub.add_response("update_item", {}, hand_over_request())
    assert DynamoDBOrderLedger(client_of(stub), "Orders").hand_over(ENTRY) is True


def test_handing_over_a_row_no_longer_this_owners_is_refused_quietly(stub: Stubber) -> None:
    stub.add_client_error("update_item", service_error_code="ConditionalCheckFailedException")
    assert DynamoDBOrderLedger(client_of(stub), "Orders").hand_over(ENTRY) is False


def test_handing_over_refused_for_another_reason_is_the_aws_error(stub: Stubber) -> None:
    stub.add_client_error("update_item", service_error_code="AccessDeniedException")
    with pytest.raises(ClientError):
        DynamoDBOrderLedger(client_of(stub), "Orders").hand_over(ENTRY)


def test_the_fingerprint_ignores_key_order() -> None:
    order = events.order()
    assert fingerprint(order) == fingerprint(dict(reversed(order.items())))


def test_the_fingerprint_of_an_order_is_stable_across_deployments() -> None:
    # Ledger rows outlive a deployment: a changed canonical form would turn every redrive of an order received before
    # it into an OrderConflict. The canonical form: sorted keys, no spaces, non-ASCII escaped.
    order = {"orderId": "ord-1", "name": "Zoë", "items": [{"sku": "A", "quantity": 1}]}
    canonical = '{"items":[{"quantity":1,"sku":"A"}],"name":"Zo\\u00eb","orderId":"ord-1"}'
    assert fingerprint(order) == hashlib.sha256(canonical.encode("ascii")).hexdigest()


def test_a_first_claim_puts_the_owners_row_only_if_the_order_has_none(stub: Stubber) -> None:
    claim = DynamoDBOrderLedger(client_of(stub), "Orders").claim_item(ORDER, "fp", ATTEMPT, ARN, None)
    assert claim == {
        "Put": {
            "TableName": "Orders",
            "Item": {
                "orderId": {"S": ORDER},
                "fingerprint": {"S": "fp"},
                "attemptId": {"S": ATTEMPT},
                "executionArn": {"S": ARN},
                "status": {"S": ACTIVE},
                "claimedAt": {"N": str(NOW)},
            },
            "ConditionExpression": "attribute_not_exists(orderId)",
        }
    }


def test_a_reservation_takes_each_line_from_stock_and_claims_the_order_in_one_transaction(stub: Stubber) -> None:
    client = client_of(stub)
    claim = DynamoDBOrderLedger(client, "Orders").claim_item(ORDER, "fp", ATTEMPT, ARN, None)
    take = {
        "Update": {
            "TableName": "Inventory",
            "Key": {"sku": {"S": "SKU-A"}},
            "UpdateExpression": "SET available = available - :q",
            "ConditionExpression": "available >= :q",
            "ExpressionAttributeValues": {":q": {"N": "2"}},
        }
    }
    record = {
        "Put": {
            "TableName": "Reservations",
            "Item": {
                "orderId": {"S": ORDER},
                "attemptId": {"S": ATTEMPT},
                "status": {"S": RESERVED},
                "items": {"L": [{"M": {"sku": {"S": "SKU-A"}, "quantity": {"N": "2"}}}]},
                "reservedAt": {"N": str(NOW)},
            },
            "ConditionExpression": "attribute_not_exists(orderId) OR #status = :released",
            "ExpressionAttributeNames": {"#status": "status"},
            "ExpressionAttributeValues": {":released": {"S": "RELEASED"}},
        }
    }
    stub.add_response("transact_write_items", {}, {"TransactItems": [take, record, claim]})
    inventory = DynamoDBInventory(client, "Inventory", "Reservations")
    assert inventory.reserve(ORDER, ATTEMPT, [("SKU-A", 2)], claim) == (
        Reservation(ORDER, ATTEMPT, RESERVED, (("SKU-A", 2),)),
        True,
    )


def test_a_throttled_reservation_is_transient_and_says_what_failed(stub: Stubber) -> None:
    stub.add_client_error("transact_write_items", service_error_code="ThrottlingException", http_status_code=400)
    with pytest.raises(TransientError) as raised:
        reserve_one_line(stub)
    assert str(raised.value) == "reserving stock failed transiently (ThrottlingException); safe to retry"


def test_a_take_over_claims_a_compensated_order_from_its_previous_owner_only(stub: Stubber) -> None:
    previous = OrderEntry(ORDER, "fp", "msg-0", "arn:exec-0", COMPENSATED)
    claim = DynamoDBOrderLedger(client_of(stub), "Orders").claim_item(ORDER, "fp", ATTEMPT, ARN, previous)
    assert claim == {
        "Update": {
            "TableName": "Orders",
            "Key": {"orderId": {"S": ORDER}},
            "UpdateExpression": "SET attemptId = :attempt, executionArn = :execution, #status = :active, "
            "claimedAt = :now",
            "ConditionExpression": "#status = :compensated AND attemptId = :previous AND fingerprint = :fp",
            "ExpressionAttributeNames": {"#status": "status"},
            "ExpressionAttributeValues": {
                ":attempt": {"S": ATTEMPT},
                ":execution": {"S": ARN},
                ":active": {"S": ACTIVE},
                ":compensated": {"S": COMPENSATED},
                ":previous": {"S": "msg-0"},
                ":fp": {"S": "fp"},
                ":now": {"N": str(NOW)},
            },
        }
    }


def test_the_ledger_is_read_strongly_consistent(stub: Stubber) -> None:
    # decide() acts on this read right after another attempt may have claimed the order: a stale row would let it in.
    row = {
        "orderId": {"S": ORDER},
        "fingerprint": {"S": "fp"},
        "attemptId": {"S": ATTEMPT},
        "executionArn": {"S": ARN},
        "status": {"S": ACTIVE},
    }
    stub.add_response(
        "get_item", {"Item": row}, {"TableName": "Orders", "Key": {"orderId": {"S": ORDER}}, "ConsistentRead": True}
    )
    assert DynamoDBOrderLedger(client_of(stub), "Orders").find(ORDER) == ENTRY
