"""REQUEST_RESPONSE on the rehearsal: the catalog's workflow as an Express workflow the pipe waits for
(tests/infra/request_response_app.py), deployed into moto, the real IndexProduct handler, the clock virtual.

What is held to the documented rules (docs/design.md, "What the rehearsal must emulate for REQUEST_RESPONSE"): the
message stays in the queue while its execution runs and is deleted only when it succeeded; a failed execution leaves
it to come back when the visibility timeout ends, on the clock; SQS moves it to the source DLQ at the receive after
maxReceiveCount; the workflow sends no status-change event. The accounting is the test's own: it looks each message
up by its messageId in the search index, the source queue and the source DLQ, read through the API.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from fire_and_forget.construct.longest_run import attempts, longest_run, retry_waits_seconds
from fire_and_forget.rehearsal import sqs_rules
from fire_and_forget.rehearsal.deployment import ACCOUNT
from fire_and_forget.rehearsal.faults import Fault, FaultKind
from fire_and_forget.rehearsal.pipe import DuplicateTiming
from fire_and_forget.rehearsal.rehearsal import Rehearsal
from fire_and_forget.runtime.outputs import Output
from tests.infra import request_response_app

logging.getLogger("moto.stepfunctions.parser").setLevel(logging.CRITICAL)

TASK = request_response_app.TASK
# The construct's defaults in this mode (docs/construct.md, "The two modes").
VISIBILITY_TIMEOUT = 6 * 300
MAX_RECEIVE_COUNT = 5


@pytest.fixture(scope="module")
def assembly() -> Path:
    return request_response_app.assembly()


@pytest.fixture
def aws(assembly: Path) -> Iterator[Rehearsal]:
    with Rehearsal.start(assembly, stack_name=request_response_app.STACK_NAME) as rehearsal:
        yield rehearsal


def product(product_id: str, version: int = 1) -> str:
    return json.dumps({"productId": product_id, "version": version, "title": "Trail Shoe"})


def queue_ids(aws: Rehearsal, output: str) -> set[str]:
    """The messageIds a queue holds, visible or in flight: read from moto's queue itself, since a receive shows only
    the visible ones."""
    from moto.sqs.models import sqs_backends

    queue = sqs_backends[ACCOUNT][aws.region].get_queue(aws.outputs[output].rsplit("/", 1)[1])
    return {message.id for message in queue._messages}


def indexed(aws: Rehearsal) -> list[dict[str, Any]]:
    """The search index table's rows, the table found by its name (the test-only app has no output for it)."""
    from boto3.dynamodb.types import TypeDeserializer

    deserializer = TypeDeserializer()
    (table,) = [name for name in aws.dynamodb.list_tables()["TableNames"] if "SearchIndex" in name]
    items = aws.dynamodb.scan(TableName=table)["Items"]
    return [{key: deserializer.deserialize(value) for key, value in item.items()} for item in items]


def places(aws: Rehearsal, sent: dict[str, str]) -> dict[str, list[str]]:
    """messageId -> every place the message is in: "indexed" (its product's row), "source queue", "source DLQ"."""
    rows = {row["productId"] for row in indexed(aws)}
    in_queue, in_dlq = queue_ids(aws, Output.SOURCE_QUEUE_URL), queue_ids(aws, Output.SOURCE_DLQ_URL)
    found: dict[str, list[str]] = {}
    for message_id, product_id in sent.items():
        found[message_id] = [place for place, there in (("indexed", product_id in rows),
                                                        ("source queue", message_id in in_queue),
                                                        ("source DLQ", message_id in in_dlq)) if there]
    return found


def starts(aws: Rehearsal, message_id: str) -> list[datetime]:
    """When each execution of one message started, on the rehearsal's clock."""
    return sorted(aws.sfn.describe_execution(executionArn=execution.arn)["startDate"]
                  for execution in aws.executions() if execution.message_id == message_id)


