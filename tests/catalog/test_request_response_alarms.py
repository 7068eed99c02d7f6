"""The REQUEST_RESPONSE alarms (src/fire_and_forget/construct/request_response_alarms.py), evaluated on the metric
data a rehearsal of the Express variant published, as tests/workflow/test_alarm_metrics.py does for
FIRE_AND_FORGET: the alarm read from the synthesized template, its dimensions bound to the rehearsal's resources,
its statistic over its period fetched from moto's CloudWatch, compared with its threshold (tests/support/alarms.py).

No status-change event exists for an Express workflow, so these alarms are the mode's only announcement. The value
each must see is counted by this module from the executions' own start and stop dates and from moto's queues, not
from the metrics code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from fire_and_forget.rehearsal.faults import Fault, FaultKind
from fire_and_forget.rehearsal.pipe import DuplicateTiming
from fire_and_forget.rehearsal.rehearsal import Rehearsal
from fire_and_forget.runtime.outputs import Output
from tests.catalog.test_request_response_rehearsal import (
    MAX_RECEIVE_COUNT,
    TASK,
    VISIBILITY_TIMEOUT,
    product,
    queue_ids,
)
from tests.infra import request_response_app
from tests.support.alarms import Evaluation, alarms, evaluate

CANNOT_TRIP_OFFLINE = {"ExecutionThrottled": "StartSyncExecution throttling needs Step Functions' real quotas; moto "
                                             "never throttles and the pipe emulator has no throttled start"}


@pytest.fixture(scope="module")
def assembly() -> Path:
    return request_response_app.assembly()


def ended_within(aws: Rehearsal, status: str, period: int) -> int:
    """Executions that stopped with `status` in the period that ends now: the test's own count."""
    now = datetime.now(UTC)
    described = [aws.sfn.describe_execution(executionArn=e.arn) for e in aws.executions()]
    return sum(1 for d in described if d["status"] == status and now - timedelta(seconds=period) < d["stopDate"] <= now)


@dataclass
class Timeline:
    """Each alarm's evaluation at every stop of the clock, with the value this module counted for it."""

    evaluations: dict[str, list[tuple[Evaluation, float]]] = field(default_factory=dict)

    def record(self, aws: Rehearsal) -> None:
        every = alarms(aws)
        counted = {
            "ExecutionsFailed": ended_within(aws, "FAILED", every["ExecutionsFailed"].period),
            "ExecutionsTimedOut": ended_within(aws, "TIMED_OUT", every["ExecutionsTimedOut"].period),
            "SourceDlqNotEmpty": len(queue_ids(aws, Output.SOURCE_DLQ_URL)),
            "ExecutionThrottled": 0,
        }
        for name, alarm in every.items():
            self.evaluations.setdefault(name, []).append((evaluate(aws, alarm), counted[name]))

    def alarmed(self, name: str) -> int:
        """How many times the alarm went into ALARM: CloudWatch notifies at each such change of state."""
        states = ["OK"] + [evaluation.state for evaluation, _ in self.evaluations[name]]
        return sum(1 for before, after in zip(states, states[1:], strict=False) if (before, after) == ("OK", "ALARM"))


@pytest.fixture(scope="module")
def failing(assembly: Path) -> Timeline:
    """A document that fails every receive, a product whose task crashes once, one whose execution times out, two
    healthy products; the clock stopped at every receive until quiet, every alarm evaluated at each stop."""
    timeline = Timeline()
    with Rehearsal.start(assembly, stack_name=request_response_app.STACK_NAME, execution_timeout_seconds=1) as aws:
        aws.faults.add(Fault(TASK, FaultKind.HANG, times=1, key="sku-slow"))
        aws.send(product("sku-slow"))
        aws.wait_for_hang()
        aws.advance(2)  # past the 1-second timeout of this rehearsal
        aws.release_held()
        aws.set_execution_timeout(None)
        timeline.record(aws)
        aws.faults.add(Fault(TASK, FaultKind.CRASH, times=1, key="sku-crash"))
        for body in ("not json", product("sku-crash"), product("sku-1"), product("sku-2")):
            aws.send(body)
        aws.run()
        timeline.record(aws)
        period = alarms(aws)["ExecutionsFailed"].period
        for _ in range(MAX_RECEIVE_COUNT + 1):  # stopped once between two receives too: CloudWatch evaluates all along
            aws.advance(period + 1)
            timeline.record(aws)
            aws.advance(VISIBILITY_TIMEOUT - period - 1)
            timeline.record(aws)
        assert not aws.settling()
    return timeline


