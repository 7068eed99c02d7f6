"""What the steps guarantee beyond their happy path: idempotency records that expire when they must, metrics that count
an effect once however often a step runs, and DynamoDB requests that real DynamoDB would accept."""

from __future__ import annotations

import hashlib
import json
import time
from contextlib import ExitStack
from typing import Any

import pytest
from aws_lambda_powertools.utilities.idempotency.exceptions import IdempotencyPersistenceLayerError

from arrange_shipping.handler import handler as arrange_shipping
from charge_payment.handler import handler as charge_payment
from common import aws
from common.compensation import Compensation, compensate
from common.errors import TransientError
from common.idempotency import StepKey, run_once
from common.order_ledger import ACTIVE, DynamoDBOrderLedger, OrderEntry
from common.settings import DEFAULT_IDEMPOTENCY_EXPIRY_SECONDS, IdempotencySettings
from reserve_inventory.handler import handler as reserve_inventory
from tests.handlers import steps
from tests.handlers.account import Account
from tests.handlers.request_rules import RequestRules, number_problems, placeholder_problems
from tests.handlers.saga import SagaDriver, emitted_metrics, faults
from tests.support import events

REMAINING_MS = 30_000  # what the FakeLambdaContext reports


def settings_of(account: Account) -> IdempotencySettings:
    return IdempotencySettings(account.idempotency_table, DEFAULT_IDEMPOTENCY_EXPIRY_SECONDS)


def idempotency_records(account: Account) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = account.client.scan(TableName=account.idempotency_table)["Items"]
    return items


def recording(into: list[Any], value: Any, result: dict[str, Any]) -> dict[str, Any]:
    """Work for run_once that records ``value`` while the step runs, then returns ``result``."""
    into.append(value)
    return result


def forget_idempotency(account: Account) -> None:
    """As after the INPROGRESS record of a timed-out invocation expired: the next run reaches the step's own checks."""
    for item in idempotency_records(account):
        account.client.delete_item(TableName=account.idempotency_table, Key={"id": item["id"]})


# --- Idempotency records -------------------------------------------------------------------------------------------


def test_a_step_in_progress_expires_with_the_invocation_not_with_the_record(
    account: Account, lambda_context: Any
) -> None:
    # When a step is running, its INPROGRESS record carries the invocation's deadline, so that a retry after a Lambda
    # timeout may run instead of finding "already in progress" until the record expires, days later.
    seen: list[list[dict[str, Any]]] = []
    started_ms = int(time.time() * 1000)
    run_once(
        StepKey("ord-1", "ReserveInventory", "msg-1"),
        lambda: recording(seen, idempotency_records(account), {"ok": True}),
        settings=settings_of(account),
        context=lambda_context,
    )
    ((record,),) = seen
    assert record["status"]["S"] == "INPROGRESS"
    deadline = int(record["in_progress_expiration"]["N"])
    assert started_ms + REMAINING_MS - 2_000 <= deadline <= int(time.time() * 1000) + REMAINING_MS


def test_a_compensation_in_progress_expires_with_the_invocation_too(account: Account, lambda_context: Any) -> None:
    record = events.sqs_record(events.order())
    arn = "arn:aws:states:us-east-1:123456789012:execution:OrderSaga:first"
    account.client.put_item(
        TableName=account.orders_table,
        Item={
            "orderId": {"S": "ord-1001"},
            "fingerprint": {"S": "fp"},
            "attemptId": {"S": record["messageId"]},
            "executionArn": {"S": arn},
            "status": {"S": ACTIVE},
        },
    )
    seen: list[dict[str, Any]] = []

    def undo(entry: OrderEntry) -> str:
        seen.extend(idempotency_records(account))
        return "undone"

    result = compensate(
        events.compensation_input(record, arn),
        lambda_context,
        Compensation("RefundPayment", "REFUNDED", "NOTHING_TO_REFUND", "PaymentsRefunded", lambda _: {}),
        idempotency=settings_of(account),
        ledger=DynamoDBOrderLedger(aws.dynamodb(), account.orders_table),
        undo=undo,
    )
    assert result == {"status": "REFUNDED"}
    (in_progress,) = seen
    assert "in_progress_expiration" in in_progress