def advance_until_quiet(aws: Rehearsal, limit_seconds: float = 24 * 3600) -> None:
    """Move the clock on, one visibility timeout at a time, until nothing is running and nothing hidden will return."""
    moved = 0.0
    while aws.settling():
        assert moved < limit_seconds, "the rehearsal did not settle"
        aws.advance(VISIBILITY_TIMEOUT)
        moved += VISIBILITY_TIMEOUT


def test_the_workflow_is_express_and_the_pipe_waits_for_it(aws: Rehearsal) -> None:
    assert aws.express
    assert aws.pipe.request_response
    assert aws.visibility_timeout(Output.SOURCE_QUEUE_URL) == VISIBILITY_TIMEOUT


def test_a_message_is_deleted_once_its_execution_succeeded_and_no_status_change_event_is_sent(aws: Rehearsal) -> None:
    message_id = aws.send(product("sku-1"))

    (execution,) = aws.run()

    assert execution.status == "SUCCEEDED"
    assert places(aws, {message_id: "sku-1"}) == {message_id: ["indexed"]}
    assert aws.pipe.stats.deleted == 1
    assert aws.bus.events == []  # Express workflows send none (eventbridge-integration.html)


def test_a_message_stays_in_flight_while_its_execution_runs(aws: Rehearsal) -> None:
    aws.faults.add(Fault(TASK, FaultKind.HANG, times=1))
    message_id = aws.send(product("sku-1"))

    (running,) = aws.wait_for_hang()
    attributes = aws.sqs.get_queue_attributes(QueueUrl=aws.outputs[Output.SOURCE_QUEUE_URL],
                                              AttributeNames=["All"])["Attributes"]
    visible, in_flight = attributes["ApproximateNumberOfMessages"], attributes["ApproximateNumberOfMessagesNotVisible"]
    assert (visible, in_flight) == ("0", "1")
    assert aws.pipe.waiting == 1 and aws.pipe.stats.deleted == 0

    aws.release_held()
    aws.run()

    assert aws.execution_status(running) == "SUCCEEDED"
    assert places(aws, {message_id: "sku-1"}) == {message_id: ["indexed"]}


def test_a_failed_execution_returns_the_message_which_the_next_receive_after_the_visibility_timeout_completes(
        aws: Rehearsal) -> None:
    aws.faults.add(Fault(TASK, FaultKind.CRASH, times=1))
    message_id = aws.send(product("sku-1"))

    (failed,) = aws.run()
    assert (failed.status, failed.states[-2:]) == ("FAILED", ["ClaimFailure", "FailureReturnedToQueue"])
    assert places(aws, {message_id: "sku-1"}) == {message_id: ["source queue"]}
    assert aws.pipe.stats.returned == 1
    # The claim is released, so that the next receive, same messageId, owns the message.
    assert [row for row in aws.items(Output.DELIVERIES_TABLE_NAME) if row["messageId"] == message_id] == []

    advance_until_quiet(aws)

    first, second = starts(aws, message_id)
    assert (second - first).total_seconds() == VISIBILITY_TIMEOUT  # the visibility-timeout dilemma, measured
    assert [e.status for e in aws.executions()] == ["FAILED", "SUCCEEDED"]
    assert places(aws, {message_id: "sku-1"}) == {message_id: ["indexed"]}


def test_a_message_that_always_fails_reaches_the_source_dlq_after_max_receive_count_executions(aws: Rehearsal) -> None:
    message_id = aws.send("not json")
    aws.run()

    advance_until_quiet(aws)

    executions = aws.executions()
    assert len(executions) == MAX_RECEIVE_COUNT
    assert {(e.status, e.error) for e in executions} == {("FAILED", "InvalidDocument")}  # the failed state's error
    first, *_, last = starts(aws, message_id)
    assert (last - first).total_seconds() == (MAX_RECEIVE_COUNT - 1) * VISIBILITY_TIMEOUT
    assert places(aws, {message_id: "none"}) == {message_id: ["source DLQ"]}
    (moved,) = aws.messages(Output.SOURCE_DLQ_URL)
    assert moved["Body"] == "not json"
    assert int(moved["Attributes"]["ApproximateReceiveCount"]) >= MAX_RECEIVE_COUNT


