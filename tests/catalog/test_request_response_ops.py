"""ff-ops on a REQUEST_RESPONSE pipeline (tests/infra/request_response_app.py on the rehearsal): `status` and
`source-dlq redrive`, the commands that apply to the mode, work without a single Step Functions call (ListExecutions,
DescribeExecution, GetExecutionHistory and RedriveExecution support no Express workflow: the Step Functions API
reference of each); every other command is refused as a usage error that says where the mode's failures are.

ff-ops runs in this process (CliRunner) against the rehearsal's moto. moto has no StartMessageMoveTask, so ff-ops'
SQS client answers it from the practice account's emulation (fire_and_forget/rehearsal/practice_gateway.py,
MoveTasks: every message moved at once, then COMPLETED).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from botocore import xform_name
from botocore.awsrequest import AWSResponse
from typer.testing import CliRunner

import fire_and_forget.runtime.dlq
from fire_and_forget.cli import cli_common
from fire_and_forget.cli.app import app
from fire_and_forget.cli.aws import Clients
from fire_and_forget.rehearsal.faults import Fault, FaultKind
from fire_and_forget.rehearsal.practice_gateway import MoveTasks
from fire_and_forget.rehearsal.rehearsal import Rehearsal
from fire_and_forget.runtime.outputs import Output
from tests.catalog.test_request_response_rehearsal import (
    MAX_RECEIVE_COUNT,
    TASK,
    advance_until_quiet,
    indexed,
    places,
    product,
)
from tests.infra import request_response_app
from tests.permissions.operator import REQUEST_RESPONSE_CALLS

logging.getLogger("moto.stepfunctions.parser").setLevel(logging.CRITICAL)
STACK = request_response_app.STACK_NAME
recorded: set[str] = set()  # every boto3 method ff-ops called in the current test


@pytest.fixture(scope="module")
def assembly() -> Path:
    return request_response_app.assembly()


@pytest.fixture
def aws(assembly: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Rehearsal]:
    monkeypatch.setattr(fire_and_forget.runtime.dlq, "DEFAULT_WAIT_SECONDS", 0)  # short polling is exact in moto
    recorded.clear()
    with Rehearsal.start(assembly, stack_name=STACK) as rehearsal:
        rehearsal.publish_pipe()
        moves = MoveTasks(rehearsal.sqs)
        connect = cli_common.connect

        def connect_here(region: str | None = None, profile: str | None = None) -> Clients:
            clients = connect(region=region, profile=profile)
            make = clients._make

            def recording(service: str) -> Any:
                client = make(service)
                client.meta.events.register("before-call.*.*", lambda model, **_: recorded.add(xform_name(model.name)))
                return client

            clients._make = recording
            events = clients.sqs.meta.events
            for operation, answer in (("StartMessageMoveTask", moves.start), ("ListMessageMoveTasks", moves.list)):
                events.register(f"before-call.sqs.{operation}",
                                lambda params, answer=answer, **_: (AWSResponse("", 200, {}, None),
                                                                    answer(json.loads(params["body"]))))
            return clients

        def no_step_functions(_self: Clients) -> Any:
            raise AssertionError("ff-ops called Step Functions for an Express workflow: AWS would refuse it")

        monkeypatch.setattr(cli_common, "connect", connect_here)
        monkeypatch.setattr(Clients, "sfn", property(no_step_functions))
        yield rehearsal


def ff_ops(*args: str) -> tuple[int, Any, str]:
    result = CliRunner().invoke(app, [*args, "--stack-name", STACK, "--json"])
    document = json.loads(result.stdout) if result.stdout.strip() else None
    return result.exit_code, document, result.output


def only_granted_calls() -> None:
    """What ff-ops called is what the mode's operator policy grants (the permission matrix's list)."""
    # STS GetCallerIdentity (the audit's "who") needs no permission: its API reference says none is required.
    called = recorded - {"get_caller_identity"}
    assert called and called <= set(REQUEST_RESPONSE_CALLS), called - set(REQUEST_RESPONSE_CALLS)


def failed_five_times(aws: Rehearsal) -> str:
    """A product whose task crashes at every one of its receives: in the source DLQ after maxReceiveCount."""
    aws.faults.add(Fault(TASK, FaultKind.CRASH, times=MAX_RECEIVE_COUNT, key="sku-9"))
    message_id = aws.send(product("sku-9"))
    aws.run()
    advance_until_quiet(aws)
    assert places(aws, {message_id: "sku-9"}) == {message_id: ["source DLQ"]}
    return message_id


def test_status_reports_the_modes_queues_and_counts_failed_executions_from_the_metrics(aws: Rehearsal) -> None:
    failed_five_times(aws)

    code, status, output = ff_ops("status")

    assert code == 0, output
    assert status["invocationType"] == "REQUEST_RESPONSE"
    assert [(q["label"], q["visible"]) for q in status["queues"]] == [("source queue", 0), ("source DLQ", 1)]
    failed = sum(1 for e in aws.executions() if e.status == "FAILED")
    assert failed == MAX_RECEIVE_COUNT
    assert status["executions"]["countedFrom"] == "metrics"
    assert status["executions"]["counts"] == {"FAILED": failed, "TIMED_OUT": 0, "ABORTED": 0}
    assert status["executions"]["recent"] == [] and status["healing"] is None
    table = CliRunner().invoke(app, ["status", "--stack-name", STACK], terminal_width=200)
    assert table.exit_code == 0 and "CloudWatch metrics" in table.stdout and "failed 5" in table.stdout
    only_granted_calls()


def test_source_dlq_redrive_moves_the_message_back_and_the_next_receive_completes_it(aws: Rehearsal) -> None:
    failed_five_times(aws)

    code, listing, output = ff_ops("source-dlq", "redrive", "--all", "--dry-run")
    assert code == 0, output
    assert [m["key"] for m in listing["listed"]] == ["sku-9"] and not listing["started"]
    code, moved, output = ff_ops("source-dlq", "redrive", "--all", "--yes")
    aws.run()

    assert code == 0, output
    assert moved["task"]["status"] == "COMPLETED"
    assert [row["productId"] for row in indexed(aws)] == ["sku-9"]
    assert aws.messages(Output.SOURCE_DLQ_URL) == [] and aws.messages(Output.SOURCE_QUEUE_URL) == []
    only_granted_calls()


@pytest.mark.parametrize("command", [
    ["failures", "list"], ["failures", "show", "sku-9"], ["failures", "redrive", "--all", "--yes"],
    ["trace", "sku-9"], ["report", "--html", "/dev/null"],
    ["executions", "redrive", "--execution-arn", "arn:aws:states:us-east-1:123456789012:execution:x:y", "--yes"],
], ids=lambda command: " ".join(command[:2]))
def test_a_command_the_mode_does_not_have_is_refused_and_says_where_the_failures_are(
        aws: Rehearsal, command: list[str]) -> None:
    code, document, output = ff_ops(*command)

    assert code == 2, output
    assert document is not None and "REQUEST_RESPONSE" in document["error"]["message"]
    assert "source-dlq redrive" in document["error"]["hint"]
    assert recorded == {"describe_stacks"}  # refused before anything else is read

