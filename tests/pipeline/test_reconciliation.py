"""The Reconciler on its own: moto's SQS, SNS and DynamoDB, a scripted Step Functions (the execution as described
and its history, in the shapes DescribeExecution and GetExecutionHistory return) and scripted compensations.

The end-to-end runs (real workflow, real handlers, timeouts and aborts on moto's interpreter) are in
tests/workflow/test_healing.py; these pin each rule of the reconciler against a hand-made history."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError

from fire_and_forget.cli.failures import list_failures
from fire_and_forget.healing.auto_redrive import redrive_due
from fire_and_forget.healing.reconciliation import History, ReconcileBusy, Stage, Verdict
from tests.pipeline.reconciler_account import NOW, drain, events


@pytest.fixture
def aws(reconciler_account: dict[str, Any]) -> dict[str, Any]:
    return reconciler_account

def test_history_names_where_the_execution_stopped_and_what_the_tail_was_given() -> None:
    history = History.from_events(events("ReserveInventory", "ChargePayment", exited=("ReserveInventory",)))
    assert history.failed_state == "ChargePayment"
    tail = History.from_events(events("ReserveInventory", "ClaimFailure", "HandleFailure",
                                       exited=("ReserveInventory", "ClaimFailure"), tail_input={"failure": {}}))
    assert (tail.failed_state, tail.tail_input) == ("HandleFailure", {"failure": {}})


def test_a_timed_out_execution_is_compensated_in_reverse_and_recorded_but_not_announced(aws: dict[str, Any]) -> None:
    arn = aws["sfn"].add("t1", "TIMED_OUT", ["ReserveInventory", "ChargePayment"], error="States.Timeout",
                         exited=("ReserveInventory",))
    result = aws["reconciler"].reconcile(arn, via="event", now=NOW)
    assert result.verdict is Verdict.RECONCILED and result.recorded and not result.announced
    assert [name for name, _payload in aws["compensations"].calls] == ["fn-RefundPayment", "fn-ReleaseInventory"]
    record = json.loads(aws["sfn"].executions[arn]["input"])[0]
    assert all(payload == {"record": record, "executionArn": arn} for _n, payload in aws["compensations"].calls)
    (stored,) = drain(aws["sqs"], aws["dlq"])
    assert stored["kind"] == "fire-and-forget.failure.v1" and stored["record"] == record
    assert stored["failure"]["state"] == "ChargePayment" and stored["failure"]["error"] == "States.Timeout"
    assert stored["manualRepair"] is False
    assert stored["reconciliation"]["status"] == "TIMED_OUT"
    assert stored["reconciliation"]["compensated"] == ["RefundPayment", "ReleaseInventory"]
    assert drain(aws["sqs"], aws["alerts"]) == []  # transient: the redriver retries it, announced if it fails for good


def test_an_aborted_execution_is_announced_once_with_its_final_state(aws: dict[str, Any]) -> None:
    arn = aws["sfn"].add("a1", "ABORTED", ["ReserveInventory", "ChargePayment", "ArrangeShipping"],
                         exited=("ReserveInventory", "ChargePayment"))
    first = aws["reconciler"].reconcile(arn, via="event", now=NOW)
    again = aws["reconciler"].reconcile(arn, via="sweep", now=NOW + timedelta(minutes=15))
    assert (first.verdict, again.verdict) == (Verdict.RECONCILED, Verdict.ALREADY_RECONCILED)
    assert len(drain(aws["sqs"], aws["dlq"])) == 1
    (alert,) = drain(aws["sqs"], aws["alerts"])
    assert alert["Subject"] == "[dev] Order saga aborted in ArrangeShipping"
    card = json.loads(alert["Message"])  # an SQS subscriber gets the `default` text: the chat card
    assert card["metadata"]["additionalContext"]["executionArn"] == arn
    assert card["metadata"]["additionalContext"]["disposition"] == "needs-decision"
    assert len(aws["compensations"].calls) == 3


def test_a_failing_compensation_flags_manual_repair_and_is_announced(aws: dict[str, Any]) -> None:
    aws["compensations"].fail["fn-RefundPayment"] = "RefundRejected"
    arn = aws["sfn"].add("m1", "TIMED_OUT", ["ReserveInventory", "ChargePayment"], exited=("ReserveInventory",))
    result = aws["reconciler"].reconcile(arn, via="event", now=NOW)
    assert result.manual_repair and result.announced
    (stored,) = drain(aws["sqs"], aws["dlq"])
    assert stored["manualRepair"] is True
    assert [c["status"] for c in stored["compensation"]["reconciled"]] == ["FAILED", "COMPENSATED"]
    assert len(drain(aws["sqs"], aws["alerts"])) == 1


def test_a_transiently_failing_compensation_is_retried_later_not_flagged(aws: dict[str, Any]) -> None:
    aws["compensations"].fail["fn-ReleaseInventory"] = "TransientError"
    arn = aws["sfn"].add("r1", "TIMED_OUT", ["ReserveInventory"])
    with pytest.raises(Exception, match="still failing transiently"):
        aws["reconciler"].reconcile(arn, via="event", now=NOW)
    assert drain(aws["sqs"], aws["dlq"]) == []
    del aws["compensations"].fail["fn-ReleaseInventory"]
    later = aws["reconciler"].reconcile(arn, via="event", now=NOW + timedelta(minutes=6))  # the lease lapsed
    assert later.verdict is Verdict.RECONCILED and not later.manual_repair
    assert len(drain(aws["sqs"], aws["dlq"])) == 1


def test_a_run_that_crashed_after_recording_resumes_and_does_not_record_twice(aws: dict[str, Any]) -> None:
    arn = aws["sfn"].add("c1", "ABORTED", ["ReserveInventory"])
    reconciler = aws["reconciler"]
    original = reconciler._sns.publish

    def refuse(**_kwargs: Any) -> None:
        raise ClientError({"Error": {"Code": "InternalError"}}, "Publish")

    reconciler._sns.publish = refuse
    with pytest.raises(ClientError):
        reconciler.reconcile(arn, via="event", now=NOW)
    reconciler._sns.publish = original
    # The failed run released its lease: the redelivery resumes at once, from RECORDED.
    resumed = reconciler.reconcile(arn, via="event", now=NOW + timedelta(seconds=1))
    assert resumed.verdict is Verdict.RECONCILED and resumed.announced and not resumed.recorded
    assert len(drain(aws["sqs"], aws["dlq"])) == 1
    assert len(drain(aws["sqs"], aws["alerts"])) == 1
    assert len(aws["compensations"].calls) == 1  # not compensated again


def test_a_run_holding_the_lease_keeps_a_second_one_out_until_it_lapses(aws: dict[str, Any]) -> None:
    arn = aws["sfn"].add("b1", "ABORTED", ["ReserveInventory"])
    aws["reconciler"]._claim("msg-b1", arn, NOW)  # another run took the row and is still working (or crashed)
    with pytest.raises(ReconcileBusy):
        aws["reconciler"].reconcile(arn, via="sweep", now=NOW + timedelta(minutes=4))
    assert aws["reconciler"].reconcile(arn, via="sweep", now=NOW + timedelta(minutes=6)).verdict is Verdict.RECONCILED


def test_a_message_another_execution_owns_is_left_alone(aws: dict[str, Any]) -> None:
    owner = aws["sfn"].add("o1", "SUCCEEDED", ["ReserveInventory"], message_id="shared")
    twin = aws["sfn"].add("o2", "TIMED_OUT", ["ReserveInventory"], message_id="shared")
    aws["dynamodb"].put_item(TableName="deliveries", Item={"messageId": {"S": "shared"},
                                                           "executionArn": {"S": owner}})
    assert aws["reconciler"].reconcile(twin, via="event", now=NOW).verdict is Verdict.NOT_OWNER
    assert aws["reconciler"].reconcile(owner, via="event", now=NOW).verdict is Verdict.NOT_FAILED
    assert drain(aws["sqs"], aws["dlq"]) == [] and aws["compensations"].calls == []


def test_what_the_failure_tail_recorded_is_not_reconciled(aws: dict[str, Any]) -> None:
    arn = aws["sfn"].add("h1", "FAILED", ["ReserveInventory", "ClaimFailure", "HandleFailure"],
                         error="FailureRecorded")
    assert aws["reconciler"].reconcile(arn, via="sweep", now=NOW).verdict is Verdict.HANDLED


def test_died_in_notify_failure_is_announced_from_the_tails_own_description_without_a_second_record(
        aws: dict[str, Any]) -> None:
    tail = {"failure": {"state": "ReserveInventory", "error": "OutOfStock", "cause": "sold out"},
            "compensation": {"required": False}, "manualRepair": False}
    arn = aws["sfn"].add("n1", "FAILED", ["ReserveInventory", "ClaimFailure", "HandleFailure", "NotifyFailure"],
                         error="SNS.InternalErrorException", tail_input=tail,
                         exited=("ClaimFailure", "HandleFailure"))
    result = aws["reconciler"].reconcile(arn, via="event", now=NOW)
    assert result.announced and not result.recorded and aws["compensations"].calls == []
    assert drain(aws["sqs"], aws["dlq"]) == []
    (alert,) = drain(aws["sqs"], aws["alerts"])
    assert alert["Subject"] == "[dev] Order saga failed in ReserveInventory"


def test_died_in_handle_failure_writes_the_record_the_tail_could_not(aws: dict[str, Any]) -> None:
    tail = {"failure": {"state": "ChargePayment", "error": "TransientError", "cause": "throttled"},
            "compensation": {"required": True, "refundPayment": {}}, "manualRepair": False}
    arn = aws["sfn"].add("d1", "FAILED", ["ReserveInventory", "ChargePayment", "ClaimFailure", "HandleFailure"],
                         error="SQS.KmsThrottled", tail_input=tail, exited=("ReserveInventory", "ClaimFailure"))
    result = aws["reconciler"].reconcile(arn, via="event", now=NOW)
    (stored,) = drain(aws["sqs"], aws["dlq"])
    assert stored["failure"]["error"] == "TransientError" and stored["reconciliation"]["status"] == "FAILED"
    assert result.recorded and not result.announced  # transient: waits for the redriver


def test_a_crash_between_the_record_and_its_row_writes_a_second_record_which_the_readers_absorb(
        aws: dict[str, Any]) -> None:
    arn = aws["sfn"].add("x1", "TIMED_OUT", ["ReserveInventory"], error="States.Timeout")
    reconciler, advance = aws["reconciler"], aws["reconciler"]._advance

    def die_before_recorded(message_id: str, execution_arn: str, stage: Stage, **kwargs: Any) -> None:
        if stage is Stage.RECORDED:
            raise SystemExit("the function's process ended")  # after SendMessage, before the row says RECORDED
        advance(message_id, execution_arn, stage, **kwargs)

    reconciler._advance = die_before_recorded
    with pytest.raises(SystemExit):
        reconciler.reconcile(arn, via="event", now=NOW)
    reconciler._advance = advance
    again = reconciler.reconcile(arn, via="sweep", now=NOW + timedelta(minutes=6))  # after the lease
    assert again.recorded and not again.announced  # the row said CLAIMED: the record was written again
    listing = list_failures(aws["sqs"], aws["dlq"], wait_seconds=0)
    (one,) = listing.records
    assert listing.read == 2 and one.execution_arn == arn and len(one.copies) == 1
    report = redrive_due(aws["sqs"], dlq_url=aws["dlq"], source_url=aws["source"], policy=reconciler._policy,
                         now=NOW + timedelta(days=1), key_field="orderId")
    assert report.redriven == 1 and drain(aws["sqs"], aws["dlq"]) == []
    assert len(drain(aws["sqs"], aws["source"])) == 1


def test_the_sweep_lists_what_stopped_inside_its_window_only(aws: dict[str, Any]) -> None:
    recent = aws["sfn"].add("s1", "TIMED_OUT", ["ReserveInventory"], stopped=NOW - timedelta(minutes=30))
    aws["sfn"].add("s2", "ABORTED", ["ReserveInventory"], stopped=NOW - timedelta(hours=8))
    aws["sfn"].add("s3", "SUCCEEDED", ["ReserveInventory"], stopped=NOW - timedelta(minutes=5))
    found = list(aws["reconciler"].sweep(NOW, timedelta(hours=6), timedelta(hours=1)))
    assert found == [recent]
