"""The fault matrix: in every mode, every message ends in exactly one durable place, each failure is announced
exactly once, successes are not announced, and the saga's books balance."""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import boto3
import pytest
from botocore.config import Config

from demos.orders.invariants import saga_violations
from demos.orders.samples import OrderKind, SampleOrder, make_order, seed_inventory
from fire_and_forget.rehearsal.accounting import Ledger, Place, account, advance_past_retries
from fire_and_forget.rehearsal.faults import Fault, FaultKind
from fire_and_forget.rehearsal.pipe import DuplicateTiming
from fire_and_forget.rehearsal.rehearsal import Rehearsal
from fire_and_forget.runtime.records import Selection
from fire_and_forget.runtime.redrive import Action, RedriveRequest, redrive_failures
from stacks.orders.tasks import TASKS
from tests.support.matrix_checks import (
    aborted_reconciled,
    alert_path_alarm_targets_the_second_topic,
    announced_twice,
    exhausted_after_three_redrives,
    failure_record_twice,
    failure_records,
    healed_by_one_redrive,
    held_send_completed_after_abort,
    one_order_unannounced_by_sns,
    start_response_lost_ran_twice,
    timed_out_healed,
)

logging.getLogger("moto.stepfunctions.parser").setLevel(logging.CRITICAL)

# One order of each kind; the faults below hit them in different places.
BATCH = (OrderKind.VALID, OrderKind.VALID, OrderKind.DECLINED, OrderKind.MALFORMED, OrderKind.UNSERVED)
SAMPLES = [make_order(kind, n, random.Random(n)) for n, kind in enumerate(BATCH, start=1)]
FIRST_VALID, DECLINED = SAMPLES[0].order_id, SAMPLES[2].order_id
TASK_NAMES = {spec.construct_id for spec in TASKS}
Check = Callable[[Rehearsal, Ledger, list[SampleOrder]], None]


@dataclass(frozen=True)
class Mode:
    name: str
    faults: tuple[Fault, ...] = ()
    duplicates: int = 0
    execution_timeout: int | None = None
    hold_first: bool = False  # hold one order's call (ChargePayment by default), then abort or time it out
    abort_held: bool = False
    hold_target: str = "ChargePayment"  # a task, or a service call: "FailureDlq" (HandleFailure's SendMessage)
    held_sample: int = 0  # which of BATCH is held
    duplicate_timing: DuplicateTiming = DuplicateTiming.SAME_POLL
    expect: dict[Place, int] = field(default_factory=dict)
    # What the mode breaks on purpose, as the ledger reports it (anomaly -> messages); everything else balances.
    anomalies: dict[str, int] = field(default_factory=dict)
    check: Check | None = None  # the mode's outcome asserted directly, beside the ledger


