"""The fault matrix: in every mode, every message ends in exactly one durable place, each failure is announced
exactly once, successes are not announced, and the saga's books balance."""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from offline.accounting import Place, account
from offline.faults import Fault, FaultKind
from offline.invariants import saga_violations
from offline.orders import OrderKind, make_order, seed_inventory
from offline.rehearsal import Rehearsal

logging.getLogger("moto.stepfunctions.parser").setLevel(logging.CRITICAL)

# One order of each kind; the faults below hit them in different places.
BATCH = (OrderKind.VALID, OrderKind.VALID, OrderKind.DECLINED, OrderKind.MALFORMED, OrderKind.UNSERVED)


@dataclass(frozen=True)
class Mode:
    name: str
    faults: tuple[Fault, ...] = ()
    duplicates: int = 0
    execution_timeout: int | None = None
    hold_first: bool = False  # hold the first order's ChargePayment, then abort or time it out
    abort_held: bool = False
    expect: dict[Place, int] = field(default_factory=dict)


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
    Mode("shipping retries exhausted", (Fault("ArrangeShipping", FaultKind.SERVICE_ERROR),),
         expect={Place.FAILURE_DLQ: 5}),
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
    Mode("execution aborted", hold_first=True, abort_held=True,
         expect={Place.EXECUTION: 1, Place.SUCCEEDED: 1, Place.FAILURE_DLQ: 3}),
    Mode("execution timed out", hold_first=True, execution_timeout=1,
         expect={Place.EXECUTION: 1, Place.SUCCEEDED: 1, Place.FAILURE_DLQ: 3}),
]


def run_mode(cloud_assembly: Path, mode: Mode, after: Callable[[Rehearsal], None] | None = None) -> None:
    with Rehearsal.start(cloud_assembly, execution_timeout_seconds=mode.execution_timeout) as aws:
        seed_inventory(aws.dynamodb, aws.outputs["InventoryTableName"])
        for fault in mode.faults:
            aws.faults.add(fault)
        aws.pipe.duplicate_next = mode.duplicates
        samples = [make_order(kind, n, random.Random(n)) for n, kind in enumerate(BATCH, start=1)]
        if mode.hold_first:
            aws.faults.add(Fault("ChargePayment", FaultKind.HANG, times=1, order_id=samples[0].order_id))
        # The held order goes first and alone: with a compressed execution timeout, only it may time out.
        first = samples[:1] if mode.hold_first else []
        bodies = {aws.send(sample.body): sample.body for sample in first}
        if mode.hold_first:
            held = _held_execution(aws, samples[0].order_id or "")
            if mode.abort_held:
                aws.abort(held)
            else:
                _wait_for_status(aws, held, "TIMED_OUT")
                aws.set_execution_timeout(None)
            aws.faults.released.set()
        bodies |= {aws.send(sample.body): sample.body for sample in samples[len(first):]}
        aws.run()

        ledger = account(aws, list(bodies))
        assert ledger.balanced, {m: (f.places, f.announcements) for m, f in ledger.fates.items()}
        assert {Place(p): n for p, n in ledger.counts().items()} == mode.expect
        assert saga_violations(aws, ledger, bodies) == []
        if after is not None:
            after(aws)


def _held_execution(aws: Rehearsal, order_id: str) -> str:
    aws.wait_for_hang()
    running = [e for e in aws.executions() if e.status == "RUNNING" and order_id in str(e.input)]
    assert len(running) == 1
    return running[0].arn


def _wait_for_status(aws: Rehearsal, arn: str, status: str) -> None:
    import time

    deadline = time.monotonic() + 10
    while aws.execution(arn).status != status:
        assert time.monotonic() < deadline, f"{arn} never reached {status}"
        time.sleep(0.01)


@pytest.mark.parametrize("mode", MODES, ids=[mode.name for mode in MODES])
def test_every_message_ends_in_one_place_and_is_announced_once(cloud_assembly: Path, mode: Mode) -> None:
    run_mode(cloud_assembly, mode)


def test_the_matrix_covers_every_fault_kind() -> None:
    kinds = {fault.kind for mode in MODES for fault in mode.faults}
    assert kinds >= set(FaultKind) - {FaultKind.HANG}
    assert any(mode.duplicates for mode in MODES) and any(mode.abort_held for mode in MODES)
    assert any(mode.execution_timeout for mode in MODES)
    assert len(MODES) >= 13