def test_a_refused_start_counts_a_receive_and_the_message_returns_after_the_visibility_timeout(aws: Rehearsal) -> None:
    aws.faults.add(Fault("StartExecution", FaultKind.START_REFUSED, times=1))
    message_id = aws.send(product("sku-1"))

    assert aws.run() == []
    assert places(aws, {message_id: "sku-1"}) == {message_id: ["source queue"]}
    advance_until_quiet(aws)

    (execution,) = aws.executions()
    assert execution.status == "SUCCEEDED"
    assert execution.input[0]["attributes"]["ApproximateReceiveCount"] == "2"
    assert places(aws, {message_id: "sku-1"}) == {message_id: ["indexed"]}


def test_a_start_refused_every_time_ends_in_the_source_dlq_without_any_execution(aws: Rehearsal) -> None:
    aws.faults.add(Fault("StartExecution", FaultKind.START_REFUSED))
    message_id = aws.send(product("sku-1"))
    aws.run()

    advance_until_quiet(aws)

    assert aws.executions() == []
    assert aws.pipe.stats.start_failures == MAX_RECEIVE_COUNT
    assert places(aws, {message_id: "sku-1"}) == {message_id: ["source DLQ"]}


@pytest.fixture(params=[False, True], ids=["stale-handle-keeps", "stale-handle-deletes"])
def delete_reading(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Both readings of DeleteMessage with an older receive's handle (fire_and_forget/rehearsal/sqs_rules.py)."""
    monkeypatch.setattr(sqs_rules, "stale_receipt_handle_deletes", request.param)
    return bool(request.param)


@pytest.mark.parametrize("timing", [DuplicateTiming.NEXT_POLL, DuplicateTiming.AFTER_END])
def test_a_duplicate_receive_is_absorbed_and_the_message_ends_indexed_only(
        aws: Rehearsal, delete_reading: bool, timing: DuplicateTiming) -> None:
    aws.pipe.duplicate_next, aws.pipe.duplicate_timing = 1, timing
    message_id = aws.send(product("sku-1"))
    aws.run()

    advance_until_quiet(aws)

    assert aws.pipe.stats.duplicates == 1
    assert len(aws.executions()) >= 2
    assert places(aws, {message_id: "sku-1"}) == {message_id: ["indexed"]}
    assert [row["version"] for row in indexed(aws)] == [1]


def test_every_message_of_a_mix_ends_in_exactly_one_place(aws: Rehearsal) -> None:
    aws.faults.add(Fault(TASK, FaultKind.CRASH, times=2))
    sent = {aws.send(product(f"sku-{n}")): f"sku-{n}" for n in range(4)}
    sent[aws.send("not json")] = "none"
    aws.run()

    advance_until_quiet(aws)

    found = places(aws, sent)
    assert all(len(where) == 1 for where in found.values()), found
    assert sorted(where for (where,) in found.values()) == ["indexed"] * 4 + ["source DLQ"]


def test_a_timed_out_execution_leaves_its_message_to_the_next_receive_which_takes_the_claim_over(
        assembly: Path) -> None:
    """No Catch sees a timeout and nothing reconciles an Express execution: its claim stays. The next receive comes a
    visibility timeout later, when the claim is older than any execution can run, and takes it over."""
    with Rehearsal.start(assembly, stack_name=request_response_app.STACK_NAME, execution_timeout_seconds=1) as aws:
        aws.faults.add(Fault(TASK, FaultKind.HANG, times=1))
        message_id = aws.send(product("sku-1"))
        (held,) = aws.wait_for_hang()
        aws.advance(2)
        assert aws.execution_status(held) == "TIMED_OUT"
        aws.release_held()  # the invocation the execution stopped waiting for runs on: it claims and indexes
        aws.set_execution_timeout(None)
        (claim,) = [row for row in aws.items(Output.DELIVERIES_TABLE_NAME) if row["messageId"] == message_id]
        assert claim["executionArn"] == held and "deliveredAt" not in claim
        assert places(aws, {message_id: "sku-1"}) == {message_id: ["indexed", "source queue"]}

        advance_until_quiet(aws)

        assert [e.status for e in aws.executions()] == ["TIMED_OUT", "SUCCEEDED"]
        first, second = starts(aws, message_id)
        assert (second - first).total_seconds() == VISIBILITY_TIMEOUT
        assert places(aws, {message_id: "sku-1"}) == {message_id: ["indexed"]}
        (claim,) = [row for row in aws.items(Output.DELIVERIES_TABLE_NAME) if row["messageId"] == message_id]
        assert claim["executionArn"] != held and "deliveredAt" in claim


def test_the_longest_run_the_construct_refuses_by_is_what_the_interpreter_does_with_retries_and_timeouts(
        aws: Rehearsal) -> None:
    """longest_run.py's count for one Task (every attempt to its TimeoutSeconds, every Retry wait at its longest),
    measured: the workflow's own state, held on every attempt, each attempt timed out on the clock."""
    resources = request_response_app.template()["Resources"].values()
    (machine,) = [r["Properties"] for r in resources if r["Type"] == "AWS::StepFunctions::StateMachine"]
    (function,) = [r["Properties"] for r in resources if r["Type"] == "AWS::Lambda::Function"]
    definition = json.loads(machine["DefinitionString"])
    index = definition["States"][TASK]
    # A held invocation ends at its function's timeout, before the Task's own (which the bound counts, the larger)
    attempt_seconds = function["Timeout"]
    assert attempt_seconds < index["TimeoutSeconds"]
    # Given every attempt the definition allows held until the Task's timeout
    allowed = 1 + sum(retrier["MaxAttempts"] for retrier in index["Retry"])
    aws.faults.add(Fault(TASK, FaultKind.HANG, times=allowed))
    aws.send(product("sku-1"))
    (arn,) = aws.wait_for_hang()
    # When the clock moves past them all
    aws.advance(definition["TimeoutSeconds"] - 1)
    try:
        # Then the execution failed after that many attempts, each as long as the function's timeout
        described = aws.sfn.describe_execution(executionArn=arn)
        assert described["status"] == "FAILED"
        events = aws.sfn.get_execution_history(executionArn=arn)["events"]
        scheduled = [e for e in events if e["type"] == "TaskScheduled"
                     and TASK in e["taskScheduledEventDetails"]["parameters"]]
        assert len(scheduled) == allowed
        elapsed = (described["stopDate"] - described["startDate"]).total_seconds()
        assert elapsed == allowed * attempt_seconds
        # And the interpreter drew each back-off wait under the ceiling the bound counts
        ceilings = [wait.ceiling for wait in aws.clock.for_execution(arn) if wait.state == TASK]
        assert len(ceilings) == allowed - 1
        assert attempts(index["Retry"]) == allowed
        assert retry_waits_seconds(index["Retry"]) == sum(ceiling or 0.0 for ceiling in ceilings)
        # So the whole workflow's bound holds this run with its waits at their longest, the bound taking each
        # attempt at the Task's TimeoutSeconds and leaving room for the tail
        bound = longest_run(definition, {}).seconds
        longest_waits = sum(ceiling or 0.0 for ceiling in ceilings)
        assert bound is not None
        assert elapsed + longest_waits <= allowed * index["TimeoutSeconds"] + longest_waits <= bound
        assert bound <= definition["TimeoutSeconds"]
    finally:
        aws.release_held()