MODES = [
    Mode("no fault", expect={Place.SUCCEEDED: 2, Place.FAILURE_DLQ: 3}),
    Mode("reserve fails transiently", (Fault("ReserveInventory", FaultKind.SERVICE_ERROR, times=3),),
         expect={Place.SUCCEEDED: 2, Place.FAILURE_DLQ: 3}),
    Mode("charge throttled", (Fault("ChargePayment", FaultKind.THROTTLE, times=3),),
         expect={Place.SUCCEEDED: 2, Place.FAILURE_DLQ: 3}),
    Mode("shipping times out once", (Fault("ArrangeShipping", FaultKind.TIMEOUT, times=1),),
         expect={Place.SUCCEEDED: 2, Place.FAILURE_DLQ: 3}),
    Mode("reserve fails permanently", (Fault("ReserveInventory", FaultKind.CRASH),),
         expect={Place.FAILURE_DLQ: 5}),
    # Transient for good: each valid order is redriven three times, then recorded for a person and announced once.
    Mode("shipping retries exhausted", (Fault("ArrangeShipping", FaultKind.SERVICE_ERROR),),
         expect={Place.FAILURE_DLQ: 5}, check=exhausted_after_three_redrives),
    # An outage that outlasts one execution's Retry (1 + 4 calls) for one order: the first automatic redrive heals
    # it, and nobody is told.
    Mode("shipping outage outlasts the Retry once",
         (Fault("ArrangeShipping", FaultKind.SERVICE_ERROR, times=5, key=FIRST_VALID),),
         expect={Place.SUCCEEDED: 2, Place.FAILURE_DLQ: 3}, check=healed_by_one_redrive),
    Mode("a compensation fails", (Fault("ReleaseInventory", FaultKind.CRASH),),
         expect={Place.SUCCEEDED: 2, Place.FAILURE_DLQ: 3}),
    Mode("failure DLQ send fails transiently", (Fault("FailureDlq", FaultKind.UNAVAILABLE, times=2),),
         expect={Place.SUCCEEDED: 2, Place.FAILURE_DLQ: 3}),
    Mode("failure DLQ down", (Fault("FailureDlq", FaultKind.UNAVAILABLE),),
         expect={Place.SUCCEEDED: 2, Place.EXECUTION: 3}),
    Mode("SNS fails transiently", (Fault("AlertsTopic", FaultKind.UNAVAILABLE, times=3),),
         expect={Place.SUCCEEDED: 2, Place.FAILURE_DLQ: 3}),
    Mode("StartExecution refused twice", (Fault("StartExecution", FaultKind.START_REFUSED, times=2),),
         expect={Place.SUCCEEDED: 2, Place.FAILURE_DLQ: 3}),
    Mode("StartExecution refused always", (Fault("StartExecution", FaultKind.START_REFUSED),),
         expect={Place.SOURCE_DLQ: 5}),
    Mode("duplicate delivery", duplicates=5, expect={Place.SUCCEEDED: 2, Place.FAILURE_DLQ: 3}),
    # The Reconciler compensates an aborted execution, records it and announces it (a person stopped it: no redrive).
    Mode("execution aborted", hold_first=True, abort_held=True,
         expect={Place.SUCCEEDED: 1, Place.FAILURE_DLQ: 4}, check=aborted_reconciled),
    # A timeout is transient: compensated and recorded by the Reconciler, redriven, and the copy succeeds.
    Mode("execution timed out", hold_first=True, execution_timeout=1,
         expect={Place.SUCCEEDED: 2, Place.FAILURE_DLQ: 3}, check=timed_out_healed),
    # The call succeeded, its response was lost: the retry repeats it.
    Mode("SNS publish response lost once", (Fault("AlertsTopic", FaultKind.RESPONSE_LOST, times=1, key=DECLINED),),
         expect={Place.SUCCEEDED: 2, Place.FAILURE_DLQ: 3}, anomalies={"announced twice": 1}, check=announced_twice),
    # HandleFailure's retry sends the record again: two records of one execution, which every reader (the books, ff-ops,
    # the Redriver) takes as one.
    Mode("failure DLQ send response lost once",
         (Fault("FailureDlq", FaultKind.RESPONSE_LOST, times=1, key=DECLINED),),
         expect={Place.SUCCEEDED: 2, Place.FAILURE_DLQ: 3}, check=failure_record_twice),
    Mode("StartExecution response lost once",
         (Fault("StartExecution", FaultKind.RESPONSE_LOST, times=1, key=FIRST_VALID),),
         expect={Place.SUCCEEDED: 2, Place.FAILURE_DLQ: 3}, check=start_response_lost_ran_twice),
    # A service call held, not a Lambda task: HandleFailure's SendMessage waits while the execution is aborted. The
    # Reconciler cannot tell from the history whether that send took effect, so it records the failure too: two
    # records of one execution, one place in the books (the Reconciler's record stands for both), announced once.
    Mode("failure DLQ send held, execution aborted", hold_first=True, abort_held=True, hold_target="FailureDlq",
         held_sample=2, expect={Place.SUCCEEDED: 2, Place.FAILURE_DLQ: 3}, check=held_send_completed_after_abort),
    # SNS faults scoped to one order: the others are announced as usual.
    Mode("alerts topic refuses one order", (Fault("AlertsTopic", FaultKind.UNAVAILABLE, key=DECLINED),),
         expect={Place.SUCCEEDED: 2, Place.FAILURE_DLQ: 3}, check=one_order_unannounced_by_sns),
    Mode("alerts topic down", (Fault("AlertsTopic", FaultKind.UNAVAILABLE),),
         expect={Place.SUCCEEDED: 2, Place.FAILURE_DLQ: 3}, check=alert_path_alarm_targets_the_second_topic),
    # SQS delivers a copy later: in the next poll, or once the first delivery's execution has ended.
    Mode("duplicate delivery, next poll", duplicates=5, duplicate_timing=DuplicateTiming.NEXT_POLL,
         expect={Place.SUCCEEDED: 2, Place.FAILURE_DLQ: 3}),
    Mode("duplicate delivery, after the first ended", duplicates=5, duplicate_timing=DuplicateTiming.AFTER_END,
         expect={Place.SUCCEEDED: 2, Place.FAILURE_DLQ: 3}),
]


