"""The Reconciler rule by rule, on its test account (tests/pipeline/reconciler_account.py: moto's SQS, SNS and
DynamoDB, a scripted Step Functions and scripted compensations): its settings from the environment; what a history
says; the failure it describes for each way an execution ends; the record it writes, field by field; how it retries a
compensation and when it gives up; the message's row through CLAIMED, RECORDED and ANNOUNCED, its lease to the second;
and a resumed run's announcement, from what the crashed run stored."""

from __future__ import annotations

import io
import json
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from botocore.exceptions import ClientError

from fire_and_forget.healing.reconciliation import (
    IN_FLIGHT_MARGIN,
    LEASE_SECONDS,
    MAX_CAUSE_CHARS,
    Compensation,
    CompensationRetryable,
    History,
    InFlight,
    NotYetSettled,
    ReconcileBusy,
    Reconciler,
    ReconcilerSettings,
    Stage,
    Verdict,
    event_time,
)
from tests.pipeline.reconciler_account import MACHINE, NOW, RETRIED, drain, events


@pytest.fixture
def aws(reconciler_account: dict[str, Any]) -> dict[str, Any]:
    return reconciler_account


def row(aws: dict[str, Any], message_id: str) -> dict[str, Any]:
    return aws["dynamodb"].get_item(TableName="deliveries", Key={"messageId": {"S": message_id}},
                                    ConsistentRead=True).get("Item", {})


def records(aws: dict[str, Any]) -> list[dict[str, Any]]:
    """The failure DLQ's messages: body and message attributes."""
    found = []
    while batch := aws["sqs"].receive_message(QueueUrl=aws["dlq"], MaxNumberOfMessages=10,
                                              MessageAttributeNames=["All"]).get("Messages", []):
        for message in batch:
            found.append({"body": json.loads(message["Body"]), "attributes": message.get("MessageAttributes", {})})
            aws["sqs"].delete_message(QueueUrl=aws["dlq"], ReceiptHandle=message["ReceiptHandle"])
    return found


def published(aws: dict[str, Any]) -> list[dict[str, Any]]:
    """Capture what the Reconciler asks SNS to publish (each call's arguments), still publishing it."""
    sent: list[dict[str, Any]] = []
    sns = aws["reconciler"]._sns
    publish = sns.publish

    def capture(**kwargs: Any) -> Any:
        sent.append(kwargs)
        return publish(**kwargs)

    sns.publish = capture
    return sent


# -- settings ---------------------------------------------------------------------------------------------------------

ENVIRONMENT = {
    "PIPELINE_NAME": "orders", "ENVIRONMENT_NAME": "prod", "WORKFLOW_TITLE": "Order saga", "AWS_REGION": "eu-west-1",
    "STATE_MACHINE_ARN": MACHINE, "FAILURE_DLQ_URL": "https://sqs/dlq", "ALERTS_TOPIC_ARN": "arn:aws:sns:topic",
    "DELIVERIES_TABLE_NAME": "deliveries", "DELIVERY_CLAIM_TTL_SECONDS": "1296000",
}


def test_the_settings_are_read_from_the_functions_environment() -> None:
    full = ENVIRONMENT | {
        "COMPENSATIONS": json.dumps([["ChargePayment", "RefundPayment", "arn:fn:refund"],
                                     ["ReserveInventory", "ReleaseInventory", "arn:fn:release"]]),
        "TASK_TIMEOUTS": json.dumps({"ChargePayment": 25, "ReserveInventory": "30"}),
        "COMPENSATION_ATTEMPTS": "5", "COMPENSATION_BACKOFF_SECONDS": "0.5"}
    assert ReconcilerSettings.from_environment(full) == ReconcilerSettings(
        pipeline="orders", environment="prod", title="Order saga", region="eu-west-1", state_machine_arn=MACHINE,
        failure_dlq_url="https://sqs/dlq", alerts_topic_arn="arn:aws:sns:topic", deliveries_table="deliveries",
        compensations=(Compensation("ChargePayment", "RefundPayment", "arn:fn:refund"),
                       Compensation("ReserveInventory", "ReleaseInventory", "arn:fn:release")),
        claim_ttl_seconds=1296000, task_timeouts={"ChargePayment": 25, "ReserveInventory": 30},
        compensation_attempts=5, compensation_backoff_seconds=0.5)


def test_the_optional_settings_have_their_defaults() -> None:
    settings = ReconcilerSettings.from_environment(ENVIRONMENT)
    assert (settings.compensations, settings.task_timeouts) == ((), {})
    assert (settings.compensation_attempts, settings.compensation_backoff_seconds) == (3, 1.0)


# -- the history ------------------------------------------------------------------------------------------------------

def test_the_failed_state_is_the_last_entered_and_never_left() -> None:
    assert History.from_events(events("A", "B", "C", exited=("A", "C"))).failed_state == "B"
    assert History.from_events(events("A", "B", exited=("A", "B"))).failed_state == "B"  # all left: the last
    assert History.from_events(events()).failed_state is None


def test_the_tail_input_is_what_the_tail_was_first_entered_with() -> None:
    history = [{"type": "ExecutionStarted"},
               {"type": "TaskStateEntered", "stateEnteredEventDetails": {"name": "ChargePayment", "input": "{}"}},
               {"type": "TaskStateEntered",
                "stateEnteredEventDetails": {"name": "ClaimFailure", "input": '{"failure": {"error": "first"}}'}},
               {"type": "TaskStateEntered",
                "stateEnteredEventDetails": {"name": "HandleFailure", "input": '{"failure": {"error": "second"}}'}}]
    assert History.from_events(history).tail_input == {"failure": {"error": "first"}}
    handle_only = [history[0], {"type": "TaskStateEntered", "stateEnteredEventDetails": {
        "name": "HandleFailure", "input": '{"failure": {"error": "handle"}}'}}]
    assert History.from_events(handle_only).tail_input == {"failure": {"error": "handle"}}
    for text in ("not json", '["a list"]', None):
        broken = [history[0], {"type": "TaskStateEntered",
                               "stateEnteredEventDetails": {"name": "ClaimFailure", "input": text}}]
        assert History.from_events(broken).tail_input is None
    assert History.from_events(history[:2]).tail_input is None


