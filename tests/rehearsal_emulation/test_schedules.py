"""The scheduler emulator and its virtual clock, on the probe app's sweep and redrive-tick schedules."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from fire_and_forget.rehearsal.clock import VirtualClock
from fire_and_forget.rehearsal.faults import Fault, FaultKind
from fire_and_forget.rehearsal.schedules import fill_context, rate_period
from tests.rehearsal_emulation.conftest import ProbeAccount
from tests.rehearsal_emulation.probe_app import (
    REDRIVER_ASYNC_RETRIES,
    SWEEP_MINUTES,
    TICK_MINUTES,
    TICK_RETRY_ATTEMPTS,
)

MINUTE = 60


def _ticks(probe: ProbeAccount) -> list[dict[str, str]]:
    return [event for event in probe.observed() if "schedule" in event]


def test_advancing_less_than_one_period_fires_nothing(probe: ProbeAccount) -> None:
    # When the clock moves just short of the shortest period
    fired = probe.scheduler.advance(TICK_MINUTES * MINUTE - 1)
    # Then nothing was invoked
    assert fired == []
    assert probe.runtime.invocations == []


def test_each_schedule_fires_once_per_elapsed_period_with_its_scheduled_time(probe: ProbeAccount) -> None:
    # Given the clock at deployment
    start = probe.clock.now()
    # When it moves on 31 minutes
    probe.scheduler.advance(31 * MINUTE)
    # Then the 5-minute tick fired 6 times and the 15-minute sweep twice, in time order, each at its own time
    observed = probe.observed()
    ticks = [event["time"] for event in observed if "schedule" in event]
    sweeps = [event["sweep"]["time"] for event in observed if "sweep" in event]
    stamp = "%Y-%m-%dT%H:%M:%SZ"
    assert ticks == [(start + timedelta(minutes=TICK_MINUTES * k)).strftime(stamp) for k in range(1, 7)]
    assert sweeps == [(start + timedelta(minutes=SWEEP_MINUTES * k)).strftime(stamp) for k in (1, 2)]
    assert [f.schedule.startswith("Sweep") for f in probe.scheduler.firings] == [
        False,
        False,
        True,
        False,
        False,
        False,
        True,
        False,
    ]  # at 15 and 30 min the sweep, first in the template, fires first
    assert probe.clock.now() == start + timedelta(minutes=31)


def test_the_clock_carries_over_between_advances(probe: ProbeAccount) -> None:
    # When the clock moves 3 minutes, then 3 more
    probe.scheduler.advance(3 * MINUTE)
    probe.scheduler.advance(3 * MINUTE)
    # Then the 5-minute tick fired once, during the second move
    assert len(_ticks(probe)) == 1


def test_the_context_attributes_are_filled_in(probe: ProbeAccount) -> None:
    # When the tick fires once
    (firing,) = probe.scheduler.advance(TICK_MINUTES * MINUTE)
    # Then its payload carries the execution id, the first attempt and the schedule's ARN
    (tick,) = _ticks(probe)
    assert tick["executionId"] == firing.execution_id and len(tick["executionId"]) == 16
    assert tick["attempt"] == "1"
    assert tick["schedule"].startswith("arn:aws:scheduler:us-east-1:123456789012:schedule/default/HealingProbe-")
    assert "<aws.scheduler" not in json.dumps(tick)


def test_a_failing_invoke_is_retried_then_sent_to_the_targets_dlq(probe: ProbeAccount) -> None:
    # Given the Lambda service refusing every Invoke of the redriver (500)
    probe.faults.add(Fault("Redriver", FaultKind.SERVICE_ERROR))
    # When the tick fires once
    (firing,) = probe.scheduler.advance(TICK_MINUTES * MINUTE)
    # Then the scheduler tried 1 + MaximumRetryAttempts times, then dead-lettered the event
    assert (firing.attempts, firing.delivered, firing.dead_lettered) == (1 + TICK_RETRY_ATTEMPTS, False, True)
    assert probe.faults.fired("Redriver") == 1 + TICK_RETRY_ATTEMPTS
    (dead,) = probe.messages("TickDlqUrl")
    attributes = {k: v["StringValue"] for k, v in dead["MessageAttributes"].items()}
    assert attributes["ERROR_CODE"] == "ServiceException"
    assert attributes["EXECUTION_ID"] == firing.execution_id
    assert attributes["SCHEDULED_TIME"] == firing.scheduled_time
    assert attributes["TARGET_ARN"].endswith(":function:" + probe.function_name("RedriverFunction"))
    assert json.loads(dead["Body"])["attempt"] == str(1 + TICK_RETRY_ATTEMPTS)


def test_an_invoke_that_succeeds_on_a_retry_is_delivered_once(probe: ProbeAccount) -> None:
    # Given the redriver's Invoke throttled twice
    probe.faults.add(Fault("Redriver", FaultKind.THROTTLE, times=2))
    # When the tick fires
    (firing,) = probe.scheduler.advance(TICK_MINUTES * MINUTE)
    # Then the third attempt reached the function, and the DLQ is empty
    assert (firing.attempts, firing.delivered) == (3, True)
    assert [t["attempt"] for t in _ticks(probe)] == ["3"]
    assert probe.messages("TickDlqUrl") == []


def test_a_function_error_is_lambdas_to_retry_not_the_schedulers(probe: ProbeAccount) -> None:
    # Given the redriver crashing every time (Lambda accepted the asynchronous invocation)
    probe.faults.add(Fault("Redriver", FaultKind.CRASH))
    # When the tick fires
    (firing,) = probe.scheduler.advance(TICK_MINUTES * MINUTE)
    # Then the scheduler delivered it once, and Lambda ran it 1 + the function's async retries, then sent it to the
    # function's on-failure destination; the scheduler's DLQ holds nothing
    assert (firing.attempts, firing.delivered, firing.dead_lettered) == (1, True, False)
    assert firing.outcome is not None
    assert (firing.outcome.attempts, firing.outcome.succeeded) == (1 + REDRIVER_ASYNC_RETRIES, False)
    (failed,) = probe.messages("AsyncFailuresQueueUrl")
    record = json.loads(failed["Body"])
    assert record["requestContext"]["condition"] == "RetriesExhausted"
    assert record["requestPayload"]["executionId"] == firing.execution_id
    assert probe.messages("TickDlqUrl") == []


def test_a_reconciler_failing_once_on_the_sweep_is_retried_by_lambda(probe: ProbeAccount) -> None:
    # Given the reconciler crashing on its first invocation; it has Lambda's default async retries (2)
    probe.faults.add(Fault("Reconciler", FaultKind.CRASH, times=1))
    # When the sweep fires
    probe.scheduler.advance(SWEEP_MINUTES * MINUTE)
    # Then the sweep's second attempt ran the handler
    sweep = next(f for f in probe.scheduler.firings if f.schedule.startswith("Sweep"))
    assert sweep.outcome is not None
    assert (sweep.outcome.attempts, sweep.outcome.succeeded, sweep.outcome.errors) == (2, True, ["Runtime.ExitError"])
    assert [e["sweep"]["time"] for e in probe.observed() if "sweep" in e] == [sweep.scheduled_time]


@pytest.mark.parametrize(
    ("expression", "seconds"),
    [
        ("rate(1 minute)", 60),
        ("rate(5 minutes)", 300),
        ("rate(1 hour)", 3600),
        ("rate(2 hours)", 7200),
        ("rate(1 day)", 86400),
        ("rate(3 days)", 259200),
    ],
)
def test_rate_expressions(expression: str, seconds: int) -> None:
    assert rate_period(expression) == timedelta(seconds=seconds)


@pytest.mark.parametrize(
    "expression",
    [
        "cron(0 12 * * ? *)",
        "at(2026-12-01T10:00:00)",
        "rate(5 minute)",
        "rate(1 minutes)",
        "rate(0 minutes)",
        "rate(10 seconds)",
        "rate(1 week)",
    ],
)
def test_other_expressions_are_refused(expression: str) -> None:
    with pytest.raises(ValueError, match="rate"):
        rate_period(expression)


def test_the_clock_starts_at_whole_seconds_and_never_goes_back() -> None:
    clock = VirtualClock(datetime(2026, 12, 1, 10, 0, 0, 123456, tzinfo=UTC))
    assert clock.now() == datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
    assert clock.advance(90) == datetime(2026, 12, 1, 10, 1, 30, tzinfo=UTC)
    with pytest.raises(ValueError):
        clock.advance(-1)


def test_no_input_delivers_an_empty_object() -> None:
    assert fill_context(None, "arn", datetime(2026, 12, 1, tzinfo=UTC), "e", 1) == "{}"
