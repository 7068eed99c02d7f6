"""The rehearsal's one virtual clock (src/fire_and_forget/rehearsal/clock.py): work takes no time on it, and every
timeout AWS applies happens when the clock is moved past it, whatever the machine's speed."""

from __future__ import annotations

import json
import random
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from moto.stepfunctions.parser.asl.component.program import program

from demos.orders.samples import OrderKind, make_order
from fire_and_forget.rehearsal import MAX_IN_FLIGHT
from fire_and_forget.rehearsal.faults import Fault, FaultKind
from fire_and_forget.rehearsal.lambda_runtime import TIMED_OUT_ERROR
from fire_and_forget.rehearsal.pipe import PipeEmulator
from fire_and_forget.rehearsal.rehearsal import Rehearsal

FUNCTION_TIMEOUT = 25  # seconds: the order saga's Lambda timeout (the Task's 30 s less 5)


def _send(aws: Rehearsal, number: int = 1) -> str:
    return aws.send(make_order(OrderKind.VALID, number, random.Random(number)).body)


def test_work_takes_no_time_on_the_clock(aws: Rehearsal) -> None:
    # Given the clock at its deployment moment
    start = aws.now()
    for number in range(1, 6):
        _send(aws, number)
    # When five orders run through the saga
    executions = aws.run()
    # Then every timestamp of the run, and the process's own clock, is still that moment
    assert all(e.status == "SUCCEEDED" for e in executions) and len(executions) == 5
    assert datetime.now(UTC) == start
    described = [aws.sfn.describe_execution(executionArn=e.arn) for e in executions]
    assert {d["startDate"] for d in described} | {d["stopDate"] for d in described} == {start}


def test_a_held_invocation_ends_at_its_function_timeout_without_its_handler_running(aws: Rehearsal) -> None:
    # Given ChargePayment's first invocation held (a slow function)
    aws.faults.add(Fault("ChargePayment", FaultKind.HANG, times=1))
    _send(aws)
    (held,) = aws.wait_for_hang()
    # When the clock moves to just before the function's timeout, it is still running
    aws.advance(FUNCTION_TIMEOUT - 1)
    assert aws.execution(held).status == "RUNNING" and aws.runtime.held_timed_out == 0
    # And once the clock passes it, Lambda ends the invocation; the Task retries it and the order is charged once
    aws.advance(2)
    execution = aws.execution(held)
    assert execution.status == "SUCCEEDED"
    assert [i.error_type for i in aws.runtime.invocations if i.task == "ChargePayment"] == [TIMED_OUT_ERROR, None]
    assert [w.state for w in aws.clock.for_execution(held)] == ["ChargePayment"]
    (charge,) = [p for p in aws.items("PaymentsTableName") if str(p["pk"]).startswith("ORDER#")]
    assert charge["status"] == "CHARGED"


def test_an_execution_times_out_when_the_clock_passes_its_timeout_and_reports_when(cloud_assembly: Path) -> None:
    with Rehearsal.start(cloud_assembly, execution_timeout_seconds=5) as aws:
        aws.faults.add(Fault("ReserveInventory", FaultKind.HANG, times=1))
        _send(aws)
        (held,) = aws.wait_for_hang()
        start = aws.now()
        aws.advance(4)
        assert aws.execution_status(held) == "RUNNING"
        aws.advance(2)
        described = aws.sfn.describe_execution(executionArn=held)
        # Then it stopped at its timeout, and both DescribeExecution and ListExecutions say when (AWS does)
        assert described["status"] == "TIMED_OUT"
        assert described["stopDate"] == start + timedelta(seconds=5)
        (listed,) = aws.sfn.list_executions(stateMachineArn=described["stateMachineArn"],
                                            statusFilter="TIMED_OUT")["executions"]
        assert listed["stopDate"] == described["stopDate"]
        aws.release_held()


def test_a_redelivered_event_waits_for_the_visibility_timeout_on_the_clock(aws: Rehearsal) -> None:
    # Given the Reconciler crashing on its first invocation, for an order that fails (out of stock)
    aws.faults.add(Fault("Reconciler", FaultKind.CRASH, times=1))
    aws.faults.add(Fault("FailureDlq", FaultKind.UNAVAILABLE, times=6))  # the tail cannot record: the rule sees it
    aws.send(make_order(OrderKind.OUT_OF_STOCK, 1, random.Random(1)).body)
    aws.run()
    visibility = int(aws.sqs.get_queue_attributes(QueueUrl=aws.outputs["FailureEventsQueueUrl"],
                                                  AttributeNames=["VisibilityTimeout"])["Attributes"]
                     ["VisibilityTimeout"])
    # When the clock stops just short of the failure-events queue's visibility timeout, nothing is recorded
    aws.advance(visibility - 1)
    reconciled = [i.error_type for i in aws.runtime.invocations if i.task == "Reconciler"]
    assert reconciled == ["Runtime.ExitError"] and aws.messages("FailureDlqUrl") == []
    # Then once it passes, the event comes back and is reconciled into one record
    aws.advance(1)
    (record,) = [json.loads(m["Body"]) for m in aws.messages("FailureDlqUrl")]
    assert record["failure"]["error"] == "OutOfStock"


def test_the_clock_moves_only_once_the_interpreter_is_quiet(cloud_assembly: Path, monkeypatch) -> None:
    """The interpreter starts an execution's program thread and only then waits for it with the execution's
    TimeoutSeconds (Program.eval: start, then join(timeout)); the task can be held before that wait exists. Here
    the gap is made wide: were the clock moved before the wait began, the deadline would count from the later
    moment and the execution would not time out when it should."""
    with Rehearsal.start(cloud_assembly, execution_timeout_seconds=1) as aws:
        threading_on_clock: Any = program.threading  # the rehearsal's stand-in module (interpreter_time.py)
        clocked_thread = threading_on_clock.Thread

        class LateJoin(clocked_thread):  # type: ignore[misc,valid-type]
            def join(self, timeout: float | None = None) -> None:
                time.sleep(0.3)  # machine time, as a loaded machine takes it: the virtual clock does not move
                super().join(timeout)

        monkeypatch.setattr(threading_on_clock, "Thread", LateJoin)
        aws.faults.add(Fault("ReserveInventory", FaultKind.HANG, times=1))
        start = aws.now()
        _send(aws)
        (held,) = aws.wait_for_hang()
        aws.advance(2)
        described = aws.sfn.describe_execution(executionArn=held)
        assert described["status"] == "TIMED_OUT"
        assert described["stopDate"] == start + timedelta(seconds=1)
        aws.release_held()



def test_a_full_pipe_stops_draining_when_every_execution_in_flight_waits_on_the_clock() -> None:
    # The pipe pauses while MAX_IN_FLIGHT executions run; when all of them wait on the clock (an invocation's
    # duration, a Retry wait), none ends until the clock moves, which the caller of drain() does: waiting there
    # never ended (the load scenarios at full length, with invocations that take time on the clock).
    asked = 0

    def in_flight() -> int:
        nonlocal asked
        asked += 1
        if asked > 50:
            raise AssertionError("the drain waits for executions that wait on the clock")
        return MAX_IN_FLIGHT

    pipe = SimpleNamespace(requeued=True)
    PipeEmulator.drain(pipe, in_flight=in_flight, max_in_flight=MAX_IN_FLIGHT, stalled=lambda: True)  # type: ignore[arg-type]
    assert asked == 1 and pipe.requeued is False
