"""A stopped execution's task invocation may still commit: the Reconciler waits it out, the delivery claim refuses
it, and the sweep describes an execution once. Hand-made histories in GetExecutionHistory's shape (ids,
previousEventId, timestamps), on the Reconciler's test account (tests/pipeline/reconciler_account.py)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

import pytest

from fire_and_forget.healing.reconciliation import IN_FLIGHT_MARGIN, History, NotYetSettled, Verdict
from fire_and_forget.runtime.deliveries import DynamoDBDeliveryClaims
from tests.pipeline.reconciler_account import FUNCTION_TIMEOUT, NOW, drain

TIMEOUTS = {"ReserveInventory": FUNCTION_TIMEOUT, "ChargePayment": FUNCTION_TIMEOUT}


def _history(*tasks: tuple[str, str, datetime]) -> list[dict[str, Any]]:
    """A history whose states each ran one Lambda task: (state, how its invocation ended, when it started).

    `ended` is "succeeded", "failed-then-retried" (a TaskFailed, then a second attempt still running) or "running".
    """
    events: list[dict[str, Any]] = [{"id": 1, "previousEventId": 0, "type": "ExecutionStarted", "timestamp": NOW}]

    def add(kind: str, when: datetime, **details: Any) -> int:
        event_id = len(events) + 1
        events.append({"id": event_id, "previousEventId": event_id - 1, "type": kind, "timestamp": when, **details})
        return event_id

    for state, ended, started in tasks:
        add("TaskStateEntered", started, stateEnteredEventDetails={"name": state, "input": "{}"})
        add("TaskScheduled", started, taskScheduledEventDetails={"resourceType": "lambda", "resource": "invoke"})
        add("TaskStarted", started, taskStartedEventDetails={"resourceType": "lambda", "resource": "invoke"})
        if ended == "succeeded":
            add("TaskSucceeded", started, taskSucceededEventDetails={})
            add("TaskStateExited", started, stateExitedEventDetails={"name": state})
        elif ended == "failed-then-retried":
            add("TaskFailed", started, taskFailedEventDetails={"error": "TransientError"})
            retry = started + timedelta(seconds=4)
            add("TaskScheduled", retry, taskScheduledEventDetails={"resourceType": "lambda", "resource": "invoke"})
            add("TaskStarted", retry, taskStartedEventDetails={"resourceType": "lambda", "resource": "invoke"})
    return events


def test_the_history_names_the_invocations_still_in_flight_and_when_they_have_certainly_ended() -> None:
    started = NOW - timedelta(seconds=10)
    history = History.from_events(_history(("ReserveInventory", "succeeded", started),
                                           ("ChargePayment", "running", started)))
    assert [(task.state, task.started) for task in history.in_flight] == [("ChargePayment", started)]
    assert history.settles_at(TIMEOUTS) == started + timedelta(seconds=FUNCTION_TIMEOUT) + IN_FLIGHT_MARGIN
    # A retried task is in flight from its last attempt's start; a task of unknown timeout, for the margin only
    retried = History.from_events(_history(("ChargePayment", "failed-then-retried", started)))
    assert [task.started for task in retried.in_flight] == [started + timedelta(seconds=4)]
    assert retried.settles_at({}) == started + timedelta(seconds=4) + IN_FLIGHT_MARGIN
    # Nothing in flight: nothing to wait for
    done = History.from_events(_history(("ReserveInventory", "succeeded", started)))
    assert (done.in_flight, done.settles_at(TIMEOUTS)) == ((), None)


@pytest.mark.parametrize("status", ["TIMED_OUT", "ABORTED"])
def test_a_stopped_execution_is_compensated_only_after_its_running_invocation_has_certainly_ended(
        reconciler_account: dict[str, Any], status: str) -> None:
    aws = reconciler_account
    arn = aws["sfn"].add("late", status, [])
    aws["sfn"].histories[arn] = _history(("ReserveInventory", "succeeded", NOW), ("ChargePayment", "running", NOW))
    settles = NOW + timedelta(seconds=FUNCTION_TIMEOUT) + IN_FLIGHT_MARGIN

    # While ChargePayment's invocation may still run, nothing is compensated or recorded
    with pytest.raises(NotYetSettled) as waiting:
        aws["reconciler"].reconcile(arn, via="event", now=settles - timedelta(seconds=1))
    assert waiting.value.settles_at == settles
    assert aws["compensations"].calls == [] and drain(aws["sqs"], aws["dlq"]) == []
    # ... but the message is claimed for reconciliation: a late delivery claim of that execution is refused
    message_id = json.loads(aws["sfn"].executions[arn]["input"])[0]["messageId"]
    claims = DynamoDBDeliveryClaims(aws["dynamodb"], "deliveries", ttl_seconds=3600)
    assert claims.claim(message_id, arn) is False

    # Once it has certainly ended, the steps it entered are compensated, last first
    result = aws["reconciler"].reconcile(arn, via="event", now=settles)
    assert result.verdict is Verdict.RECONCILED
    assert [name for name, _payload in aws["compensations"].calls] == ["fn-RefundPayment", "fn-ReleaseInventory"]


def test_a_failed_execution_has_no_invocation_in_flight_and_is_reconciled_at_once(
        reconciler_account: dict[str, Any]) -> None:
    aws = reconciler_account
    arn = aws["sfn"].add("failed", "FAILED", [], error="States.Runtime")
    aws["sfn"].histories[arn] = _history(("ReserveInventory", "succeeded", NOW), ("ChargePayment", "running", NOW))
    assert aws["reconciler"].reconcile(arn, via="event", now=NOW).verdict is Verdict.RECONCILED


def test_a_delivery_claim_never_replaces_the_row_the_reconciler_settled(reconciler_account: dict[str, Any]) -> None:
    aws = reconciler_account
    arn = aws["sfn"].add("settled", "ABORTED", ["ReserveInventory"])
    aws["reconciler"].reconcile(arn, via="event", now=NOW)
    message_id = json.loads(aws["sfn"].executions[arn]["input"])[0]["messageId"]
    claims = DynamoDBDeliveryClaims(aws["dynamodb"], "deliveries", ttl_seconds=3600)

    # A late ReserveInventory of the reconciled execution claims its message: refused, and the row keeps its state
    assert claims.claim(message_id, arn) is False
    row = aws["dynamodb"].get_item(TableName="deliveries", Key={"messageId": {"S": message_id}})["Item"]
    assert row["reconciliation"]["S"] == "ANNOUNCED" and row["executionArn"]["S"] == arn
    # A claim on a fresh message, and the same execution's retry of it, still succeed
    assert claims.claim("fresh", arn) is True and claims.claim("fresh", arn) is True
    assert claims.claim("fresh", arn + "-twin") is False


class CountingStepFunctions:
    """The scripted Step Functions, counting the describes the sweep leads to."""

    def __init__(self, scripted: Any) -> None:
        self._scripted = scripted
        self.describes = 0

    def describe_execution(self, executionArn: str) -> dict[str, Any]:  # noqa: N803 - boto3's names
        self.describes += 1
        return dict(self._scripted.describe_execution(executionArn))

    def get_paginator(self, operation: str) -> Any:
        return self._scripted.get_paginator(operation)


def test_the_sweep_describes_each_stopped_execution_once_however_many_sweeps_see_it(
        reconciler_account: dict[str, Any]) -> None:
    aws = reconciler_account
    failures = 30
    for number in range(failures):
        aws["sfn"].add(f"f{number}", "FAILED", ["ReserveInventory"], error="FailureRecorded",
                       stopped=NOW - timedelta(minutes=number))
    counting = CountingStepFunctions(aws["sfn"])
    aws["reconciler"]._sfn = counting
    sweeps = 24  # a 360-minute lookback seen every 15 minutes: each failure is in 24 sweeps

    for sweep in range(sweeps):
        now = NOW + timedelta(minutes=15 * sweep)
        for arn in aws["reconciler"].sweep(now, timedelta(hours=6), timedelta(hours=1)):
            aws["reconciler"].reconcile(arn, via="sweep", now=now)

    assert counting.describes == failures  # not failures x sweeps


def test_an_execution_redriven_and_failed_again_is_swept_again(reconciler_account: dict[str, Any]) -> None:
    aws = reconciler_account
    arn = aws["sfn"].add("again", "FAILED", ["ReserveInventory"], error="FailureRecorded")
    assert list(aws["reconciler"].sweep(NOW, timedelta(hours=6), timedelta(hours=1))) == [arn]
    aws["reconciler"].reconcile(arn, via="sweep", now=NOW)
    assert list(aws["reconciler"].sweep(NOW, timedelta(hours=6), timedelta(hours=1))) == []
    # RedriveExecution runs the same ARN again: a new redriveCount, so a new failure to look at
    aws["sfn"].executions[arn]["redriveCount"] = 1
    assert list(aws["reconciler"].sweep(NOW, timedelta(hours=6), timedelta(hours=1))) == [arn]
