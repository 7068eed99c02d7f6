"""ReleaseInventory against moto: returns exactly what this attempt reserved, once; no-op otherwise."""

from __future__ import annotations

from typing import Any

import pytest

from common.errors import CompensationFailed, TransientError
from release_inventory.handler import handler
from reserve_inventory.handler import handler as reserve
from tests.handlers.account import Account
from tests.handlers.saga import emitted_metrics, faults
from tests.handlers.steps import ARN, reserved
from tests.support import events


def release(lambda_context: Any, record: dict[str, Any], arn: str = ARN) -> dict[str, Any]:
    result: dict[str, Any] = handler(events.compensation_input(record, arn), lambda_context)
    return result


def test_returns_exactly_what_the_attempt_reserved(
    account: Account, lambda_context: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given the attempt reserved 2 mugs and 1 tea (stock 5/3 -> 3/2), and a later step failed
    record = events.sqs_record(events.order())
    reserved(account, lambda_context, record)

    # When ReleaseInventory runs
    assert release(lambda_context, record) == {"status": "RELEASED"}

    # Then stock is back where it was and the reservation is RELEASED
    assert (account.stock("SKU-RED-MUG"), account.stock("SKU-TEA-100G")) == (5, 3)
    stored = account.reservation("ord-1001")
    assert stored is not None and stored["status"] == "RELEASED"
    assert emitted_metrics(capsys.readouterr().out)["InventoryReleased"] == 1


def test_releasing_twice_returns_stock_once(account: Account, lambda_context: Any) -> None:
    record = events.sqs_record(events.order())
    reserved(account, lambda_context, record)

    release(lambda_context, record)
    assert release(lambda_context, record) == {"status": "RELEASED"}

    assert (account.stock("SKU-RED-MUG"), account.stock("SKU-TEA-100G")) == (5, 3)


def test_nothing_to_release_when_reserve_failed_out_of_stock(account: Account, lambda_context: Any) -> None:
    account.stock_up(SKU_RED_MUG=5, SKU_TEA_100G=0)
    record = events.sqs_record(events.order())
    with pytest.raises(Exception, match="SKU-TEA-100G"):
        reserve(events.reserve_input(record), lambda_context)

    assert release(lambda_context, record) == {"status": "NOTHING_TO_RELEASE"}
    assert (account.stock("SKU-RED-MUG"), account.stock("SKU-TEA-100G")) == (5, 0)


@pytest.mark.parametrize("name", ["plain_text.txt", "json_array.json", "quantity_zero.json"])
def test_nothing_to_release_for_an_invalid_order(account: Account, lambda_context: Any, name: str) -> None:
    account.stock_up(SKU_RED_MUG=5, SKU_TEA_100G=3)
    body = dict(events.invalid_bodies())[name]
    assert release(lambda_context, events.sqs_record(body)) == {"status": "NOTHING_TO_RELEASE"}
    assert (account.stock("SKU-RED-MUG"), account.stock("SKU-TEA-100G")) == (5, 3)


def test_another_attempts_reservation_is_left_alone(account: Account, lambda_context: Any) -> None:
    reserved(account, lambda_context, events.sqs_record(events.order(), "m-1"))

    assert release(lambda_context, events.sqs_record(events.order(), "m-2")) == {"status": "NOTHING_TO_RELEASE"}

    assert (account.stock("SKU-RED-MUG"), account.stock("SKU-TEA-100G")) == (3, 2)


def test_redrive_after_compensation_reserves_again_and_can_release_again(account: Account, lambda_context: Any) -> None:
    # Given attempt m-1 reserved and was compensated
    first = events.sqs_record(events.order(), "m-1")
    reserved(account, lambda_context, first)
    release(lambda_context, first)

    # When an operator redrives the order: a new message m-2 starts a new execution
    redriven = events.sqs_record(events.order(), "m-2")
    context = reserve(events.reserve_input(redriven, "arn:redrive"), lambda_context)

    # Then the stock is taken again (not the cached answer of m-1) under the new attempt
    assert context["reservation"]["attemptId"] == "m-2"
    assert (account.stock("SKU-RED-MUG"), account.stock("SKU-TEA-100G")) == (3, 2)
    stored = account.reservation("ord-1001")
    assert stored is not None and (stored["status"], stored["attemptId"]) == ("RESERVED", "m-2")
    # And if the redriven attempt fails too, its own compensation returns the stock once more
    assert release(lambda_context, redriven, "arn:redrive") == {"status": "RELEASED"}
    assert (account.stock("SKU-RED-MUG"), account.stock("SKU-TEA-100G")) == (5, 3)


@pytest.mark.parametrize(
    "code", ["ThrottlingException", "ProvisionedThroughputExceededException", "InternalServerError"]
)
def test_transient_errors_are_retried_and_the_retry_releases(account: Account, lambda_context: Any, code: str) -> None:
    record = events.sqs_record(events.order())
    reserved(account, lambda_context, record, ARN)
    with faults("transact_write_items", code), pytest.raises(TransientError):
        release(lambda_context, record)
    assert account.stock("SKU-RED-MUG") == 3

    assert release(lambda_context, record) == {"status": "RELEASED"}
    assert account.stock("SKU-RED-MUG") == 5


def test_a_hard_failure_is_compensation_failed(account: Account, lambda_context: Any) -> None:
    record = events.sqs_record(events.order())
    reserved(account, lambda_context, record)
    with faults("transact_write_items", "ValidationException"), pytest.raises(CompensationFailed):
        release(lambda_context, record)
    assert account.stock("SKU-RED-MUG") == 3


def test_a_duplicate_execution_that_does_not_own_the_order_releases_nothing(
    account: Account, lambda_context: Any
) -> None:
    # Given execution ARN reserved message m-1; a second execution of the same message died before its claim
    record = events.sqs_record(events.order(), "m-1")
    reserved(account, lambda_context, record)

    # When the second execution's ReleaseInventory runs for the same messageId
    result = release(lambda_context, record, "arn:aws:states:us-east-1:123456789012:execution:OrderSaga:twin")

    # Then nothing is returned to stock: the reservation belongs to the execution that owns the order
    assert result == {"status": "NOTHING_TO_RELEASE"}
    assert (account.stock("SKU-RED-MUG"), account.stock("SKU-TEA-100G")) == (3, 2)
    stored = account.reservation("ord-1001")
    assert stored is not None and stored["status"] == "RESERVED"
    # And the owner's own release still works afterwards (the twin's "nothing" is not replayed to it)
    assert release(lambda_context, record) == {"status": "RELEASED"}
    assert account.order("ord-1001")["status"] == "COMPENSATED"  # type: ignore[index]