def test_a_completed_step_is_remembered_for_the_configured_expiry_not_powertools_hour(
    account: Account, lambda_context: Any
) -> None:
    started = int(time.time())
    run_once(
        StepKey("ord-1", "ChargePayment", "msg-1"),
        lambda: {"ok": True},
        settings=settings_of(account),
        context=lambda_context,
    )
    (record,) = idempotency_records(account)
    assert record["status"]["S"] == "COMPLETED"
    # 15 days: longer than the 14-day redrive window, so a redriven message cannot run a completed step again.
    expiry = int(record["expiration"]["N"])
    assert (
        started + DEFAULT_IDEMPOTENCY_EXPIRY_SECONDS <= expiry <= int(time.time()) + DEFAULT_IDEMPOTENCY_EXPIRY_SECONDS
    )


def test_a_repeat_of_a_completed_step_gets_the_stored_result_without_running_again(
    account: Account, lambda_context: Any
) -> None:
    runs: list[int] = []

    def work() -> dict[str, Any]:
        runs.append(1)
        return {"run": len(runs)}

    key = StepKey("ord-1", "ChargePayment", "msg-1")
    first = run_once(key, work, settings=settings_of(account), context=lambda_context)
    again = run_once(key, work, settings=settings_of(account), context=lambda_context)
    assert (first, again, len(runs)) == ({"run": 1}, {"run": 1}, 1)
    # Another attempt of the same order is another key: it runs.
    assert run_once(key._replace(attempt_id="msg-2"), work, settings=settings_of(account), context=lambda_context) == {
        "run": 2
    }


def test_an_idempotency_store_that_refuses_access_is_not_retried_as_transient(
    account: Account, lambda_context: Any
) -> None:
    runs: list[int] = []
    with (
        faults("put_item", "AccessDeniedException", table=account.idempotency_table),
        pytest.raises(IdempotencyPersistenceLayerError) as raised,
    ):
        run_once(
            StepKey("ord-1", "ReserveInventory", "msg-1"),
            lambda: recording(runs, 1, {}),
            settings=settings_of(account),
            context=lambda_context,
        )
    # Retrying cannot grant the permission: the error goes to the state machine as it is, and the step never ran.
    assert not isinstance(raised.value, TransientError)
    assert runs == []


def test_a_step_already_in_progress_is_transient(account: Account, lambda_context: Any) -> None:
    key = StepKey("ord-1", "ReserveInventory", "msg-1")

    def reenter() -> dict[str, Any]:
        return run_once(key, lambda: {}, settings=settings_of(account), context=lambda_context)

    with pytest.raises(TransientError, match="already in progress"):
        run_once(key, reenter, settings=settings_of(account), context=lambda_context)


# --- Metrics count an effect once ------------------------------------------------------------------------------------


