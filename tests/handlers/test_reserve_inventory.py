"""ReserveInventory against moto: claims, validation, one all-or-nothing transaction, idempotency."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from common.errors import (
    DuplicateDelivery,
    DuplicateOrder,
    InvalidOrder,
    OrderConflict,
    OutOfStock,
    SagaError,
    TransientError,
    error_code,
)
from reserve_inventory.handler import handler
from tests.handlers.account import Account
from tests.handlers.saga import emitted_metrics, faults
from tests.support import events

ARN = "arn:aws:states:us-east-1:123456789012:execution:OrderSaga:first"
OTHER_ARN = "arn:aws:states:us-east-1:123456789012:execution:OrderSaga:second"


def reserve(lambda_context: Any, record: dict[str, Any], arn: str = ARN) -> dict[str, Any]:
    result: dict[str, Any] = handler(events.reserve_input(record, arn), lambda_context)
    return result


def test_happy_path_takes_every_line_from_stock_and_records_the_reservation(
    account: Account, lambda_context: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given stock for both lines of the canonical order
    account.stock_up(SKU_RED_MUG=5, SKU_TEA_100G=3)
    record = events.sqs_record(events.order())

    # When ReserveInventory runs
    result = reserve(lambda_context, record)

    # Then stock went down by exactly the ordered quantities and the reservation names this attempt
    assert (account.stock("SKU-RED-MUG"), account.stock("SKU-TEA-100G")) == (3, 2)
    stored = account.reservation("ord-1001")
    assert stored is not None
    assert stored["status"] == "RESERVED"
    assert stored["attemptId"] == record["messageId"]
    assert [(line["sku"], int(line["quantity"])) for line in stored["items"]] == [
        ("SKU-RED-MUG", 2),
        ("SKU-TEA-100G", 1),
    ]
    # And the output is the order context the next steps read
    assert result["orderId"] == "ord-1001"
    assert result["customerId"] == "cust-42"
    assert result["messageId"] == record["messageId"]
    assert result["order"]["payment"]["amount"] == "38.50"
    assert result["reservation"]["status"] == "RESERVED"
    assert emitted_metrics(capsys.readouterr().out)["OrdersReserved"] == 1


def test_out_of_stock_names_the_sku_and_reserves_nothing(
    account: Account, lambda_context: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given enough mugs but only 0 tea
    account.stock_up(SKU_RED_MUG=5, SKU_TEA_100G=0)

    # When ReserveInventory runs, Then it fails naming the short sku
    with pytest.raises(OutOfStock) as raised:
        reserve(lambda_context, events.sqs_record(events.order()))
    assert raised.value.sku == "SKU-TEA-100G"
    assert "SKU-TEA-100G" in str(raised.value)

    # And the transaction took nothing, not even the mugs that were in stock
    assert (account.stock("SKU-RED-MUG"), account.stock("SKU-TEA-100G")) == (5, 0)
    assert account.reservation("ord-1001") is None
    assert emitted_metrics(capsys.readouterr().out)["OutOfStock"] == 1


def test_a_sku_that_is_not_stocked_at_all_is_out_of_stock(account: Account, lambda_context: Any) -> None:
    account.stock_up(SKU_RED_MUG=5)  # no tea item exists
    with pytest.raises(OutOfStock) as raised:
        reserve(lambda_context, events.sqs_record(events.order()))
    assert raised.value.sku == "SKU-TEA-100G"
    assert account.stock("SKU-RED-MUG") == 5


def test_invalid_body_raises_invalid_order_after_claiming(
    account: Account, lambda_context: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    account.stock_up(SKU_RED_MUG=5, SKU_TEA_100G=3)
    record = events.sqs_record(events.order(items=[]))

    with pytest.raises(InvalidOrder, match="items"):
        reserve(lambda_context, record)

    assert account.stock("SKU-RED-MUG") == 5
    assert account.count(account.reservations_table) == 0
    assert emitted_metrics(capsys.readouterr().out)["InvalidOrders"] == 1


@pytest.mark.parametrize("event", [{}, {"record": "not a record"}, {"record": {"body": "{}"}}])
def test_task_input_without_a_usable_record_is_an_invalid_order(
    account: Account, lambda_context: Any, event: dict[str, Any]
) -> None:
    with pytest.raises(InvalidOrder):
        handler(event, lambda_context)


def test_same_execution_retrying_gets_the_same_reservation_and_takes_stock_once(
    account: Account, lambda_context: Any
) -> None:
    account.stock_up(SKU_RED_MUG=5, SKU_TEA_100G=3)
    record = events.sqs_record(events.order())

    first = reserve(lambda_context, record)
    second = reserve(lambda_context, record)

    assert second == first
    assert (account.stock("SKU-RED-MUG"), account.stock("SKU-TEA-100G")) == (3, 2)


def test_second_execution_for_the_same_message_is_a_duplicate_delivery(
    account: Account, lambda_context: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given the first execution claimed and reserved the message
    account.stock_up(SKU_RED_MUG=5, SKU_TEA_100G=3)
    record = events.sqs_record(events.order())
    reserve(lambda_context, record, ARN)

    # When SQS delivers it again and the pipe starts a second execution
    with pytest.raises(DuplicateDelivery):
        reserve(lambda_context, record, OTHER_ARN)

    # Then the claim still belongs to the first execution and nothing more was reserved
    claim = account.claim(record["messageId"])
    assert claim is not None and claim["executionArn"] == ARN
    assert int(claim["expiresAt"]) > int(claim["claimedAt"]) + 14 * 24 * 3600
    assert (account.stock("SKU-RED-MUG"), account.stock("SKU-TEA-100G")) == (3, 2)
    assert emitted_metrics(capsys.readouterr().out)["DuplicateDeliveries"] == 1


def test_same_order_sent_twice_by_the_producer_ends_the_second_as_a_duplicate_order(
    account: Account, lambda_context: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given the order was reserved by a first message, whose attempt is still in flight
    account.stock_up(SKU_RED_MUG=5, SKU_TEA_100G=3)
    reserve(lambda_context, events.sqs_record(events.order(), message_id="m-1"), ARN)

    # When the producer sends the same order again (a new messageId, a new execution)
    with pytest.raises(DuplicateOrder, match="owned by message m-1"):
        reserve(lambda_context, events.sqs_record(events.order(), message_id="m-2"), OTHER_ARN)

    # Then the second attempt takes nothing and the ledger still names the first as the owner
    assert (account.stock("SKU-RED-MUG"), account.stock("SKU-TEA-100G")) == (3, 2)
    entry = account.order("ord-1001")
    assert entry is not None and (entry["attemptId"], entry["status"]) == ("m-1", "ACTIVE")
    assert emitted_metrics(capsys.readouterr().out)["DuplicateOrders"] == 1


def test_same_order_id_with_another_body_is_refused_as_a_conflict(
    account: Account, lambda_context: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given the order was received once
    account.stock_up(SKU_RED_MUG=5, SKU_TEA_100G=3)
    reserve(lambda_context, events.sqs_record(events.order(), message_id="m-1"), ARN)

    # When the same orderId arrives with more items
    changed = events.order(items=[{"sku": "SKU-RED-MUG", "quantity": 3}])
    with pytest.raises(OrderConflict, match="different body"):
        reserve(lambda_context, events.sqs_record(changed, message_id="m-2"), OTHER_ARN)

    # Then nothing more is taken and the first body stays the order's
    assert (account.stock("SKU-RED-MUG"), account.stock("SKU-TEA-100G")) == (3, 2)
    entry = account.order("ord-1001")
    assert entry is not None and entry["attemptId"] == "m-1"
    assert emitted_metrics(capsys.readouterr().out)["OrderConflicts"] == 1


def test_the_same_body_in_another_key_order_is_the_same_order(account: Account, lambda_context: Any) -> None:
    account.stock_up(SKU_RED_MUG=5, SKU_TEA_100G=3)
    reserve(lambda_context, events.sqs_record(events.order(), message_id="m-1"), ARN)
    reordered = dict(reversed(list(events.order().items())))

    with pytest.raises(DuplicateOrder):
        reserve(lambda_context, events.sqs_record(reordered, message_id="m-2"), OTHER_ARN)


@pytest.mark.parametrize(
    "code", ["ThrottlingException", "ProvisionedThroughputExceededException", "InternalServerError"]
)
def test_transient_dynamodb_errors_surface_as_transient_error_and_change_nothing(
    account: Account, lambda_context: Any, code: str
) -> None:
    account.stock_up(SKU_RED_MUG=5, SKU_TEA_100G=3)
    record = events.sqs_record(events.order())

    with faults("transact_write_items", code, table=account.inventory_table), pytest.raises(TransientError):
        reserve(lambda_context, record)

    assert account.stock("SKU-RED-MUG") == 5
    assert account.reservation("ord-1001") is None
    # And the retry the state machine makes succeeds: the failure released the idempotency record
    reserve(lambda_context, record)
    assert account.stock("SKU-RED-MUG") == 3


def test_retry_after_a_lost_response_does_not_reserve_twice(account: Account, lambda_context: Any) -> None:
    # Given the transaction committed but its response was lost (a 500 after the write)
    account.stock_up(SKU_RED_MUG=5, SKU_TEA_100G=3)
    record = events.sqs_record(events.order())
    with faults("transact_write_items", "InternalServerError", after_write=True), pytest.raises(TransientError):
        reserve(lambda_context, record)

    # When the state machine retries, Then the existing reservation is returned and stock is taken once
    result = reserve(lambda_context, record)
    assert result["reservation"]["attemptId"] == record["messageId"]
    assert (account.stock("SKU-RED-MUG"), account.stock("SKU-TEA-100G")) == (3, 2)


def test_a_claim_throttled_is_transient_and_claims_nothing(account: Account, lambda_context: Any) -> None:
    account.stock_up(SKU_RED_MUG=5, SKU_TEA_100G=3)
    record = events.sqs_record(events.order())
    with faults("update_item", "ThrottlingException", table=account.deliveries_table), pytest.raises(TransientError):
        reserve(lambda_context, record)
    assert account.claim(record["messageId"]) is None


def test_an_unreachable_idempotency_store_is_transient(account: Account, lambda_context: Any) -> None:
    account.stock_up(SKU_RED_MUG=5, SKU_TEA_100G=3)
    with (
        faults("put_item", "ProvisionedThroughputExceededException", table=account.idempotency_table),
        pytest.raises(TransientError),
    ):
        reserve(lambda_context, events.sqs_record(events.order()))
    assert account.stock("SKU-RED-MUG") == 5


def test_a_non_transient_aws_error_is_not_disguised_as_transient(account: Account, lambda_context: Any) -> None:
    account.stock_up(SKU_RED_MUG=5, SKU_TEA_100G=3)
    with faults("transact_write_items", "AccessDeniedException"), pytest.raises(ClientError) as raised:
        reserve(lambda_context, events.sqs_record(events.order()))
    # The AWS error itself reaches the state machine (no Retry matches it), not a TransientError nor a business error.
    assert not isinstance(raised.value, SagaError)
    assert error_code(raised.value) == "AccessDeniedException"
    assert account.stock("SKU-RED-MUG") == 5
