"""The practice account: the demo's deployment on a local endpoint, driven by `ff-ops` in another process.

The ff-ops commands run as subprocesses with only the environment the practice account prints, as an operator's
shell would run them. Their output is compared with docs/transcripts/, which README.md and docs/operator-cli.md quote
(tests/support/transcripts.py; FF_UPDATE_TRANSCRIPTS=1 rewrites them).
"""

from __future__ import annotations

import io
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
from rich.console import Console

from demos.orders.demo import quiet_logs, run_demo
from demos.orders.practice import PracticeAccount, instructions, practice_account
from demos.orders.samples import OUT_OF_STOCK_SKU, OrderKind, make_order
from fire_and_forget.rehearsal.deployment import ACCOUNT
from fire_and_forget.rehearsal.execution_events import status_change_event
from fire_and_forget.rehearsal.practice_gateway import REDRIVE_UNSUPPORTED
from fire_and_forget.rehearsal.rehearsal import Rehearsal
from fire_and_forget.runtime.healing_policy import first_message_id
from fire_and_forget.runtime.records import message_key
from tests.demo import runbook
from tests.support import transcripts

ROOT = Path(__file__).resolve().parents[2]
# Seed 5 with 24 orders: three OutOfStock orders, two malformed ones, the rest valid, declined or unserved.
ORDERS, SEED = 24, 5
DEMO_OUTCOMES = {"succeeded": 16, "failed, compensated, in failure DLQ": 8, "absorbed by its work's owning attempt": 1}
DEMO_ERRORS = {"OutOfStock": 3, "InvalidOrder": 2, "ShippingUnavailable": 3}


@pytest.fixture(scope="module")
def practice(cloud_assembly: Path) -> Iterator[PracticeAccount]:
    quiet_logs()
    with Rehearsal.start(cloud_assembly) as aws:
        result = run_demo(aws, Console(file=io.StringIO()), orders=ORDERS, chaos=False, seed=SEED)
        # The same seed gives the same run: the account every test here starts from is this one, whatever the load.
        assert (result["outcomes"], result["errors"]) == (DEMO_OUTCOMES, DEMO_ERRORS)
        with practice_account(aws, port=0) as account:
            yield account