def _event(event_id: int, kind: str, previous: int, when: datetime | None = None, **details: Any) -> dict[str, Any]:
    return {"id": event_id, "previousEventId": previous, "type": kind, "timestamp": when or NOW, **details}


@pytest.mark.parametrize("prefix", ["Task", "LambdaFunction", "Activity"])
def test_a_task_of_every_kind_is_in_flight_from_its_last_opening_until_its_ending(prefix: str) -> None:
    started = NOW + timedelta(seconds=3)
    running = [_event(1, "ExecutionStarted", 0),
               _event(2, "TaskStateEntered", 1, stateEnteredEventDetails={"name": "ChargePayment"}),
               _event(3, f"{prefix}Scheduled", 2),
               _event(4, f"{prefix}Started", 3, started)]
    (task,) = History.from_events(running).in_flight
    assert task == InFlight("ChargePayment", started)
    for ending in ("Succeeded", "Failed", "TimedOut", "StartFailed", "ScheduleFailed", "SubmitFailed"):
        ended = [*running, _event(5, f"{prefix}{ending}", 4)]
        assert History.from_events(ended).in_flight == (), ending


def test_a_task_only_scheduled_is_in_flight_and_state_events_are_not_tasks() -> None:
    history = [_event(1, "ExecutionStarted", 0),
               _event(2, "TaskStateEntered", 1, stateEnteredEventDetails={"name": "ReserveInventory"}),
               _event(3, "TaskScheduled", 2),
               _event(4, "TaskStateAborted", 3),
               _event(5, "TaskSubmitted", 4)]
    assert History.from_events(history).in_flight == (InFlight("ReserveInventory", NOW),)


def test_an_ending_closes_only_the_task_it_follows() -> None:
    # Given a Lambda task started, and an ending whose opening the history does not show
    history = [_event(1, "ExecutionStarted", 0),
               _event(2, "TaskStateEntered", 1, stateEnteredEventDetails={"name": "ChargePayment"}),
               _event(3, "LambdaFunctionScheduled", 2), _event(4, "LambdaFunctionStarted", 3),
               _event(5, "LambdaFunctionFailed", 99)]
    # When the history is read, Then the started task is still in flight
    assert History.from_events(history).in_flight == (InFlight("ChargePayment", NOW),)


def test_a_task_event_whose_chain_leads_to_no_state_belongs_to_no_known_state() -> None:
    orphan = [_event(1, "ExecutionStarted", 0), _event(7, "TaskScheduled", 1, NOW)]
    assert History.from_events(orphan).in_flight == (InFlight("?", NOW),)
    loop = [_event(3, "TaskScheduled", 4), _event(4, "TaskSubmitted", 3)]  # a chain that never ends in a state
    assert [task.state for task in History.from_events(loop).in_flight] == ["?"]


def test_the_state_of_a_task_is_found_back_through_the_events_between() -> None:
    history = [_event(1, "ExecutionStarted", 0),
               _event(2, "TaskStateEntered", 1, stateEnteredEventDetails={"name": "ArrangeShipping"}),
               _event(3, "MapStateStarted", 2), _event(4, "WaitStateEntered", 3, stateEnteredEventDetails={}),
               _event(5, "TaskScheduled", 2)]
    assert [task.state for task in History.from_events(history).in_flight] == ["ArrangeShipping"]


def test_events_missing_their_details_are_read_without_failing() -> None:
    """A state event without its details names no state ("None"), a task event without a timestamp is refused."""
    history = [_event(1, "ExecutionStarted", 0), {"id": 2, "previousEventId": 1, "type": "TaskStateEntered"},
               _event(3, "TaskScheduled", 2), {"id": 4, "previousEventId": 3, "type": "TaskStateExited"},
               {"id": 5, "previousEventId": 4}]
    read = History.from_events(history)
    assert (read.entered, read.exited, read.in_flight) == (("None",), frozenset({"None"}), (InFlight("None", NOW),))


def test_the_history_settles_when_the_last_invocation_in_flight_has_certainly_ended() -> None:
    first, second = NOW, NOW + timedelta(seconds=5)
    history = History(("A", "B"), frozenset(), None, (InFlight("A", first), InFlight("B", second)))
    assert history.settles_at({"A": 100, "B": 10}) == first + timedelta(seconds=100) + IN_FLIGHT_MARGIN
    assert history.settles_at({"A": 1, "B": 10}) == second + timedelta(seconds=10) + IN_FLIGHT_MARGIN
    assert history.settles_at({}) == second + IN_FLIGHT_MARGIN
    assert timedelta(seconds=60) == IN_FLIGHT_MARGIN


# -- the failure it describes and the record it writes ---------------------------------------------------------------

