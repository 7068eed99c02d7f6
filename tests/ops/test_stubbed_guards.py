"""The guard of ff-ops' state-changing commands, on stubbed clients: what `executions redrive` refuses, the prompt,
--rate, the audit lines, and the refusals that come before any AWS call (tests/ops/stubs.py for the Stubbers)."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from botocore.stub import Stubber
from typer.testing import CliRunner

from fire_and_forget.cli.app import app
from fire_and_forget.cli.errors import ExitCode
from tests.ops.stubs import (
    DLQ_ARN,
    NOW,
    OPERATOR,
    OUTPUTS,
    SOURCE_ARN,
    Clock,
    audit_lines,
    caller,
    claim,
    describe,
    described,
    execution_arn,
    stack_outputs,
    stubbed,
    stubbed_cli,
)
from tests.ops.test_stubbed_redrives import expect_move, move_task, queue_arns, source_dlq_holds

__all__ = ["stubbed", "stubbed_cli"]  # the fixtures this module's tests take

WRITE_COMMANDS = {
    "executions redrive": ["executions", "redrive", "--all"],
    "failures redrive": ["failures", "redrive", "--all"],
    "source-dlq redrive": ["source-dlq", "redrive", "--all"],
    "failures discard": ["failures", "discard", "--error", "OutOfStock"],
}


@pytest.mark.parametrize(("command", "how"), [
    ("executions redrive", "--execution-arn ARN, --status STATUS (both repeatable), or --all"),
    ("failures redrive", "--key, --error, --since/--until, or --all"),
    ("source-dlq redrive", "--all"),
    ("failures discard", "--key, --message-id or --error"),
])
def test_without_a_selection_a_command_that_changes_state_says_how_to_select(
        stubbed_cli: CliRunner, command: str, how: str) -> None:
    result = stubbed_cli.invoke(app, [*command.split(), "--yes"], terminal_width=200)

    # No response is stubbed: a call to AWS would have failed the command with another exit code
    assert result.exit_code == ExitCode.USAGE, result.output
    assert "say wh" in result.stderr and how in " ".join(result.stderr.split())


@pytest.mark.parametrize("command", WRITE_COMMANDS)
def test_without_a_terminal_and_without_yes_it_refuses_before_any_call(stubbed_cli: CliRunner, command: str) -> None:
    result = stubbed_cli.invoke(app, WRITE_COMMANDS[command], input="y\n")

    assert result.exit_code == ExitCode.USAGE, result.output
    assert "stdin is not a terminal" in result.stderr and "--yes" in result.stderr


@pytest.mark.parametrize("stage", ["CLAIMED", "RECORDED", "ANNOUNCED"])
@pytest.mark.parametrize("status", ["ABORTED", "TIMED_OUT", "FAILED"])
def test_an_execution_the_reconciler_claimed_is_never_redriven_not_even_with_force(
        stubbed: dict[str, Stubber], stubbed_cli: CliRunner, status: str, stage: str) -> None:
    # Given an execution whose message the Reconciler holds (its row in the deliveries table names it, at `stage`)
    stack_outputs(stubbed)
    describe(stubbed["stepfunctions"], described("settled", status, NOW - timedelta(hours=1), "States.TaskFailed"))
    claim(stubbed["dynamodb"], "settled", stage)

    # When the operator redrives it with --force (no RedriveExecution is stubbed: one would fail the command)
    result = stubbed_cli.invoke(app, ["executions", "redrive", "--execution-arn", execution_arn("settled"), "--force",
                                      "--yes", "--json"])

    # Then it is refused, with the reason, and the command is complete: the Redriver resends its message
    document = json.loads(result.stdout)
    assert result.exit_code == ExitCode.OK, result.output
    (item,) = document["items"]
    assert (item["verdict"], item["forced"]) == ("reconciled", False)
    assert "Reconciler" in item["reason"] and "never by resuming this execution" in item["reason"]
    assert document["summary"]["reconciled"] == 1 and document["audit"]["actions"] == 0


def test_a_claim_of_another_execution_does_not_make_this_one_reconciled(
        stubbed: dict[str, Stubber], stubbed_cli: CliRunner) -> None:
    # Given a FAILED execution whose message's row names another execution (a duplicate delivery's twin)
    stack_outputs(stubbed)
    describe(stubbed["stepfunctions"], described("twin", "FAILED", NOW - timedelta(hours=1), "States.TaskFailed"))
    claim(stubbed["dynamodb"], "twin", "ANNOUNCED", owner=execution_arn("the-other"))

    result = stubbed_cli.invoke(app, ["executions", "redrive", "--execution-arn", execution_arn("twin"), "--dry-run",
                                      "--json"])

    assert json.loads(result.stdout)["items"][0]["verdict"] == "would-redrive"


def test_a_stack_deployed_before_self_healing_has_no_claims_to_read(
        stubbed: dict[str, Stubber], stubbed_cli: CliRunner) -> None:
    # Given a stack without a Reconciler (no ReconcilerFunctionName output): its policy may not read the table
    stack_outputs(stubbed, {k: v for k, v in OUTPUTS.items() if k != "ReconcilerFunctionName"})
    describe(stubbed["stepfunctions"], described("old", "TIMED_OUT", NOW - timedelta(hours=1)))

    # (no GetItem is stubbed: reading the deliveries table would fail the command)
    result = stubbed_cli.invoke(app, ["executions", "redrive", "--execution-arn", execution_arn("old"), "--dry-run",
                                      "--json"])

    assert result.exit_code == ExitCode.OK, result.output
    assert json.loads(result.stdout)["items"][0]["verdict"] == "would-redrive"


def test_an_execution_a_person_aborted_is_refused_with_the_stop_and_force_redrives_it_in_the_audit(
        stubbed: dict[str, Stubber], stubbed_cli: CliRunner, tmp_path: Path) -> None:
    # Given an execution stopped with StopExecution, which the Reconciler has not claimed
    sfn, dynamodb = stubbed["stepfunctions"], stubbed["dynamodb"]
    stack_outputs(stubbed)
    stack_outputs(stubbed)  # once per command
    aborted = described("stopped", "ABORTED", NOW - timedelta(hours=1), "Operator", "stuck in ChargePayment")
    for _ in range(3):  # the refusal; then, with --force, the list and the look just before the redrive
        describe(sfn, aborted)
        claim(dynamodb, "stopped")
    sfn.add_response("redrive_execution", {"redriveDate": NOW}, {"executionArn": execution_arn("stopped")})
    caller(stubbed)
    log = tmp_path / "audit.jsonl"
    arn = ["--execution-arn", execution_arn("stopped"), "--yes", "--json", "--log", str(log)]

    # When the operator redrives it, then redrives it with --force
    refused = stubbed_cli.invoke(app, ["executions", "redrive", *arn])
    forced = stubbed_cli.invoke(app, ["executions", "redrive", *arn, "--force"])

    # Then the first is refused with the stop's error and cause (exit 8: left behind), the second redriven
    (item,) = json.loads(refused.stdout)["items"]
    assert refused.exit_code == ExitCode.INCOMPLETE and item["verdict"] == "aborted-by-person"
    assert "StopExecution (Operator: stuck in ChargePayment)" in item["reason"] and "--force" in item["reason"]
    (item,) = json.loads(forced.stdout)["items"]
    assert forced.exit_code == ExitCode.OK and (item["verdict"], item["forced"]) == ("redriven", True)
    # And the audit has one line, for the forced redrive: who, what, when, result, and that --force let it through
    (line,) = audit_lines(log.read_text(encoding="utf-8"))
    assert line["who"]["principal"] == OPERATOR and line["command"] == "executions redrive"
    assert (line["action"], line["target"]["executionArn"], line["result"]) == (
        "RedriveExecution", execution_arn("stopped"), "redriven")
    assert line["forced"] is True and line["at"] == "2026-11-29T12:00:00Z" and "--force" in line["reason"]


def test_a_declined_prompt_lists_the_executions_then_redrives_nothing(
        stubbed: dict[str, Stubber], stubbed_cli: CliRunner, terminal: None) -> None:
    stack_outputs(stubbed)
    describe(stubbed["stepfunctions"], described("failed", "FAILED", NOW - timedelta(hours=1), "States.TaskFailed"))
    claim(stubbed["dynamodb"], "failed")

    result = stubbed_cli.invoke(app, ["executions", "redrive", "--execution-arn", execution_arn("failed")],
                                input="n\n", terminal_width=250)

    assert result.exit_code == ExitCode.DECLINED, result.output
    listing, question = result.output.index(execution_arn("failed")), result.output.index("Redrive the 1 execution(s)")
    assert listing < question and "will redrive  failed" in result.output
    assert "declined" in result.output.split("[y/N]")[1]


def test_redrives_wait_for_their_turn_at_the_rate(stubbed: dict[str, Stubber], stubbed_cli: CliRunner,
                                                  monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Given three failed executions, and a clock that moves only when ff-ops waits
    sfn, dynamodb = stubbed["stepfunctions"], stubbed["dynamodb"]
    stack_outputs(stubbed)
    names = ("one", "two", "three")
    for redrive in (False, True):  # the list, then each one again just before its redrive
        for name in names:
            describe(sfn, described(name, "FAILED", NOW - timedelta(hours=1), "States.TaskFailed"))
            claim(dynamodb, name)
            if redrive:
                sfn.add_response("redrive_execution", {"redriveDate": NOW}, {"executionArn": execution_arn(name)})
    caller(stubbed)
    clock = Clock()
    clock.install(monkeypatch)
    log = tmp_path / "audit.jsonl"

    # When they are redriven at 2 a second
    result = stubbed_cli.invoke(app, ["executions", "redrive", *(f"--execution-arn={execution_arn(n)}" for n in names),
                                      "--rate", "2", "--yes", "--log", str(log)])

    # Then each RedriveExecution waited half a second after the one before it
    assert result.exit_code == ExitCode.OK, result.output
    assert clock.waits == [0.5, 0.5]
    assert [line["at"] for line in audit_lines(log.read_text(encoding="utf-8"))] == [
        "2026-11-29T12:00:00Z", "2026-11-29T12:00:00.500000Z", "2026-11-29T12:00:01Z"]


def test_source_dlq_redrive_lists_the_messages_then_moves_them_at_the_rate(
        stubbed: dict[str, Stubber], stubbed_cli: CliRunner, tmp_path: Path) -> None:
    stack_outputs(stubbed)
    queue_arns(stubbed["sqs"])
    source_dlq_holds(stubbed["sqs"], "ord-1", "ord-2")
    expect_move(stubbed["sqs"], 2, move_task("COMPLETED", 2), rate=7)  # MaxNumberOfMessagesPerSecond: --rate
    caller(stubbed)
    log = tmp_path / "audit.jsonl"

    result = stubbed_cli.invoke(app, ["source-dlq", "redrive", "--all", "--rate", "7", "--yes", "--log", str(log),
                                      "--poll-seconds", "0"], terminal_width=200)

    assert result.exit_code == ExitCode.OK, result.output
    assert result.output.index("will move  ord-1  dlq-ord-1") < result.output.index("Move the 2 message(s)")
    (line,) = audit_lines(log.read_text(encoding="utf-8"))
    assert (line["action"], line["result"], line["command"]) == ("StartMessageMoveTask", "started",
                                                                 "source-dlq redrive")
    assert line["target"] == {"sourceDlqArn": DLQ_ARN, "destinationArn": SOURCE_ARN, "taskHandle": "handle-1",
                              "messages": 2}


def test_a_declined_source_dlq_redrive_starts_no_move_task(stubbed: dict[str, Stubber], stubbed_cli: CliRunner,
                                                           terminal: None) -> None:
    stack_outputs(stubbed)
    queue_arns(stubbed["sqs"])
    source_dlq_holds(stubbed["sqs"], "ord-1")

    result = stubbed_cli.invoke(app, ["source-dlq", "redrive", "--all", "--json"], input="n\n")

    # (no StartMessageMoveTask is stubbed: one would have failed the command)
    document = json.loads(result.stdout[result.stdout.index("{"):])  # after the answer CliRunner echoes
    assert result.exit_code == ExitCode.DECLINED
    assert (document["declined"], document["started"], document["task"]) == (True, False, None)