def run_mode(cloud_assembly: Path, mode: Mode, after: Callable[[Rehearsal], None] | None = None) -> None:
    with Rehearsal.start(cloud_assembly, execution_timeout_seconds=mode.execution_timeout) as aws:
        seed_inventory(aws.dynamodb, aws.outputs["InventoryTableName"])
        for fault in mode.faults:
            aws.faults.add(fault)
        aws.pipe.duplicate_next, aws.pipe.duplicate_timing = mode.duplicates, mode.duplicate_timing
        samples = list(SAMPLES)
        held_sample = samples[mode.held_sample]
        if mode.hold_first:
            aws.faults.add(Fault(mode.hold_target, FaultKind.HANG, times=1, key=held_sample.order_id))
        # The held order goes first and alone: with a compressed execution timeout, only it may time out.
        first = [held_sample] if mode.hold_first else []
        bodies = {aws.send(sample.body): sample.body for sample in first}
        if mode.hold_first:
            held = _held_execution(aws, held_sample.order_id or "", mode.hold_target)
            if mode.abort_held:
                aws.abort(held)
            else:
                aws.advance((mode.execution_timeout or 0) + 1)  # past its timeout on the rehearsal's clock
                assert aws.execution_status(held) == "TIMED_OUT"
                aws.set_execution_timeout(None)
            aws.release_held()  # the held call ends (and commits) after its execution stopped
        bodies |= {aws.send(sample.body): sample.body for sample in samples if sample not in first}
        aws.run()
        _wait_for_held_service_calls(aws)
        # Past every cool-off: what waits for an automatic retry is redriven until it succeeds or its attempts are
        # spent, so every mode ends quiet (nothing left waiting) before the books are read.
        advance_past_retries(aws)

        ledger = account(aws, list(bodies))
        assert _anomalies(ledger) == mode.anomalies, {m: (f.places, f.announcements) for m, f in ledger.fates.items()}
        assert {Place(p): n for p, n in ledger.counts().items()} == mode.expect
        assert saga_violations(aws, ledger, bodies) == []
        if mode.check is not None:
            mode.check(aws, ledger, samples)
        if after is not None:
            after(aws)


def _anomalies(ledger: Ledger) -> dict[str, int]:
    found = {"lost": ledger.lost, "in two places": ledger.in_two_places, "announced twice": ledger.announced_twice,
             "unannounced failures": ledger.unannounced_failures, "announced successes": ledger.announced_successes,
             "overdue retries": ledger.overdue_retries, "waiting": ledger.waiting}
    return {name: len(messages) for name, messages in found.items() if messages}