def test_the_record_of_a_timed_out_execution_field_by_field(aws: dict[str, Any]) -> None:
    stopped = datetime(2026, 12, 1, 13, 30, 15, 987654, tzinfo=timezone(timedelta(hours=1)))  # 12:30:15.987 UTC
    arn = aws["sfn"].add("t1", "TIMED_OUT", ["ReserveInventory", "ChargePayment"], exited=("ReserveInventory",),
                         stopped=stopped)
    aws["sfn"].executions[arn]["redriveCount"] = 0
    now = NOW + timedelta(hours=1, microseconds=5_000)
    aws["reconciler"].reconcile(arn, via="sweep", now=now)
    ((stored,),) = [records(aws)]
    body = stored["body"]
    reason = ("The execution timed out in ChargePayment; the steps it had entered were compensated by the "
              "reconciler.")
    assert body == {
        "kind": "fire-and-forget.failure.v1", "pipeline": "orders",
        "record": json.loads(aws["sfn"].executions[arn]["input"])[0],
        "failure": {"state": "ChargePayment", "error": "States.Timeout", "cause": "cause of t1"},
        "compensation": {"required": True, "reconciled": [
            {"state": "RefundPayment", "status": "COMPENSATED", "result": {"undone": True}},
            {"state": "ReleaseInventory", "status": "COMPENSATED", "result": {"undone": True}}]},
        "manualRepair": False, "executionArn": arn, "stateMachineArn": MACHINE,
        "failedAt": "2026-12-01T12:30:15.987Z",
        "reconciliation": {"status": "TIMED_OUT", "via": "sweep", "reconciledAt": "2026-12-01T13:00:00.005Z",
                           "reason": reason, "compensated": ["RefundPayment", "ReleaseInventory"]},
    }
    assert stored["attributes"] == {"error": {"StringValue": "States.Timeout", "DataType": "String"},
                                    "failedState": {"StringValue": "ChargePayment", "DataType": "String"}}


@pytest.mark.parametrize(("status", "error", "expected_error", "reason"), [
    ("TIMED_OUT", None, "States.Timeout", "The execution timed out in ChargePayment; the steps it had entered were "
                                          "compensated by the reconciler."),
    ("ABORTED", None, "Aborted", "The execution was stopped in ChargePayment; the steps it had entered were "
                                 "compensated by the reconciler."),
    ("FAILED", None, "Failed", "The execution failed in ChargePayment outside the failure tail's record; reconciled."),
    ("FAILED", "States.Runtime", "States.Runtime", "The execution failed in ChargePayment outside the failure tail's "
                                                   "record; reconciled."),
])
def test_an_execution_without_the_tails_description_is_described_from_how_it_ended(
        aws: dict[str, Any], status: str, error: str | None, expected_error: str, reason: str) -> None:
    arn = aws["sfn"].add("e1", status, ["ChargePayment"], error=error)
    aws["sfn"].executions[arn]["cause"] = None
    aws["reconciler"].reconcile(arn, via="event", now=NOW)
    ((stored,),) = [records(aws)]
    assert stored["body"]["failure"] == {"state": "ChargePayment", "error": expected_error, "cause": reason}
    assert stored["body"]["reconciliation"]["reason"] == reason


def test_an_execution_stopped_before_its_first_state_is_recorded_as_such(aws: dict[str, Any]) -> None:
    arn = aws["sfn"].add("e0", "ABORTED", [])
    aws["sfn"].executions[arn]["cause"] = None
    result = aws["reconciler"].reconcile(arn, via="event", now=NOW)
    ((stored,),) = [records(aws)]
    text = ("The execution was stopped in before its first state; the steps it had entered were compensated by the "
            "reconciler.")
    assert stored["body"]["failure"] == {"state": "?", "error": "Aborted", "cause": text}
    assert stored["body"]["compensation"] == {"required": False, "reconciled": []}
    assert stored["attributes"]["failedState"]["StringValue"] == "?"
    assert result.compensated == [] and aws["compensations"].calls == []