def test_a_reservation_found_again_is_not_counted_again(
    account: Account, lambda_context: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    record = events.sqs_record(events.order())
    first = steps.reserved(account, lambda_context, record)
    forget_idempotency(account)
    again = reserve_inventory(events.reserve_input(record, steps.ARN), lambda_context)
    assert again["reservation"] == first["reservation"]
    assert emitted_metrics(capsys.readouterr().out)["OrdersReserved"] == 1
    assert account.stock("SKU-RED-MUG") == 3


def test_a_charge_found_again_is_not_counted_again(
    account: Account, lambda_context: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    reserved = steps.reserved(account, lambda_context, events.sqs_record(events.order()))
    first = charge_payment(reserved, lambda_context)
    forget_idempotency(account)
    again = charge_payment(reserved, lambda_context)
    assert again["payment"] == first["payment"]
    assert emitted_metrics(capsys.readouterr().out)["OrdersCharged"] == 1


def test_a_shipment_found_again_is_not_counted_again(
    account: Account, lambda_context: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    charged = steps.charged(account, lambda_context, events.sqs_record(events.order()))
    first = arrange_shipping(charged, lambda_context)
    forget_idempotency(account)
    again = arrange_shipping(charged, lambda_context)
    assert again["shipment"] == first["shipment"]
    assert emitted_metrics(capsys.readouterr().out)["OrdersShipped"] == 1


# --- Requests real DynamoDB accepts ----------------------------------------------------------------------------------


def test_the_request_rules_catch_what_moto_lets_through() -> None:
    assert list(number_problems({"ExpressionAttributeValues": {":now": {"N": "None"}}}))
    assert not list(number_problems({":a": {"N": "-1.5e3"}, ":b": {"NS": ["1", "2"]}}))
    assert list(placeholder_problems({"UpdateExpression": "SET a = :a", "ExpressionAttributeValues": {":b": {}}}))
    rules = RequestRules()
    failed = {"TableName": "T", "Key": {}}

    class Model:
        def __init__(self, name: str) -> None:
            self.name = name

    rules.before(failed, Model("PutItem"))
    rules.after({"Error": {"Code": "ConditionalCheckFailedException"}})
    rules.before({"TableName": "T", "Key": {}}, Model("GetItem"))
    assert rules.violations == ["GetItem on T after a failed condition is not consistent"]


@pytest.mark.parametrize(
    "plan", ["ok", "recovers:reserve:after", "recovers:charge:after", "recovers:ship:after", "exhausts:ship:after"]
)
def test_every_request_of_a_saga_is_one_dynamodb_accepts(account: Account, lambda_context: Any, plan: str) -> None:
    # Lost responses make each step read back what its failed condition found; the pivot failure runs every undo.
    account.stock_up(SKU_RED_MUG=5, SKU_TEA_100G=3)
    rules = RequestRules().attach(aws.dynamodb())
    operation, table = {
        "reserve": ("transact_write_items", account.inventory_table),
        "charge": ("put_item", account.payments_table),
        "ship": ("transact_write_items", account.shipments_table),
    }.get(plan.split(":")[1] if ":" in plan else "", ("", ""))
    with ExitStack() as stack:
        if operation:
            times = 5 if plan.startswith("exhausts") else 1
            stack.enter_context(faults(operation, "InternalServerError", table=table, times=times, after_write=True))
        outcome = SagaDriver(lambda_context).run(events.sqs_record(events.order()), steps.ARN)
    assert outcome.status == ("FAILED" if plan.startswith("exhausts") else "SUCCEEDED")
    assert rules.violations == []
    assert rules.requests > 10
    if plan in {"recovers:charge:after", "recovers:ship:after"}:
        assert rules.explaining_reads >= 1


def test_a_throttled_idempotency_store_is_transient_and_says_which_store_and_why(
    account: Account, lambda_context: Any
) -> None:
    runs: list[int] = []
    with (
        faults("put_item", "ThrottlingException", table=account.idempotency_table),
        pytest.raises(TransientError) as raised,
    ):
        run_once(
            StepKey("ord-1", "ReserveInventory", "msg-1"),
            lambda: recording(runs, 1, {}),
            settings=settings_of(account),
            context=lambda_context,
        )
    # The state machine retries it; the operator reading the cause learns what failed and with which AWS error.
    assert str(raised.value) == "idempotency store failed transiently (ThrottlingException); safe to retry"
    assert isinstance(raised.value.__cause__, IdempotencyPersistenceLayerError)
    assert runs == []


def test_the_idempotency_record_of_a_step_is_found_again_after_a_deploy(account: Account, lambda_context: Any) -> None:
    # The record's id is Powertools' hash of the key payload: a redrive after a new deploy must land on the same
    # record, so the payload (its field names included) is part of the stored contract, not an implementation detail.
    key = StepKey("ord-1", "ChargePayment", "msg-1")
    assert key.as_payload() == {"orderId": "ord-1", "step": "ChargePayment", "attemptId": "msg-1"}
    run_once(key, lambda: {"done": True}, settings=settings_of(account), context=lambda_context)
    (record,) = idempotency_records(account)
    # Powertools hashes what KEY_JMESPATH selects ([orderId, step, attemptId]) as JSON, with MD5 by default.
    selected = ["ord-1", "ChargePayment", "msg-1"]
    digest = hashlib.md5(  # noqa: S324 - Powertools' default hash function for the key, not a security use
        json.dumps(selected, sort_keys=True).encode(), usedforsecurity=False
    ).hexdigest()
    assert record["id"]["S"].endswith(f"#{digest}")
