"""CancelShipment against moto: ARRANGED -> CANCELLED once, by the attempt that shipped; no-op otherwise."""

from __future__ import annotations

from typing import Any

import pytest

from cancel_shipment.handler import handler
from common.errors import CompensationFailed, TransientError
from tests.handlers.account import Account
from tests.handlers.saga import MAX_ATTEMPTS, SagaDriver, emitted_metrics, faults
from tests.handlers.steps import ARN, charged, shipped
from tests.support import events


def cancel(lambda_context: Any, record: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = handler(events.compensation_input(record), lambda_context)
    return result


def test_cancels_the_shipment_of_this_attempt(
    account: Account, lambda_context: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given the attempt arranged the shipment before ArrangeShipping was reported failed
    record = events.sqs_record(events.order())
    shipped(account, lambda_context, record)

    # When CancelShipment runs with the raw record
    assert cancel(lambda_context, record) == {"status": "CANCELLED"}

    # Then the shipment is CANCELLED, and the count says so once
    shipment = account.shipment("ord-1001")
    assert shipment is not None and shipment["status"] == "CANCELLED" and "cancelledAt" in shipment
    assert emitted_metrics(capsys.readouterr().out)["ShipmentsCancelled"] == 1


def test_cancelling_twice_cancels_once(
    account: Account, lambda_context: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    record = events.sqs_record(events.order())
    shipped(account, lambda_context, record)

    assert cancel(lambda_context, record) == {"status": "CANCELLED"}
    assert cancel(lambda_context, record) == {"status": "CANCELLED"}  # the stored result, not a second cancel

    assert emitted_metrics(capsys.readouterr().out)["ShipmentsCancelled"] == 1


def test_without_the_idempotency_record_the_condition_still_cancels_once(account: Account, lambda_context: Any) -> None:
    # Given the shipment was cancelled and the idempotency record has since expired
    record = events.sqs_record(events.order())
    shipped(account, lambda_context, record)
    cancel(lambda_context, record)
    cancelled = account.shipment("ord-1001")
    for item in account.client.scan(TableName=account.idempotency_table)["Items"]:
        account.client.delete_item(TableName=account.idempotency_table, Key={"id": item["id"]})

    # Then a late duplicate finds nothing left to cancel and changes nothing
    assert cancel(lambda_context, record) == {"status": "NOTHING_TO_CANCEL"}
    assert account.shipment("ord-1001") == cancelled


def test_nothing_to_cancel_when_the_attempt_failed_before_shipping(account: Account, lambda_context: Any) -> None:
    record = events.sqs_record(events.order())
    charged(account, lambda_context, record)  # failed before ArrangeShipping wrote anything

    assert cancel(lambda_context, record) == {"status": "NOTHING_TO_CANCEL"}
    assert account.shipment("ord-1001") is None


@pytest.mark.parametrize("body", ["not json", "[]", '{"orderId": 7}', "{}"])
def test_nothing_to_cancel_for_a_body_that_names_no_order(account: Account, lambda_context: Any, body: str) -> None:
    assert cancel(lambda_context, events.sqs_record(body)) == {"status": "NOTHING_TO_CANCEL"}


def test_another_attempts_shipment_is_left_alone(account: Account, lambda_context: Any) -> None:
    # Given attempt m-1 shipped the order, and the producer's duplicate m-2 failed
    shipped(account, lambda_context, events.sqs_record(events.order(), "m-1"))

    assert cancel(lambda_context, events.sqs_record(events.order(), "m-2")) == {"status": "NOTHING_TO_CANCEL"}

    shipment = account.shipment("ord-1001")
    assert shipment is not None and (shipment["status"], shipment["attemptId"]) == ("ARRANGED", "m-1")


@pytest.mark.parametrize(
    "code", ["ThrottlingException", "ProvisionedThroughputExceededException", "InternalServerError"]
)
def test_transient_errors_are_retried_and_the_retry_cancels(account: Account, lambda_context: Any, code: str) -> None:
    record = events.sqs_record(events.order())
    shipped(account, lambda_context, record)
    with faults("update_item", code, table=account.shipments_table), pytest.raises(TransientError):
        cancel(lambda_context, record)
    shipment = account.shipment("ord-1001")
    assert shipment is not None and shipment["status"] == "ARRANGED"

    assert cancel(lambda_context, record) == {"status": "CANCELLED"}


def test_a_hard_failure_is_compensation_failed(
    account: Account, lambda_context: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    record = events.sqs_record(events.order())
    shipped(account, lambda_context, record)
    with (
        faults("update_item", "AccessDeniedException", table=account.shipments_table),
        pytest.raises(CompensationFailed),
    ):
        cancel(lambda_context, record)
    shipment = account.shipment("ord-1001")
    assert shipment is not None and shipment["status"] == "ARRANGED"
    assert emitted_metrics(capsys.readouterr().out)["CompensationsFailed"] == 1


def test_a_task_input_without_the_record_is_compensation_failed(account: Account, lambda_context: Any) -> None:
    with pytest.raises(CompensationFailed):
        handler({"orderId": "ord-1001"}, lambda_context)


def test_the_saga_cancels_a_shipment_written_before_arrange_shipping_exhausted_its_retries(
    account: Account, lambda_context: Any
) -> None:
    # Given the shipment write commits but its response is lost, and every retry is throttled
    record = events.sqs_record(events.order())
    account.stock_up(SKU_RED_MUG=5, SKU_TEA_100G=3)
    with faults("transact_write_items", "ThrottlingException", table=account.shipments_table, times=MAX_ATTEMPTS,
                after_write=True):
        outcome = SagaDriver(lambda_context).run(record, "arn:exec-1")

    # Then the saga fails and compensates all three steps, the shipment first
    assert (outcome.status, outcome.error) == ("FAILED", "TransientError")
    assert outcome.compensations == [{"status": "CANCELLED"}, {"status": "REFUNDED"}, {"status": "RELEASED"}]
    shipment, charge = account.shipment("ord-1001"), account.charge("ord-1001")
    assert shipment is not None and shipment["status"] == "CANCELLED"
    assert charge is not None and charge["status"] == "REFUNDED"
    assert (account.stock("SKU-RED-MUG"), account.stock("SKU-TEA-100G")) == (5, 3)


def test_a_redrive_after_the_compensation_ships_again(account: Account, lambda_context: Any) -> None:
    # Given attempt m-1 shipped, then its compensations cancelled, refunded and released (the order is handed over)
    first = events.sqs_record(events.order(), "m-1")
    shipped(account, lambda_context, first)
    SagaDriver(lambda_context).compensate(first, ARN, shipping_failed=True)

    # When an operator redrive (new messageId m-2, same body) runs the saga
    outcome = SagaDriver(lambda_context).run(events.sqs_record(events.order(), "m-2"), "arn:exec-redrive")

    # Then the order is shipped again, by the new attempt
    assert outcome.status == "SUCCEEDED"
    shipment = account.shipment("ord-1001")
    assert shipment is not None and (shipment["status"], shipment["attemptId"]) == ("ARRANGED", "m-2")
    assert outcome.context is not None and outcome.context["shipment"]["attemptId"] == "m-2"