def _wait_for_held_service_calls(aws: Rehearsal) -> None:
    """A held service call of an aborted execution still runs once released: wait for it to finish."""
    import time

    deadline = time.monotonic() + 60  # a guard against waiting forever, not a time limit
    while len(aws.faults.completed_holds) < len(aws.faults.held):
        assert time.monotonic() < deadline, "a held service call never finished"
        time.sleep(0.01)


def _held_execution(aws: Rehearsal, order_id: str, target: str) -> str:
    if target in TASK_NAMES:
        aws.wait_for_hang()
    else:
        aws.drain()
        assert aws.faults.holding.wait(10), f"no {target} call is held"
    running = [e for e in aws.executions() if e.status == "RUNNING" and order_id in str(e.input)]
    assert len(running) == 1
    return running[0].arn


@pytest.mark.parametrize("mode", MODES, ids=[mode.name for mode in MODES])
def test_every_message_ends_in_one_place_and_is_announced_once(cloud_assembly: Path, mode: Mode) -> None:
    run_mode(cloud_assembly, mode)


def test_the_matrix_covers_every_fault_kind() -> None:
    kinds = {fault.kind for mode in MODES for fault in mode.faults}
    assert kinds >= set(FaultKind) - {FaultKind.HANG}
    assert any(mode.duplicates for mode in MODES) and any(mode.abort_held for mode in MODES)
    assert any(mode.execution_timeout for mode in MODES)
    assert {mode.duplicate_timing for mode in MODES if mode.duplicates} == set(DuplicateTiming)
    assert {mode.hold_target for mode in MODES if mode.hold_first} - TASK_NAMES  # a service call is held too
    assert any(f.target == "AlertsTopic" and f.key for mode in MODES for f in mode.faults)
    assert len(MODES) >= 23


@pytest.mark.parametrize(("kind", "action", "left_in_dlq"), [(FaultKind.UNAVAILABLE, Action.SENT_NOT_DELETED, 1),
                                                              (FaultKind.RESPONSE_LOST, Action.REDRIVEN, 0)],
                         ids=["delete refused", "delete response lost"])
def test_an_operator_redrive_whose_delete_message_fails(cloud_assembly: Path, kind: FaultKind, action: Action,
                                                        left_in_dlq: int) -> None:
    """DeleteMessage on the failure DLQ fails under `ff-ops failures redrive` (after botocore's own retry): refused,
    the record stays in the DLQ beside its copy in the source queue; its response lost, the retry finds it deleted."""

    def redrive(aws: Rehearsal) -> None:
        aws.faults.add(Fault("FailureDlqDelete", kind, times=None if kind is FaultKind.UNAVAILABLE else 1,
                             key=DECLINED))
        retries = Config(retries={"mode": "standard", "max_attempts": 2})  # botocore: 2 retries after the first
        sqs = boto3.client("sqs", region_name=aws.region, config=retries)
        report = redrive_failures(sqs, aws.outputs["FailureDlqUrl"], aws.outputs["SourceQueueUrl"],
                                  RedriveRequest(Selection(keys=frozenset({DECLINED or ""})), wait_seconds=0))

        (outcome,) = report.outcomes
        assert outcome.action is action and outcome.new_message_id is not None
        assert aws.faults.fired("FailureDlqDelete") == (3 if kind is FaultKind.UNAVAILABLE else 1)
        assert len(failure_records(aws, DECLINED)) == left_in_dlq
        assert [json.loads(m["Body"])["orderId"] for m in aws.messages("SourceQueueUrl")] == [DECLINED]
        # The copy runs, is declined again, and is recorded and announced once, like any failure.
        aws.faults.clear()
        aws.run()
        ledger = account(aws, [outcome.new_message_id])
        assert ledger.balanced and ledger.counts() == {Place.FAILURE_DLQ.value: 1}
        assert len(failure_records(aws, DECLINED)) == left_in_dlq + 1

    run_mode(cloud_assembly, MODES[0], after=redrive)