def test_each_alarm_sees_what_happened_in_its_period_at_every_stop(failing: Timeline) -> None:
    for name, evaluations in failing.evaluations.items():
        for evaluation, counted in evaluations:
            expected = "ALARM" if counted >= 1 else "OK"
            assert (evaluation.state, evaluation.value or 0) == (expected, counted), (name, evaluations)


def test_a_message_that_always_fails_alarms_at_every_receive_then_once_from_the_source_dlq(failing: Timeline) -> None:
    # The mode's announcement of one bad document: one ExecutionsFailed breach per receive (the crashed product's
    # first one shares the first), then the source DLQ. FIRE_AND_FORGET announces it once, from the failure tail.
    assert failing.alarmed("ExecutionsFailed") == MAX_RECEIVE_COUNT
    assert failing.alarmed("SourceDlqNotEmpty") == 1
    assert failing.alarmed("ExecutionsTimedOut") == 1
    # And each goes back to OK once its period has nothing: no data is treated as not breaching.
    last = {name: evaluations[-1][0].state for name, evaluations in failing.evaluations.items()}
    assert last == {"ExecutionsFailed": "OK", "ExecutionsTimedOut": "OK", "SourceDlqNotEmpty": "ALARM",
                    "ExecutionThrottled": "OK"}


def test_every_alarm_of_the_mode_is_proven_or_explained(failing: Timeline) -> None:
    tripped = {name for name, evaluations in failing.evaluations.items()
               if any(evaluation.state == "ALARM" for evaluation, _ in evaluations)}
    assert tripped | set(CANNOT_TRIP_OFFLINE) == set(failing.evaluations)
    assert not tripped & set(CANNOT_TRIP_OFFLINE)


@pytest.mark.parametrize("name", list(CANNOT_TRIP_OFFLINE))
def test_alarms_whose_metric_cannot_be_produced_offline(name: str) -> None:
    pytest.skip(f"{name}: {CANNOT_TRIP_OFFLINE[name]}")


@pytest.mark.parametrize("timing", [DuplicateTiming.AFTER_END, DuplicateTiming.NEXT_POLL],
                         ids=["copy after the first execution ended", "receive while the first may still run"])
def test_healthy_traffic_and_its_duplicates(assembly: Path, timing: DuplicateTiming) -> None:
    """A copy of a completed delivery succeeds and alarms nothing. A receive while the owner still runs must fail, so
    that the pipe keeps the message (the owner may yet fail): that failed execution is an ExecutionsFailed data
    point, the mode's one false alarm (docs/runbook.md, "executionsfailed"). Whether the next poll comes before the
    owner ended depends on the threads, so the test counts what happened and holds the alarm to it."""
    with Rehearsal.start(assembly, stack_name=request_response_app.STACK_NAME) as aws:
        aws.pipe.duplicate_next, aws.pipe.duplicate_timing = 1, timing
        for number in range(5):
            aws.send(product(f"sku-{number}"))
        aws.run()
        evaluated = {name: evaluate(aws, alarm) for name, alarm in alarms(aws).items()}

        failed = [e for e in aws.executions() if e.status == "FAILED"]
        assert [e.error for e in failed] == ["DuplicateDelivery"] * len(failed)
        if timing is DuplicateTiming.AFTER_END:
            assert failed == []
        assert len(failed) <= 1
        assert ended_within(aws, "FAILED", 300) == len(failed)
        assert {name: e.state for name, e in evaluated.items() if e.state != "OK"} == (
            {"ExecutionsFailed": "ALARM"} if failed else {})
        assert len(queue_ids(aws, Output.SOURCE_DLQ_URL)) == 0