def run(account: PracticeAccount, *command: str) -> subprocess.CompletedProcess[str]:
    """A command as the operator types it, in a shell holding only the printed exports (and PATH)."""
    tool = {"ff-ops": "fire_and_forget.cli.app", "ff-practice": "demos.orders.practice"}[command[0]]
    env = {
        "PATH": os.environ["PATH"],
        "HOME": os.environ.get("HOME", "/tmp"),
        "COLUMNS": "110",
        "PYTHONPATH": f"{ROOT}:{ROOT / 'lambdas'}:{ROOT / 'lambdas' / 'orders'}",
        **account.environment,
    }
    return subprocess.run(
        [sys.executable, "-m", tool, *command[1:]],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def transcript(name: str, steps: list[tuple[str, subprocess.CompletedProcess[str]]]) -> None:
    """These steps' output against docs/transcripts/<name>.txt (tests/support/transcripts.py)."""
    transcripts.check(name, transcripts.as_transcript([(command, result.stdout) for command, result in steps]))


def _orders_in(account: PracticeAccount, status: str) -> set[str]:
    found = set()
    for execution in account.aws.executions():
        body = execution.input[0]["body"] if isinstance(execution.input, list) else ""
        if execution.status == status and '"orderId"' in body:
            found.add(json.loads(body)["orderId"])
    return found


def test_instructions_name_everything_ff_ops_needs(practice: PracticeAccount) -> None:
    exports = next(line for line in instructions(practice) if "export" in line)
    assert f"AWS_ENDPOINT_URL={practice.endpoint}" in exports
    for variable in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION"):
        assert f"{variable}=" in exports
    # and every program it suggests is one `make install` put in place (no uv on PATH needed)
    suggested = [line.split()[0] for line in instructions(practice) if line.startswith("  .venv/")]
    assert suggested and all((ROOT / program).exists() for program in suggested)
    assert not any("uv run" in line for line in instructions(practice))


def test_a_failure_redriven_after_restock_ends_succeeded(practice: PracticeAccount) -> None:
    # Given the demo's three OutOfStock failures in the failure DLQ
    steps = [
        (c, run(practice, *c.split()))
        for c in (
            "ff-ops status",
            "ff-ops failures list --error OutOfStock",
            "ff-ops failures redrive --error OutOfStock --dry-run",
        )
    ]
    assert all(result.returncode == 0 for _, result in steps), [r.stderr for _, r in steps]
    assert "Pipe" in steps[0][1].stdout and "RUNNING" in steps[0][1].stdout
    listed = set(re.findall(r"ord-\d{6}", steps[1][1].stdout))
    assert len(listed) == 3
    # When the operator restocks and redrives them
    fix_and_redrive = (
        f"ff-practice restock {OUT_OF_STOCK_SKU} --units 100",
        "ff-ops failures redrive --error OutOfStock --yes",
    )
    for command in fix_and_redrive:
        steps.append((command, run(practice, *command.split())))
        assert steps[-1][1].returncode == 0, steps[-1][1].stderr
    practice.settle()
    steps.append(
        (
            "ff-ops failures list --error OutOfStock",
            run(practice, "ff-ops", "failures", "list", "--error", "OutOfStock"),
        )
    )
    # Then each order ran again, through the pipe the practice account keeps pumping, and succeeded
    assert listed <= _orders_in(practice, "SUCCEEDED")
    assert re.search(r"Read \d+ messages; redriven 3\.", steps[4][1].stdout)
    assert not re.findall(r"ord-\d{6}", steps[-1][1].stdout)
    assert practice.pump_errors == []
    transcript("practice-redrive", steps)
    transcript("practice-readme", [steps[1], steps[3], steps[4]])  # README.md's shorter quote


def test_source_dlq_redrive_moves_messages_back_and_they_run(practice: PracticeAccount) -> None:
    # Given a message the pipe could not hand over, in the source DLQ
    aws = practice.aws
    body = json.dumps({"orderId": "ord-practice-dlq", "items": []})
    aws.sqs.send_message(QueueUrl=aws.outputs["SourceDlqUrl"], MessageBody=body)
    # When the operator redrives the source DLQ (StartMessageMoveTask, emulated by the practice account)
    result = run(practice, "ff-ops", "source-dlq", "redrive", "--all", "--yes", "--poll-seconds", "0")
    practice.settle()
    # Then the move task completed, the DLQ is empty, and the message was handed to an execution
    assert result.returncode == 0, result.stderr
    assert "COMPLETED" in result.stdout
    assert aws.messages("SourceDlqUrl") == []
    assert any(e.input[0]["body"] == body for e in aws.executions() if isinstance(e.input, list))
    transcript("practice-source-dlq", [("ff-ops source-dlq redrive --all --yes", result)])


def test_the_idle_account_does_no_work_until_a_request_gives_it_some(practice: PracticeAccount) -> None:
    # Given the account quiet
    practice.settle()
    rounds = practice.rounds
    # When nobody calls it for a while
    time.sleep(0.6)
    # Then it did nothing (it does not poll)
    assert practice.rounds == rounds
    # When a caller sends an order to the source queue through the account's endpoint
    order = make_order(OrderKind.VALID, 900, random.Random(900))
    environment = practice.environment
    sqs = boto3.client("sqs", endpoint_url=practice.endpoint, region_name=environment["AWS_REGION"],
                       aws_access_key_id=environment["AWS_ACCESS_KEY_ID"],
                       aws_secret_access_key=environment["AWS_SECRET_ACCESS_KEY"])
    sqs.send_message(QueueUrl=practice.aws.outputs["SourceQueueUrl"], MessageBody=order.body)
    # Then the account runs it to its end by itself, nobody waiting on it
    deadline = time.monotonic() + 60  # a guard against waiting forever, not a time limit
    while order.order_id not in _orders_in(practice, "SUCCEEDED"):
        assert time.monotonic() < deadline, "the order sent to the idle account never ran"
        time.sleep(0.05)
    assert practice.rounds > rounds and practice.pump_errors == []


def test_executions_redrive_says_the_practice_account_cannot(practice: PracticeAccount) -> None:
    # Given a FAILED execution (one of the demo's, recorded in the failure DLQ)
    failed = next(e.arn for e in practice.aws.executions() if e.status == "FAILED")
    # When the operator redrives it
    result = run(practice, "ff-ops", "executions", "redrive", "--execution-arn", failed, "--include-recorded", "--yes",
                 "--json")
    # Then ff-ops reports it left behind, with the practice account's reason (exit 8: something was left behind)
    assert result.returncode == 8, result.stderr
    (outcome,) = json.loads(result.stdout)["items"]
    assert outcome["verdict"] == "redrive-failed"
    assert "PracticeAccountUnsupported" in outcome["reason"] and REDRIVE_UNSUPPORTED[:40] in outcome["reason"]


def _manual_repairs(aws: Rehearsal) -> list[str]:
    """The failure records flagged for manual repair, with what each compensation returned: why a redrive refused."""
    found = []
    for message in aws.messages("FailureDlqUrl"):
        record = json.loads(message["Body"])
        if record.get("manualRepair"):
            found.append(f"manual repair: {record['executionArn']} {record['failure']['error']} "
                         f"{json.dumps(record.get('compensation'))} {json.dumps(record.get('reconciliation'))}")
    return found


def _placeholder(account: PracticeAccount, name: str) -> str:
    """A value for the runbook's ORDER_ID, MESSAGE_ID (the failed order's caller message), ERROR or EXECUTION_ARN,
    from the account as it is now."""
    if name == "EXECUTION_ARN":
        return next(e.arn for e in account.aws.executions() if e.status == "FAILED")
    for message in account.aws.messages("FailureDlqUrl"):  # a record with a key: an order the runbook can name
        record = json.loads(message["Body"])
        order_id = message_key(record["record"]["body"], "orderId")
        if order_id:
            if name == "MESSAGE_ID":
                return str(first_message_id(record["record"]) or record["record"]["messageId"])
            return order_id if name == "ORDER_ID" else str(record["failure"]["error"])
    raise AssertionError(f"no failure record in the practice account to fill {name}")


def test_every_runbook_command_runs_against_the_practice_account(
    practice: PracticeAccount, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/runbook.md from top to bottom, each command as it is written (tests/demo/runbook.py), in this process."""
    # Given the demo's failures, and in each DLQ of the alerting path and the healers an event to handle
    aws = practice.aws
    failed = aws.sfn.describe_execution(executionArn=next(e.arn for e in aws.executions() if e.status == "FAILED"))
    event = json.dumps(status_change_event(failed, ACCOUNT, aws.region), default=str)
    dlqs = ("EventTargetDlqUrl", "ReconcilerDlqUrl", "ScheduleDlqUrl")
    for output in dlqs:
        aws.sqs.send_message(QueueUrl=aws.outputs[output], MessageBody=event)
    monkeypatch.chdir(tmp_path)
    shell = runbook.Shell(practice.environment, tmp_path, lambda name: _placeholder(practice, name))
    # When an operator runs every command of the runbook, in order
    for command in runbook.commands(runbook.RUNBOOK.read_text(encoding="utf-8")):
        if shell.run(command):
            practice.settle()  # what the command sent back runs, and is recorded, before the next one looks
    # Then each one did what the runbook says (exit 0), but where the practice account refuses RedriveExecution (8)
    wrong = []
    for outcome in shell.outcomes:
        refused = outcome.exit_code == 8 and "PracticeAccountUnsupported" in outcome.output
        if outcome.exit_code != 0 and not (refused and outcome.ran.startswith("ff-ops executions redrive")):
            wrong.append(f"runbook line {outcome.command.line} ({outcome.command.section}): {outcome.ran} -> exit "
                         f"{outcome.exit_code}\n{outcome.output[-600:]}")
    assert wrong == [], "\n".join(wrong + _manual_repairs(aws))
    assert len(shell.outcomes) >= 40
    # The variables of "Before you start" hold the stack's outputs
    assert shell.variables["SM_ARN"] == aws.outputs["StateMachineArn"]
    assert shell.variables["RECONCILER_DLQ"] == aws.outputs["ReconcilerDlqUrl"]
    # The events the runbook says to delete once handled are gone, the discarded order is in its log
    assert all(aws.messages(output) == [] for output in dlqs)
    assert json.loads((tmp_path / "discarded.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert practice.pump_errors == []
    # make smoke runs the command the runbook gives next to it
    assert "python -m demos.orders.cli_smoke" in (ROOT / "Makefile").read_text(encoding="utf-8")


@pytest.mark.parametrize("signal_number", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_or_kill_stops_the_practice_account_cleanly(
    cloud_assembly: Path, tmp_path: Path, signal_number: int
) -> None:
    # Given `ff-practice start` serving (a small demo first)
    command = [
        sys.executable,
        "-m",
        "demos.orders.practice",
        "start",
        "--orders",
        "4",
        "--port",
        "0",
        "--assembly",
        str(cloud_assembly),
        "--report",
        str(tmp_path / "demo-report.json"),
    ]
    env = {**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'lambdas'}:{ROOT / 'lambdas' / 'orders'}", "COLUMNS": "200"}
    with subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    ) as process:
        assert process.stdout is not None
        lines = []
        for line in process.stdout:
            lines.append(line)
            if "Ctrl-C stops the account" in line:
                break
        endpoint = re.search(r"AWS_ENDPOINT_URL=(\S+)", "".join(lines))
        assert endpoint is not None, "".join(lines)
        # When the operator presses Ctrl-C (or kills it)
        process.send_signal(signal_number)
        rest = process.communicate(timeout=60)[0]
    # Then it says so, exits 0, and the port is closed
    assert process.returncode == 0, "".join(lines)[-1500:] + rest
    assert "Stopping the practice account." in rest
    host, port = endpoint.group(1).removeprefix("http://").split(":")
    with pytest.raises(OSError), socket.create_connection((host, int(port)), timeout=2):
        pass
