"""Rehearsal.run and Rehearsal.advance drive the event source mappings and schedules, on the pipeline probe stack."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from fire_and_forget.rehearsal.faults import Fault, FaultKind
from fire_and_forget.rehearsal.rehearsal import Rehearsal
from tests.rehearsal_emulation.probe_app import PIPELINE_STACK_NAME, TICK_MINUTES, VISIBILITY_TIMEOUT_SECONDS

MINUTE = 60


@pytest.fixture
def aws(probe_cloud_assembly: Path) -> Iterator[Rehearsal]:
    with Rehearsal.start(probe_cloud_assembly, stack_name=PIPELINE_STACK_NAME) as rehearsal:
        yield rehearsal


def _reconciled(aws: Rehearsal) -> list[dict[str, Any]]:
    """The status-change events the Reconciler was invoked with (one per record)."""
    events = [json.loads(m["Body"]) for m in aws.messages("ObservationsQueueUrl")]
    return [json.loads(r["body"]) for e in events if "Records" in e for r in e["Records"]]


def test_run_reconciles_the_failure_events_the_rule_queued(aws: Rehearsal) -> None:
    # Given one request whose execution fails
    aws.send({"requestId": "r-1"})
    # When the rehearsal runs
    (execution,) = aws.run()
    # Then the rule's event reached the Reconciler through the mapping, within the same run, and was deleted
    assert execution.status == "FAILED"
    (event,) = _reconciled(aws)
    assert (event["detail"]["executionArn"], event["detail"]["status"]) == (execution.arn, "FAILED")
    assert aws.messages("FailureEventsQueueUrl") == []


def test_a_fault_on_the_reconciler_is_retried_after_the_visibility_timeout(aws: Rehearsal) -> None:
    # Given the reconciler crashing once
    aws.faults.add(Fault("Reconciler", FaultKind.CRASH, times=1))
    aws.send({"requestId": "r-1"})
    # When the rehearsal runs, the event waits out the queue's visibility timeout on the clock
    aws.run()
    assert [i.error_type for i in aws.runtime.invocations if i.task == "Reconciler"] == ["Runtime.ExitError"]
    aws.advance(VISIBILITY_TIMEOUT_SECONDS - 1)
    assert [i.error_type for i in aws.runtime.invocations if i.task == "Reconciler"] == ["Runtime.ExitError"]
    aws.advance(2)
    # Then the event was redelivered and reconciled on the second receive, once the timeout had passed
    assert [i.error_type for i in aws.runtime.invocations if i.task == "Reconciler"] == ["Runtime.ExitError", None]
    assert len(_reconciled(aws)) == 1


def test_the_clock_starts_at_deployment_and_advance_moves_it(aws: Rehearsal) -> None:
    # Given a rehearsal just opened
    start = aws.now()
    assert abs(datetime.now(UTC) - start) < timedelta(minutes=1)
    # When less than a period passes, nothing fires
    assert aws.advance(TICK_MINUTES * MINUTE - 1) == []
    assert aws.run() == []
    assert aws.now() == start + timedelta(seconds=TICK_MINUTES * MINUTE - 1)


def test_advance_fires_the_redriver_and_runs_what_it_started_to_quiet(aws: Rehearsal) -> None:
    # When two tick periods pass
    fired = aws.advance(2 * TICK_MINUTES * MINUTE)
    # Then each tick put one request back on the source queue, and before the next tick the pipe started its
    # execution, the execution failed, its event was emitted and reconciled
    assert [f.delivered for f in fired] == [True, True]
    executions = aws.executions()
    assert [e.status for e in executions] == ["FAILED", "FAILED"]
    assert [json.loads(e.input[0]["body"])["time"] for e in executions] == [f.scheduled_time for f in fired]
    assert sorted(e["detail"]["executionArn"] for e in _reconciled(aws)) == sorted(e.arn for e in executions)
    # And the task names give the healing functions their role names (for fault injection)
    assert {"Reconciler", "Redriver"} <= set(aws.runtime._task_names.values())
