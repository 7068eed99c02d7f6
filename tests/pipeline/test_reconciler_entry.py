"""The Reconciler function's entry (fire_and_forget/healing/reconciler.py) over the Reconciler's test account: which
queue records it redelivers and which it drops, the "now" it reconciles at, the sweep's count and its failure, the
metrics it counts, and one Reconciler per configuration."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from moto import mock_aws

import fire_and_forget.healing.reconciler as entry
from fire_and_forget.healing.reconciliation import IN_FLIGHT_MARGIN, Reconciler, ReconcilerSettings
from fire_and_forget.healing.telemetry import RECONCILED, RECONCILED_MANUAL_REPAIR, logger, metrics
from fire_and_forget.runtime.healing_policy import HealingPolicy
from tests.pipeline.reconciler_account import FUNCTION_TIMEOUT, MACHINE, NOW, drain


@pytest.fixture
def aws(reconciler_account: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """The entry's Reconciler is the test account's; the sweep's window from the environment, as deployed."""
    monkeypatch.setattr(entry, "reconciler", lambda: reconciler_account["reconciler"])
    monkeypatch.setenv("SWEEP_LOOKBACK_MINUTES", "360")
    monkeypatch.setenv("EXECUTION_TIMEOUT_SECONDS", "3600")
    metrics.clear_metrics()
    yield reconciler_account
    metrics.clear_metrics()


