"""What a compensation tells the operator: its log lines (correlated by orderId and messageId), its refusals of a
task input it cannot check, and the order handed over when the owner has nothing left to release."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from common.errors import CompensationFailed
from common.observability import logger
from refund_payment.handler import handler as refund
from release_inventory.handler import handler as release
from tests.handlers.account import Account
from tests.handlers.steps import ARN, charged, reserved
from tests.support import events

RECORD = events.sqs_record(events.order())
MESSAGE_ID = RECORD["messageId"]


@pytest.fixture
def logs() -> Iterator[io.StringIO]:
    """What the Powertools Logger writes, in its own format: a handler of the test's own on the logger underneath
    (capsys cannot see Powertools' handler, which keeps the stream it started with), at INFO whatever level and
    handlers other tests in this process left on it (the healing functions' Logger is the same logging.Logger when
    no service name is set)."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logger.registered_formatter)
    underlying = logging.getLogger(logger.name)
    level, disabled = underlying.level, underlying.disabled
    underlying.addHandler(handler)
    underlying.setLevel(logging.INFO)
    underlying.disabled = False
    yield stream
    underlying.removeHandler(handler)
    underlying.setLevel(level)
    underlying.disabled = disabled


def logged(logs: io.StringIO, message: str) -> dict[str, Any]:
    lines = [json.loads(line) for line in logs.getvalue().splitlines() if line.startswith("{")]
    matching = [line for line in lines if line.get("message") == message]
    logs.seek(0)
    logs.truncate()
    assert len(matching) == 1, message
    found: dict[str, Any] = matching[0]
    return found


def test_an_undo_logs_what_it_undid_under_the_orders_ids(
    account: Account, lambda_context: Any, logs: io.StringIO
) -> None:
    charged(account, lambda_context, RECORD)
    charge = account.charge("ord-1001")
    assert charge is not None
    logs.seek(0)
    logs.truncate()

    assert refund(events.compensation_input(RECORD), lambda_context) == {"status": "REFUNDED"}

    line = logged(logs, "RefundPayment done")
    assert (line["orderId"], line["messageId"]) == ("ord-1001", MESSAGE_ID)
    assert (line["chargeId"], line["amount"]) == (charge["chargeId"], "38.50")


def test_a_compensation_of_an_execution_that_does_not_own_the_order_logs_the_owner(
    account: Account, lambda_context: Any, logs: io.StringIO
) -> None:
    reserved(account, lambda_context, RECORD)
    logs.seek(0)
    logs.truncate()

    outcome = refund(
        events.compensation_input(RECORD, "arn:aws:states:us-east-1:1:execution:saga:copy"), lambda_context
    )

    assert outcome == {"status": "NOTHING_TO_REFUND"}
    line = logged(logs, "this execution does not own the order; nothing to undo (RefundPayment)")
    assert (line["ownedBy"], line["orderId"]) == (MESSAGE_ID, "ord-1001")


def test_an_owner_with_nothing_of_its_own_to_undo_says_so(
    account: Account, lambda_context: Any, logs: io.StringIO
) -> None:
    reserved(account, lambda_context, RECORD)  # owns the order, never charged
    logs.seek(0)
    logs.truncate()

    assert refund(events.compensation_input(RECORD), lambda_context) == {"status": "NOTHING_TO_REFUND"}
    assert logged(logs, "nothing of this attempt to undo (RefundPayment)")["messageId"] == MESSAGE_ID


def test_a_body_naming_no_order_is_logged_as_nothing_to_undo(
    account: Account, lambda_context: Any, logs: io.StringIO
) -> None:
    record = events.sqs_record("not an order")
    assert refund(events.compensation_input(record), lambda_context) == {"status": "NOTHING_TO_REFUND"}
    line = logged(logs, "body names no order; this attempt cannot have done anything to undo")
    assert line["messageId"] == record["messageId"]


@pytest.mark.parametrize("arn", ["", 42, None], ids=["empty", "number", "missing"])
def test_a_task_input_without_a_usable_execution_arn_is_compensation_failed_naming_it(
    account: Account, lambda_context: Any, arn: object
) -> None:
    task_input: dict[str, Any] = {"record": RECORD, "executionArn": arn}
    if arn is None:
        del task_input["executionArn"]
    with pytest.raises(CompensationFailed) as raised:
        refund(task_input, lambda_context)
    assert str(raised.value) == (
        "RefundPayment could not complete: InvalidOrder: task input has no executionArn;"
        " the state machine must pass $$.Execution.Id"
    )


def test_an_owner_whose_reservation_is_gone_still_hands_the_order_over(account: Account, lambda_context: Any) -> None:
    # The owner's ledger row with no reservation of its own (removed by hand, say): the stock cannot be returned,
    # but the order must still pass to COMPENSATED, or no redrive could ever take it over.
    reserved(account, lambda_context, RECORD)
    account.client.delete_item(TableName=account.reservations_table, Key={"orderId": {"S": "ord-1001"}})

    assert release(events.compensation_input(RECORD), lambda_context) == {"status": "NOTHING_TO_RELEASE"}

    row = account.order("ord-1001")
    assert row is not None and (row["status"], row["attemptId"], row["executionArn"]) == (
        "COMPENSATED",
        MESSAGE_ID,
        ARN,
    )