def test_a_record_of_an_execution_without_a_stop_date_is_dated_now_in_utc_whatever_the_machines_zone(
        aws: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    arn = aws["sfn"].add("u1", "ABORTED", ["ReserveInventory"])
    del aws["sfn"].executions[arn]["stopDate"]
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        before = datetime.now(UTC).replace(microsecond=0)
        aws["reconciler"].reconcile(arn, via="event", now=NOW)
        after = datetime.now(UTC)
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
    ((stored,),) = [records(aws)]
    assert before <= datetime.fromisoformat(stored["body"]["failedAt"]) <= after


def test_a_tail_description_missing_its_error_and_state_is_recorded_with_question_marks(aws: dict[str, Any]) -> None:
    arn = aws["sfn"].add("q1", "FAILED", ["ChargePayment", "ClaimFailure", "HandleFailure"], error="SQS.Throttled",
                         tail_input={"failure": {"cause": "partial"}}, exited=("ChargePayment", "ClaimFailure"))
    aws["reconciler"].reconcile(arn, via="event", now=NOW)
    ((stored,),) = [records(aws)]
    assert stored["attributes"] == {"error": {"StringValue": "?", "DataType": "String"},
                                    "failedState": {"StringValue": "?", "DataType": "String"}}
    assert stored["body"]["failure"] == {"cause": "partial"}


def test_the_tails_description_is_kept_and_its_manual_repair_flag_read_as_the_json_true(aws: dict[str, Any]) -> None:
    for name, flag, manual in (("k1", True, True), ("k2", "true", False)):
        tail = {"failure": {"state": "ChargePayment", "error": "PaymentDeclined", "cause": "no"},
                "compensation": {"required": True}, "manualRepair": flag}
        arn = aws["sfn"].add(name, "FAILED", ["ChargePayment", "ClaimFailure"], error="DynamoDB.Throttled",
                             tail_input=tail)
        result = aws["reconciler"].reconcile(arn, via="event", now=NOW)
        assert result.manual_repair is manual
    stored = {r["body"]["executionArn"].rsplit(":", 1)[1]: r["body"] for r in records(aws)}
    assert stored["k1"]["failure"] == {"state": "ChargePayment", "error": "PaymentDeclined", "cause": "no"}
    assert (stored["k1"]["manualRepair"], stored["k2"]["manualRepair"]) == (True, False)


def test_a_tail_input_without_a_failure_is_described_from_the_execution(aws: dict[str, Any]) -> None:
    arn = aws["sfn"].add("w1", "FAILED", ["ChargePayment", "ClaimFailure"], error="States.Runtime",
                         tail_input={"failure": "not an object"})
    aws["reconciler"].reconcile(arn, via="event", now=NOW)
    ((stored,),) = [records(aws)]
    assert stored["body"]["failure"]["error"] == "States.Runtime"
    assert stored["body"]["failure"]["state"] == "ClaimFailure"


def test_an_input_that_is_not_the_pipes_batch_is_refused(aws: dict[str, Any]) -> None:
    arn = aws["sfn"].add("i1", "ABORTED", ["ReserveInventory"])
    for text in ("{}", "[]", "[5]", '[{"messageId": 5}]', "not json"):
        aws["sfn"].executions[arn]["input"] = text
        with pytest.raises(ValueError, match=f"^{arn}: its input is not the pipe's batch of one SQS record$"):
            aws["reconciler"].reconcile(arn, via="event", now=NOW)
    assert records(aws) == []


# -- compensations ----------------------------------------------------------------------------------------------------

class Invocations:
    """Lambda Invoke answering from a script per function: a ClientError code, a FunctionError body, or a result."""

    def __init__(self, script: dict[str, list[Any]]) -> None:
        self.script = script
        self.calls: list[str] = []

    def invoke(self, FunctionName: str, Payload: bytes) -> dict[str, Any]:  # noqa: N803 - boto3's names
        self.calls.append(FunctionName)
        answers = self.script.get(FunctionName, [])
        answer = answers.pop(0) if answers else {"done": True}
        if isinstance(answer, ClientError):
            raise answer
        if isinstance(answer, tuple):  # (FunctionError, payload text)
            return {"FunctionError": answer[0], "Payload": io.BytesIO(answer[1].encode())}
        return {"Payload": io.BytesIO(json.dumps(answer).encode() if answer is not None else b"")}


def throttled() -> ClientError:
    return ClientError({"Error": {"Code": "TooManyRequestsException", "Message": "Rate exceeded"},
                        "ResponseMetadata": {"HTTPStatusCode": 429}}, "Invoke")


def reconciler_with(aws: dict[str, Any], lambda_client: Any, sleeps: list[float], **changes: Any) -> Reconciler:
    base: Reconciler = aws["reconciler"]
    return Reconciler(sfn=aws["sfn"], dynamodb=aws["dynamodb"], sqs=aws["sqs"], sns=base._sns,
                      lambda_client=lambda_client, settings=replace(base._settings, **changes),
                      policy=base._policy, sleep=sleeps.append)


def test_a_throttled_compensation_is_retried_with_doubling_backoff_then_left_to_a_later_run(
        aws: dict[str, Any]) -> None:
    invocations = Invocations({"fn-ReleaseInventory": [throttled(), throttled(), throttled(), throttled()]})
    sleeps: list[float] = []
    reconciler = reconciler_with(aws, invocations, sleeps, compensation_backoff_seconds=1.5)
    arn = aws["sfn"].add("c1", "ABORTED", ["ReserveInventory"])
    with pytest.raises(CompensationRetryable) as retry:
        reconciler.reconcile(arn, via="event", now=NOW)
    assert invocations.calls == ["fn-ReleaseInventory"] * 3 and sleeps == [1.5, 3.0]
    assert str(retry.value).startswith("ReleaseInventory still failing transiently: {'error': "
                                       "'TooManyRequestsException', 'cause': ")
    assert records(aws) == []
    # The row stays claimed and the lease is let go: the redelivery retries at once, and then compensates
    assert row(aws, "msg-c1")["reconciliation"]["S"] == "CLAIMED" and "reconcileLeaseUntil" not in row(aws, "msg-c1")
    result = reconciler.reconcile(arn, via="event", now=NOW + timedelta(seconds=1))
    assert result.compensated == [{"state": "ReleaseInventory", "status": "COMPENSATED", "result": {"done": True}}]


def test_a_compensation_still_throttled_names_its_last_error_and_what_aws_said(aws: dict[str, Any]) -> None:
    # Given a release that is throttled on every attempt
    invocations = Invocations({"fn-ReleaseInventory": [throttled(), throttled(), throttled()]})
    reconciler = reconciler_with(aws, invocations, [])
    arn = aws["sfn"].add("c4", "ABORTED", ["ReserveInventory"])
    # When the reconcile gives up on it for this run
    with pytest.raises(CompensationRetryable) as retry:
        reconciler.reconcile(arn, via="event", now=NOW)
    # Then the retry's reason is the last error: its code and AWS's own text
    assert str(retry.value) == (
        "ReleaseInventory still failing transiently: {'error': 'TooManyRequestsException', 'cause': "
        "'An error occurred (TooManyRequestsException) when calling the Invoke operation: Rate exceeded'}")


def test_the_number_of_attempts_is_the_settings(aws: dict[str, Any]) -> None:
    invocations = Invocations({"fn-ReleaseInventory": [throttled(), throttled()]})
    sleeps: list[float] = []
    reconciler = reconciler_with(aws, invocations, sleeps, compensation_attempts=2, compensation_backoff_seconds=2)
    arn = aws["sfn"].add("c2", "ABORTED", ["ReserveInventory"])
    with pytest.raises(CompensationRetryable):
        reconciler.reconcile(arn, via="event", now=NOW)
    assert invocations.calls == ["fn-ReleaseInventory"] * 2 and sleeps == [2]


def test_a_compensation_that_succeeds_on_a_retry_is_compensated(aws: dict[str, Any]) -> None:
    invocations = Invocations({"fn-ReleaseInventory": [("Unhandled", '{"errorType": "TransientError"}'), None]})
    sleeps: list[float] = []
    reconciler = reconciler_with(aws, invocations, sleeps, compensation_backoff_seconds=1.0)
    arn = aws["sfn"].add("c3", "ABORTED", ["ReserveInventory"])
    result = reconciler.reconcile(arn, via="event", now=NOW)
    assert result.compensated == [{"state": "ReleaseInventory", "status": "COMPENSATED", "result": None}]
    assert sleeps == [1.0] and not result.manual_repair


@pytest.mark.parametrize(("answer", "failed"), [
    (ClientError({"Error": {"Code": "ResourceNotFoundException", "Message": "no such function"}}, "Invoke"),
     {"error": "ResourceNotFoundException",
      "cause": "An error occurred (ResourceNotFoundException) when calling the Invoke operation: no such function"}),
    (("Unhandled", '{"errorType": "RefundRejected", "errorMessage": "closed account"}'),
     {"error": "RefundRejected", "cause": "closed account"}),
    (("Unhandled", '"a string, not an object"'), {"error": "Unhandled", "cause": ""}),
    (("Unhandled", ""), {"error": "Unhandled", "cause": ""}),
    (("Unhandled", '{"errorMessage": "no type"}'), {"error": "Unhandled", "cause": "no type"}),
], ids=["client error", "function error", "error body not an object", "empty error body", "no error type"])
def test_a_compensation_that_fails_for_good_is_recorded_failed_and_flags_a_manual_repair(
        aws: dict[str, Any], answer: Any, failed: dict[str, str]) -> None:
    invocations = Invocations({"fn-RefundPayment": [answer]})
    sleeps: list[float] = []
    reconciler = reconciler_with(aws, invocations, sleeps)
    arn = aws["sfn"].add("f1", "TIMED_OUT", ["ReserveInventory", "ChargePayment"])
    result = reconciler.reconcile(arn, via="event", now=NOW)
    assert result.compensated == [{"state": "RefundPayment", "status": "FAILED", **failed},
                                  {"state": "ReleaseInventory", "status": "COMPENSATED", "result": {"done": True}}]
    assert result.manual_repair and result.announced and sleeps == []
    assert invocations.calls == ["fn-RefundPayment", "fn-ReleaseInventory"]


def test_a_transient_error_of_another_compensation_is_not_retried_here(aws: dict[str, Any]) -> None:
    """Whether a FunctionError is retried is the compensation state's own Retry (the policy's transient errors)."""
    base: Reconciler = aws["reconciler"]
    only_refund = {"RefundPayment": frozenset({"RefundBusy"})}
    invocations = Invocations({"fn-ReleaseInventory": [("Unhandled", '{"errorType": "RefundBusy"}')]})
    reconciler = Reconciler(sfn=aws["sfn"], dynamodb=aws["dynamodb"], sqs=aws["sqs"], sns=base._sns,
                            lambda_client=invocations, settings=base._settings,
                            policy=replace(base._policy, transient_errors=only_refund), sleep=lambda _s: None)
    arn = aws["sfn"].add("f2", "ABORTED", ["ReserveInventory"])
    result = reconciler.reconcile(arn, via="event", now=NOW)
    assert [c["status"] for c in result.compensated] == ["FAILED"] and invocations.calls == ["fn-ReleaseInventory"]


def test_each_compensation_is_invoked_with_the_record_and_the_execution(aws: dict[str, Any]) -> None:
    arn = aws["sfn"].add("p1", "ABORTED", ["ReserveInventory", "ChargePayment", "ArrangeShipping"])
    aws["reconciler"].reconcile(arn, via="event", now=NOW)
    record = json.loads(aws["sfn"].executions[arn]["input"])[0]
    assert aws["compensations"].calls == [(f"fn-{name}", {"record": record, "executionArn": arn})
                                          for name in ("CancelShipment", "RefundPayment", "ReleaseInventory")]


# -- the message's row ------------------------------------------------------------------------------------------------

def test_a_reconciled_rows_life_ends_announced_without_a_lease_and_with_its_summary(aws: dict[str, Any]) -> None:
    arn = aws["sfn"].add("r1", "ABORTED", ["ReserveInventory"])
    aws["reconciler"].reconcile(arn, via="event", now=NOW)
    item = row(aws, "msg-r1")
    assert item["reconciliation"]["S"] == "ANNOUNCED" and item["executionArn"]["S"] == arn
    assert "reconcileLeaseUntil" not in item
    assert item["expiresAt"]["N"] == str(int(NOW.timestamp()) + 3600)
    assert json.loads(item["summary"]["S"]) == {
        "failure": {"state": "ReserveInventory", "error": "Aborted", "cause": "cause of r1"},
        "manualRepair": False,
        "compensated": [{"state": "ReleaseInventory", "status": "COMPENSATED", "result": {"undone": True}}],
        "status": "ABORTED"}  # the execution's, for a caller reading the message's status (runtime/status.py)


def test_a_second_run_while_the_first_announces_is_kept_out_by_the_lease(aws: dict[str, Any]) -> None:
    """The row is RECORDED while the alert is published: the lease still holds it, so a second run (the sweep
    meeting the event's run) cannot announce the same execution again."""
    # Given a run that, while it publishes, meets a second run of the same execution
    arn = aws["sfn"].add("r5", "ABORTED", ["ReserveInventory"])
    reconciler: Reconciler = aws["reconciler"]
    publish = reconciler._sns.publish
    sent: list[str] = []
    second: list[BaseException] = []

    def publish_meeting_a_second_run(**kwargs: Any) -> Any:
        sent.append(kwargs["Subject"])
        if len(sent) == 1:
            assert row(aws, "msg-r5")["reconciliation"]["S"] == "RECORDED"
            try:
                reconciler.reconcile(arn, via="sweep", now=NOW + timedelta(seconds=1))
            except ReconcileBusy as busy:
                second.append(busy)
        return publish(**kwargs)

    reconciler._sns.publish = publish_meeting_a_second_run
    # When the first run announces
    first = reconciler.reconcile(arn, via="event", now=NOW)
    # Then the second run was refused, the alert went out once, and the finished row holds no lease
    assert first.announced and len(second) == 1 and len(sent) == 1
    item = row(aws, "msg-r5")
    assert item["reconciliation"]["S"] == "ANNOUNCED" and "reconcileLeaseUntil" not in item


def test_a_claimed_row_keeps_its_expiry_and_a_later_run_holds_a_five_minute_lease(aws: dict[str, Any]) -> None:
    arn = aws["sfn"].add("r2", "ABORTED", ["ReserveInventory"])
    aws["dynamodb"].put_item(TableName="deliveries", Item={"messageId": {"S": "msg-r2"}, "executionArn": {"S": arn},
                                                           "expiresAt": {"N": "42"}})
    assert LEASE_SECONDS == 300
    claimed = aws["reconciler"]._claim("msg-r2", arn, NOW)
    assert claimed == {"messageId": "msg-r2", "executionArn": arn, "expiresAt": 42, "reconciliation": "CLAIMED",
                       "reconcileLeaseUntil": int(NOW.timestamp()) + 300}


def test_the_lease_keeps_a_second_run_out_to_its_last_second(aws: dict[str, Any]) -> None:
    arn = aws["sfn"].add("r3", "ABORTED", ["ReserveInventory"])
    aws["reconciler"]._claim("msg-r3", arn, NOW)
    with pytest.raises(ReconcileBusy, match="is being reconciled by another run"):
        aws["reconciler"].reconcile(arn, via="sweep", now=NOW + timedelta(seconds=LEASE_SECONDS))
    result = aws["reconciler"].reconcile(arn, via="sweep", now=NOW + timedelta(seconds=LEASE_SECONDS + 1))
    assert result.verdict is Verdict.RECONCILED and result.recorded


def test_a_run_that_finds_the_work_done_does_nothing_more(aws: dict[str, Any]) -> None:
    arn = aws["sfn"].add("r4", "ABORTED", ["ReserveInventory"])
    first = aws["reconciler"].reconcile(arn, via="event", now=NOW)
    assert first.recorded and first.announced
    sent = published(aws)
    again = aws["reconciler"].reconcile(arn, via="event", now=NOW)  # within the lease: the row says ANNOUNCED
    assert (again.verdict, again.message_id, again.status) == (Verdict.ALREADY_RECONCILED, "msg-r4", "ABORTED")
    assert not again.recorded and not again.announced and sent == []
    assert len(records(aws)) == 1 and len(aws["compensations"].calls) == 1


def test_a_message_another_execution_owns_is_marked_settled_for_the_sweep(aws: dict[str, Any]) -> None:
    owner = aws["sfn"].add("o1", "SUCCEEDED", ["ReserveInventory"], message_id="shared")
    twin = aws["sfn"].add("o2", "ABORTED", ["ReserveInventory"], message_id="shared")
    aws["dynamodb"].put_item(TableName="deliveries", Item={"messageId": {"S": "shared"},
                                                           "executionArn": {"S": owner}})
    result = aws["reconciler"].reconcile(twin, via="event", now=NOW)
    assert (result.verdict, result.message_id, result.status) == (Verdict.NOT_OWNER, "shared", "ABORTED")
    assert list(aws["reconciler"].sweep(NOW, timedelta(hours=6), timedelta(hours=1))) == []
    assert row(aws, "shared")["executionArn"]["S"] == owner and "reconciliation" not in row(aws, "shared")


def test_every_verdict_names_the_execution_it_is_about(aws: dict[str, Any]) -> None:
    """The entry point logs each result by its executionArn: a run that did nothing names its execution too."""
    # Given an execution that succeeded, one another execution's claim owns, and one reconciled already
    running = aws["sfn"].add("v1", "SUCCEEDED", ["ReserveInventory"])
    owner = aws["sfn"].add("v2", "SUCCEEDED", ["ReserveInventory"], message_id="shared-v")
    twin = aws["sfn"].add("v3", "ABORTED", ["ReserveInventory"], message_id="shared-v")
    aws["dynamodb"].put_item(TableName="deliveries", Item={"messageId": {"S": "shared-v"},
                                                           "executionArn": {"S": owner}})
    done = aws["sfn"].add("v4", "ABORTED", ["ReserveInventory"])
    aws["reconciler"].reconcile(done, via="event", now=NOW)
    # When each is reconciled
    results = [aws["reconciler"].reconcile(arn, via="sweep", now=NOW) for arn in (running, twin, done)]
    # Then each result says what it found, and about which execution
    assert [(result.verdict, result.execution_arn) for result in results] == [
        (Verdict.NOT_FAILED, running), (Verdict.NOT_OWNER, twin), (Verdict.ALREADY_RECONCILED, done)]


class FailingUpdates:
    """The account's DynamoDB, whose UpdateItem fails with `code` while `failing` is set."""

    def __init__(self, client: Any, code: str) -> None:
        self._client, self._code, self.failing = client, code, True

    def update_item(self, **kwargs: Any) -> Any:
        if self.failing:
            raise ClientError({"Error": {"Code": self._code, "Message": "refused"}}, "UpdateItem")
        return self._client.update_item(**kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


def test_a_claim_refused_for_another_reason_than_its_condition_is_raised(aws: dict[str, Any]) -> None:
    arn = aws["sfn"].add("x1", "ABORTED", ["ReserveInventory"])
    aws["reconciler"]._dynamodb = FailingUpdates(aws["dynamodb"], "ProvisionedThroughputExceededException")
    with pytest.raises(ClientError, match="ProvisionedThroughputExceededException"):
        aws["reconciler"].reconcile(arn, via="event", now=NOW)
    assert records(aws) == []


def test_a_failed_release_leaves_the_lease_to_lapse(aws: dict[str, Any]) -> None:
    arn = aws["sfn"].add("x2", "ABORTED", ["ReserveInventory"])
    aws["compensations"].fail["fn-ReleaseInventory"] = "TransientError"
    failing = FailingUpdates(aws["dynamodb"], "InternalServerError")
    failing.failing = False
    aws["reconciler"]._dynamodb = failing
    original = aws["reconciler"]._release

    def release_while_failing(message_id: str, execution_arn: str) -> None:
        failing.failing = True
        try:
            original(message_id, execution_arn)
        finally:
            failing.failing = False

    aws["reconciler"]._release = release_while_failing
    with pytest.raises(CompensationRetryable):  # the compensation's error, not the release's
        aws["reconciler"].reconcile(arn, via="event", now=NOW)
    assert row(aws, "msg-x2")["reconcileLeaseUntil"]["N"] == str(int(NOW.timestamp()) + LEASE_SECONDS)


def test_a_stopped_execution_not_yet_settled_keeps_its_row_claimed_without_a_lease(aws: dict[str, Any]) -> None:
    arn = aws["sfn"].add("n1", "TIMED_OUT", [])
    aws["sfn"].histories[arn] = [
        _event(1, "ExecutionStarted", 0),
        _event(2, "TaskStateEntered", 1, stateEnteredEventDetails={"name": "ChargePayment"}),
        _event(3, "TaskScheduled", 2), _event(4, "TaskStarted", 3)]
    with pytest.raises(NotYetSettled) as waiting:
        aws["reconciler"].reconcile(arn, via="event", now=NOW)
    assert waiting.value.settles_at == NOW + timedelta(seconds=25) + IN_FLIGHT_MARGIN
    assert str(waiting.value) == f"{arn}: a task invocation may run until {waiting.value.settles_at.isoformat()}"
    item = row(aws, "msg-n1")
    assert item["reconciliation"]["S"] == "CLAIMED" and "reconcileLeaseUntil" not in item
    assert records(aws) == [] and aws["compensations"].calls == []


# -- a resumed run ----------------------------------------------------------------------------------------------------

def test_a_resumed_run_announces_what_the_crashed_run_stored(aws: dict[str, Any]) -> None:
    """The crashed run compensated (one compensation failed), recorded, and stored its summary on the row; the
    resumed run announces from that summary, with the cause as stored (bounded), and compensates nothing again."""
    aws["compensations"].fail["fn-RefundPayment"] = "RefundRejected"
    arn = aws["sfn"].add("z1", "TIMED_OUT", ["ReserveInventory", "ChargePayment"], exited=("ReserveInventory",))
    aws["sfn"].executions[arn]["cause"] = "x" * (MAX_CAUSE_CHARS + 500)
    reconciler: Reconciler = aws["reconciler"]
    publish = reconciler._sns.publish

    def refuse(**_kwargs: Any) -> None:
        raise ClientError({"Error": {"Code": "InternalError"}}, "Publish")

    reconciler._sns.publish = refuse
    with pytest.raises(ClientError):
        reconciler.reconcile(arn, via="event", now=NOW)
    reconciler._sns.publish = publish
    first_calls = len(aws["compensations"].calls)
    assert row(aws, "msg-z1")["reconciliation"]["S"] == "RECORDED"
    # Whatever the history would say now, the resumed run keeps to what the crashed run stored
    aws["compensations"].fail.clear()
    aws["sfn"].executions[arn]["cause"] = "changed since"
    sent = published(aws)

    resumed = reconciler.reconcile(arn, via="sweep", now=NOW + timedelta(seconds=1))

    assert resumed.verdict is Verdict.RECONCILED and resumed.announced and not resumed.recorded
    assert resumed.manual_repair is True
    assert [c["status"] for c in resumed.compensated] == ["FAILED", "COMPENSATED"]
    assert len(aws["compensations"].calls) == first_calls
    (call,) = sent
    alert = json.loads(call["Message"])
    context = json.loads(alert["default"])["metadata"]["additionalContext"]
    assert (context["manualRepair"], context["disposition"], context["status"]) == ("true", "manual-repair",
                                                                                    "TIMED_OUT")
    assert f"Cause: {'x' * MAX_CAUSE_CHARS}\n" in alert["email"]
    assert call["Subject"] == "[dev] Order saga timed out in ChargePayment"
    (stored,) = records(aws)
    assert len(stored["body"]["failure"]["cause"]) == MAX_CAUSE_CHARS + 500  # the record keeps it whole
    assert row(aws, "msg-z1")["reconciliation"]["S"] == "ANNOUNCED"


def test_a_resumed_run_without_a_summary_describes_the_failure_from_the_history(aws: dict[str, Any]) -> None:
    arn = aws["sfn"].add("z2", "ABORTED", ["ReserveInventory", "ChargePayment"], exited=("ReserveInventory",))
    aws["dynamodb"].put_item(TableName="deliveries", Item={
        "messageId": {"S": "msg-z2"}, "executionArn": {"S": arn}, "reconciliation": {"S": "RECORDED"}})
    sent = published(aws)
    result = aws["reconciler"].reconcile(arn, via="event", now=NOW)
    assert result.announced and not result.recorded and result.compensated == [] and not result.manual_repair
    assert aws["compensations"].calls == [] and records(aws) == []
    (call,) = sent
    assert call["Subject"] == "[dev] Order saga aborted in ChargePayment"
    assert "Cause: cause of z2\n" in json.loads(call["Message"])["email"]


def test_a_resumed_transient_failure_is_not_announced_but_finished(aws: dict[str, Any]) -> None:
    arn = aws["sfn"].add("z3", "TIMED_OUT", ["ReserveInventory"])
    summary = {"failure": {"state": "ReserveInventory", "error": "States.Timeout", "cause": "late"},
               "manualRepair": False, "compensated": []}
    aws["dynamodb"].put_item(TableName="deliveries", Item={
        "messageId": {"S": "msg-z3"}, "executionArn": {"S": arn}, "reconciliation": {"S": "RECORDED"},
        "summary": {"S": json.dumps(summary)}})
    sent = published(aws)
    result = aws["reconciler"].reconcile(arn, via="event", now=NOW)
    assert result.verdict is Verdict.RECONCILED and not result.announced and sent == []
    assert row(aws, "msg-z3")["reconciliation"]["S"] == "ANNOUNCED"


# -- the announcement -------------------------------------------------------------------------------------------------

def test_the_reconcilers_alert_names_the_execution_its_end_and_what_it_waits_for(aws: dict[str, Any]) -> None:
    stopped = datetime(2026, 12, 1, 11, 59, 58, 250000, tzinfo=UTC)
    arn = aws["sfn"].add("al1", "ABORTED", ["ReserveInventory", "ArrangeShipping"], exited=("ReserveInventory",),
                         stopped=stopped)
    sent = published(aws)
    aws["reconciler"].reconcile(arn, via="event", now=NOW)
    (call,) = sent
    assert (call["TopicArn"], call["MessageStructure"]) == (aws["reconciler"]._settings.alerts_topic_arn, "json")
    alert = json.loads(call["Message"])
    assert alert["email"].splitlines()[2:8] == [
        "Execution status: ABORTED", "Failed state: ArrangeShipping", "Error: Aborted", "Cause: cause of al1",
        "Manual repair needed: false", "Waiting for: needs-decision"]
    assert "console.aws.amazon.com/states/home?region=us-east-1#/v2/executions/details/" + arn in alert["email"]
    context = json.loads(alert["default"])["metadata"]["additionalContext"]
    assert context == {"pipeline": "orders", "environment": "dev", "status": "ABORTED",
                       "failedState": "ArrangeShipping", "error": "Aborted", "manualRepair": "false",
                       "disposition": "needs-decision", "executionArn": arn, "failedAt": "2026-12-01T11:59:58.250Z"}


def test_a_business_error_the_tail_recorded_but_did_not_announce_is_announced(aws: dict[str, Any]) -> None:
    tail = {"failure": {"state": "ChargePayment", "error": "PaymentDeclined", "cause": "card"},
            "compensation": {"required": True}, "manualRepair": False}
    arn = aws["sfn"].add("al2", "FAILED", ["ChargePayment", "ClaimFailure", "HandleFailure", "NotifyFailure"],
                         error="SNS.KMS", tail_input=tail, exited=("ChargePayment", "ClaimFailure", "HandleFailure"))
    sent = published(aws)
    result = aws["reconciler"].reconcile(arn, via="event", now=NOW)
    assert result.announced and not result.recorded
    context = json.loads(json.loads(sent[0]["Message"])["default"])["metadata"]["additionalContext"]
    assert (context["failedState"], context["error"], context["status"]) == ("ChargePayment", "PaymentDeclined",
                                                                            "FAILED")
    assert drain(aws["sqs"], aws["dlq"]) == []


def test_an_execution_aborted_in_the_tail_of_a_transient_failure_is_announced(aws: dict[str, Any]) -> None:
    """A transient failure waits for the automatic redrive, but a person who stops its execution decides it."""
    # Given an execution aborted in ClaimFailure, the tail describing an error ChargePayment retries
    tail = {"failure": {"state": "ChargePayment", "error": "TransientError", "cause": "busy"},
            "compensation": None, "manualRepair": False}
    arn = aws["sfn"].add("al4", "ABORTED", ["ChargePayment", "ClaimFailure"], tail_input=tail,
                         exited=("ChargePayment",))
    assert "TransientError" in RETRIED["ChargePayment"]
    sent = published(aws)
    # When it is reconciled
    result = aws["reconciler"].reconcile(arn, via="event", now=NOW)
    # Then it is announced as waiting for a person's decision, not left for a retry
    assert result.announced
    context = json.loads(json.loads(sent[0]["Message"])["default"])["metadata"]["additionalContext"]
    assert (context["status"], context["error"], context["disposition"]) == ("ABORTED", "TransientError",
                                                                            "needs-decision")


def test_an_exhausted_transient_failure_is_announced(aws: dict[str, Any]) -> None:
    arn = aws["sfn"].add("al3", "TIMED_OUT", ["ReserveInventory"])
    record = json.loads(aws["sfn"].executions[arn]["input"])[0]
    record["messageAttributes"] = {"ffRedriveAttempt": {"stringValue": "3", "dataType": "Number"}}
    aws["sfn"].executions[arn]["input"] = json.dumps([record])
    assert aws["reconciler"]._policy.max_attempts == 3 and RETRIED
    sent = published(aws)
    assert aws["reconciler"].reconcile(arn, via="event", now=NOW).announced
    context = json.loads(json.loads(sent[0]["Message"])["default"])["metadata"]["additionalContext"]
    assert context["disposition"] == "retries-exhausted"


# -- times -----------------------------------------------------------------------------------------------------------

def test_event_times_are_read_as_aware_datetimes_and_a_missing_one_is_now() -> None:
    assert event_time("2026-12-01T12:00:00Z") == NOW
    assert event_time("2026-12-01T12:00:00") == NOW  # naive: UTC
    before = datetime.now(UTC)
    assert before <= event_time(None) <= datetime.now(UTC)
    with pytest.raises(ValueError, match=r"^not an ISO 8601 time: 'yesterday'$"):
        event_time("yesterday")


def test_a_history_time_without_a_zone_is_read_as_utc() -> None:
    # Given a task event whose timestamp carries no zone
    naive = NOW.replace(tzinfo=None)
    history = [_event(1, "ExecutionStarted", 0),
               _event(2, "TaskStateEntered", 1, stateEnteredEventDetails={"name": "ChargePayment"}),
               _event(3, "TaskScheduled", 2, naive)]
    # When the history is read, Then the task is in flight from that time in UTC, comparable with any aware time
    (task,) = History.from_events(history).in_flight
    assert task == InFlight("ChargePayment", NOW) and task.started.tzinfo is UTC


def test_a_stage_is_its_name() -> None:
    assert [stage.value for stage in Stage] == ["CLAIMED", "RECORDED", "ANNOUNCED"]