class Lines(logging.Handler):
    """The healing Logger's records, with their extra keys as attributes."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def said(self, text: str) -> list[Any]:
        return [record for record in self.records if record.getMessage() == text]


@pytest.fixture
def lines() -> Iterator[Lines]:
    handler = Lines()
    level = logger.log_level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield handler
    logger.removeHandler(handler)
    logger.setLevel(level)


@dataclass
class Context:
    function_name: str = "reconciler"
    function_version: str = "$LATEST"
    memory_limit_in_mb: int = 256
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:reconciler"
    aws_request_id: str = "request-1"


def counted() -> dict[str, list[float]]:
    return {name: list(metric["Value"]) for name, metric in metrics.metric_set.items()}


def status_change(arn: str, when: str | None = "2026-12-01T12:00:00Z") -> str:
    event: dict[str, Any] = {"detail-type": "Step Functions Execution Status Change",
                             "detail": {"executionArn": arn, "status": "TIMED_OUT"}}
    if when is not None:
        event["time"] = when
    return json.dumps(event)


def queue_event(*bodies: str) -> dict[str, Any]:
    return {"Records": [{"messageId": f"q-{number}", "body": body} for number, body in enumerate(bodies)]}


def test_each_status_change_is_reconciled_and_counted(aws: dict[str, Any]) -> None:
    plain = aws["sfn"].add("q1", "ABORTED", ["ReserveInventory"])
    aws["compensations"].fail["fn-RefundPayment"] = "RefundRejected"
    broken = aws["sfn"].add("q2", "TIMED_OUT", ["ReserveInventory", "ChargePayment"])
    assert entry.from_queue(queue_event(status_change(plain), status_change(broken))) == {"batchItemFailures": []}
    assert counted() == {RECONCILED: [1.0, 1.0], RECONCILED_MANUAL_REPAIR: [1.0]}
    assert metrics.metric_set[RECONCILED]["Unit"] == "Count"


def test_what_another_run_finished_is_not_counted_again(aws: dict[str, Any]) -> None:
    arn = aws["sfn"].add("q3", "ABORTED", ["ReserveInventory"])
    entry.from_queue(queue_event(status_change(arn)))
    metrics.clear_metrics()
    assert entry.from_queue(queue_event(status_change(arn))) == {"batchItemFailures": []}
    handled = aws["sfn"].add("q4", "FAILED", ["ReserveInventory"], error="FailureRecorded")
    entry.from_queue(queue_event(status_change(handled)))
    assert counted() == {}


def test_a_resumed_run_that_only_announces_is_not_counted(aws: dict[str, Any]) -> None:
    arn = aws["sfn"].add("q5", "ABORTED", ["ReserveInventory"])
    aws["dynamodb"].put_item(TableName="deliveries", Item={
        "messageId": {"S": "msg-q5"}, "executionArn": {"S": arn}, "reconciliation": {"S": "RECORDED"},
        "summary": {"S": json.dumps({"manualRepair": True})}})
    assert entry.from_queue(queue_event(status_change(arn))) == {"batchItemFailures": []}
    assert counted() == {}


@pytest.mark.parametrize("body", [
    "not json", json.dumps({"detail": {}}), json.dumps({"detail": "text"}), json.dumps([1]),
    status_change("arn:x", when="yesterday"),
], ids=["not json", "no executionArn", "detail not an object", "not an object", "malformed time"])
def test_a_record_that_is_not_a_status_change_is_dropped_and_logged_whole(
        aws: dict[str, Any], body: str, lines: Lines) -> None:
    assert entry.from_queue(queue_event(body)) == {"batchItemFailures": []}
    (logged,) = lines.said("not a status-change event; dropped")
    assert logged.body == body and logged.levelno == logging.ERROR


def test_a_dropped_record_does_not_stop_the_batch(aws: dict[str, Any]) -> None:
    arn = aws["sfn"].add("q11", "ABORTED", ["ReserveInventory"])
    assert entry.from_queue(queue_event("not json", status_change(arn))) == {"batchItemFailures": []}
    assert counted() == {RECONCILED: [1.0]}


def test_each_reconcile_is_logged_with_what_it_found_and_did(aws: dict[str, Any], lines: Lines) -> None:
    aws["compensations"].fail["fn-ReleaseInventory"] = "ReleaseRefused"
    arn = aws["sfn"].add("q12", "ABORTED", ["ReserveInventory"])
    entry.from_queue(queue_event(status_change(arn)))
    (logged,) = lines.said("reconcile")
    assert logged.levelno == logging.INFO
    assert {name: getattr(logged, name) for name in ("verdict", "executionArn", "messageId", "status", "recorded",
                                                     "announced", "manualRepair")} == {
        "verdict": "reconciled", "executionArn": arn, "messageId": "msg-q12", "status": "ABORTED", "recorded": True,
        "announced": True, "manualRepair": True}
    assert logged.compensated == [{"state": "ReleaseInventory", "status": "FAILED", "error": "ReleaseRefused",
                                   "cause": "refused"}]


def test_the_record_says_whether_the_event_or_the_sweep_reconciled_it(aws: dict[str, Any]) -> None:
    by_event = aws["sfn"].add("v1", "ABORTED", ["ReserveInventory"], stopped=NOW)
    entry.from_queue(queue_event(status_change(by_event)))
    aws["sfn"].add("v2", "ABORTED", ["ReserveInventory"], stopped=NOW)
    entry.sweep({"time": "2026-12-01T12:00:00Z"})
    via = {record["executionArn"].rsplit(":", 1)[1]: record["reconciliation"]["via"]
           for record in drain(aws["sqs"], aws["dlq"])}
    assert via == {"v1": "event", "v2": "sweep"}


def test_a_record_without_a_body_is_dropped(aws: dict[str, Any]) -> None:
    assert entry.from_queue({"Records": [{"messageId": "q-0"}]}) == {"batchItemFailures": []}
    assert entry.from_queue({}) == {"batchItemFailures": []}


def test_an_execution_not_settled_yet_and_one_that_failed_to_reconcile_are_redelivered(
        aws: dict[str, Any], lines: Lines) -> None:
    ok = aws["sfn"].add("q6", "ABORTED", ["ReserveInventory"])
    waiting = aws["sfn"].add("q7", "ABORTED", [])
    started = datetime.now(UTC)
    aws["sfn"].histories[waiting] = [
        {"id": 1, "previousEventId": 0, "type": "ExecutionStarted", "timestamp": started},
        {"id": 2, "previousEventId": 1, "type": "TaskStateEntered", "timestamp": started,
         "stateEnteredEventDetails": {"name": "ChargePayment"}},
        {"id": 3, "previousEventId": 2, "type": "TaskScheduled", "timestamp": started}]
    busy = aws["sfn"].add("q8", "ABORTED", ["ReserveInventory"])
    aws["reconciler"]._claim("msg-q8", busy, datetime.now(UTC))  # another run holds the lease
    result = entry.from_queue(queue_event(status_change(ok), status_change(waiting), status_change(busy)))
    assert result == {"batchItemFailures": [{"itemIdentifier": "q-1"}, {"itemIdentifier": "q-2"}]}
    (noted,) = lines.said("a task may still be running; the queue redelivers it")
    settles = started + timedelta(seconds=FUNCTION_TIMEOUT) + IN_FLIGHT_MARGIN
    assert (noted.executionArn, noted.settlesAt) == (waiting, settles.isoformat())
    (failed,) = lines.said("reconcile failed; the queue redelivers it")
    assert failed.executionArn == busy and failed.exc_info is not None


def test_a_queued_event_is_reconciled_at_its_own_time_or_later_never_earlier(aws: dict[str, Any]) -> None:
    """An old event (a redelivery) is reconciled now: the task that was in flight when it was sent has ended since."""
    arn = aws["sfn"].add("q9", "TIMED_OUT", [])
    aws["sfn"].histories[arn] = [
        {"id": 1, "previousEventId": 0, "type": "ExecutionStarted", "timestamp": NOW},
        {"id": 2, "previousEventId": 1, "type": "TaskStateEntered", "timestamp": NOW,
         "stateEnteredEventDetails": {"name": "ReserveInventory"}},
        {"id": 3, "previousEventId": 2, "type": "TaskStarted", "timestamp": NOW}]
    assert entry.from_queue(queue_event(status_change(arn, when="2026-12-01T12:00:10Z"))) == {"batchItemFailures": []}
    assert counted() == {RECONCILED: [1.0]}


def test_a_queued_event_from_the_future_is_reconciled_at_its_time(aws: dict[str, Any]) -> None:
    future = datetime.now(UTC) + timedelta(days=1)
    arn = aws["sfn"].add("q10", "TIMED_OUT", [])
    aws["sfn"].histories[arn] = [
        {"id": 1, "previousEventId": 0, "type": "ExecutionStarted", "timestamp": future},
        {"id": 2, "previousEventId": 1, "type": "TaskStateEntered", "timestamp": future,
         "stateEnteredEventDetails": {"name": "ReserveInventory"}},
        {"id": 3, "previousEventId": 2, "type": "TaskStarted", "timestamp": future - timedelta(seconds=200)}]
    when = future.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert entry.from_queue(queue_event(status_change(arn, when=when))) == {"batchItemFailures": []}
    assert counted() == {RECONCILED: [1.0]}


# -- the sweep --------------------------------------------------------------------------------------------------------

def test_the_sweep_reconciles_what_stopped_in_its_window_and_says_how_many(aws: dict[str, Any]) -> None:
    for name, stopped in (("s1", NOW - timedelta(minutes=30)), ("s2", NOW - timedelta(minutes=359)),
                          ("s3", NOW - timedelta(minutes=361))):
        aws["sfn"].add(name, "ABORTED", ["ReserveInventory"], stopped=stopped)
    for name in ("s4", "s6"):
        waiting = aws["sfn"].add(name, "TIMED_OUT", [], stopped=NOW)
        aws["sfn"].histories[waiting] = [
            {"id": 1, "previousEventId": 0, "type": "ExecutionStarted", "timestamp": NOW},
            {"id": 2, "previousEventId": 1, "type": "TaskStateEntered", "timestamp": NOW,
             "stateEnteredEventDetails": {"name": "ReserveInventory"}},
            {"id": 3, "previousEventId": 2, "type": "TaskStarted", "timestamp": NOW}]
    assert entry.sweep({"time": "2026-12-01T12:00:00Z"}) == {"swept": 4, "notSettledYet": 2}
    assert counted() == {RECONCILED: [1.0, 1.0]}
    # The window follows the environment
    aws["sfn"].add("s5", "ABORTED", ["ReserveInventory"], stopped=NOW - timedelta(minutes=20))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SWEEP_LOOKBACK_MINUTES", "10")
        assert entry.sweep({"time": "2026-12-01T12:00:00Z"}) == {"swept": 2, "notSettledYet": 2}


def test_a_sweep_that_could_not_reconcile_some_raises_naming_them_after_doing_the_rest(
        aws: dict[str, Any], lines: Lines) -> None:
    busy = []
    for number in range(7):
        arn = aws["sfn"].add(f"b{number}", "ABORTED", ["ReserveInventory"],
                             stopped=NOW - timedelta(minutes=number + 1))
        aws["reconciler"]._claim(f"msg-b{number}", arn, NOW)
        busy.append(arn)
    done = aws["sfn"].add("b-ok", "ABORTED", ["ReserveInventory"], stopped=NOW - timedelta(seconds=30))
    with pytest.raises(RuntimeError) as raised:
        entry.sweep({"time": "2026-12-01T12:01:00Z"})
    assert str(raised.value) == f"7 of 8 executions could not be reconciled now: {busy[:5]}"
    assert counted() == {RECONCILED: [1.0]}  # the one it could reconcile, it did
    logged = [r.executionArn for r in lines.said("reconcile failed; the next sweep retries it")]
    assert logged == busy and done not in logged


def test_the_handler_routes_the_schedules_sweep_and_the_queues_records(aws: dict[str, Any]) -> None:
    aws["sfn"].add("h1", "ABORTED", ["ReserveInventory"], stopped=NOW)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(metrics, "namespace", "Test")
        assert entry.handler({"sweep": {"time": "2026-12-01T12:00:00Z"}}, Context()) == {
            "swept": 1, "notSettledYet": 0}
        assert entry.handler(queue_event("not json"), Context()) == {"batchItemFailures": []}


# -- one Reconciler per configuration ---------------------------------------------------------------------------------

CONFIGURATION = {
    "PIPELINE_NAME": "orders", "ENVIRONMENT_NAME": "dev", "WORKFLOW_TITLE": "Order saga", "AWS_REGION": "us-east-1",
    "STATE_MACHINE_ARN": MACHINE, "FAILURE_DLQ_URL": "https://sqs/dlq", "ALERTS_TOPIC_ARN": "arn:aws:sns:topic",
    "DELIVERIES_TABLE_NAME": "deliveries", "DELIVERY_CLAIM_TTL_SECONDS": "3600",
    **HealingPolicy(transient_errors={"ChargePayment": frozenset({"TransientError"})}, max_attempts=4).to_environment(),
}


def test_one_reconciler_serves_one_configuration_whatever_the_invocation_varies(
        monkeypatch: pytest.MonkeyPatch) -> None:
    with mock_aws():
        for name, value in CONFIGURATION.items():
            monkeypatch.setenv(name, value)
        first = entry.reconciler()
        assert isinstance(first, Reconciler)
        assert first._settings == ReconcilerSettings.from_environment(CONFIGURATION)
        assert first._policy == HealingPolicy.from_environment(CONFIGURATION) and first._policy.max_attempts == 4
        assert first._sfn.meta.service_model.service_name == "stepfunctions"
        assert {c.meta.service_model.service_name for c in (first._dynamodb, first._sqs, first._sns, first._lambda)} \
            == {"dynamodb", "sqs", "sns", "lambda"}
        monkeypatch.setenv("_X_AMZN_TRACE_ID", "Root=1-per-invocation")
        monkeypatch.setenv("lowercase_setting", "ignored")
        assert entry.reconciler() is first
        monkeypatch.setenv("ENVIRONMENT_NAME", "prod")  # another stack's Reconciler in the same process
        second = entry.reconciler()
        assert second is not first and second._settings.environment == "prod"
        monkeypatch.setenv("ENVIRONMENT_NAME", "dev")
        assert entry.reconciler() is first
