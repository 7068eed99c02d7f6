"""The guard of ff-ops' state-changing commands on the offline deployment: the list and the prompt of `failures
redrive`, --rate and the audit lines of `failures redrive` and `failures discard`, and `executions redrive` refusing
an execution the real Reconciler settled.

Order numbers are 76xx.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from typer.testing import CliRunner

from demos.orders.samples import OrderKind, make_order
from fire_and_forget.cli.app import app
from fire_and_forget.cli.errors import ExitCode
from fire_and_forget.rehearsal.faults import Fault, FaultKind
from fire_and_forget.rehearsal.rehearsal import Rehearsal
from tests.ops.helpers import depth, failed_orders, ff_ops, forget_releases, queued_orders, restock
from tests.ops.stubs import Clock, audit_lines


def test_redrive_lists_the_selected_records_then_a_no_changes_nothing(
        aws: Rehearsal, cli: CliRunner, terminal: None) -> None:
    # Given two failed orders
    order_ids = failed_orders(aws, 2, first=7601)
    message_ids = {json.loads(m["Body"])["record"]["messageId"]: m["MessageId"] for m in aws.messages("FailureDlqUrl")}

    # When the operator asks to redrive them and answers no
    result = cli.invoke(app, ["failures", "redrive", "--error", "OutOfStock"], input="n\n", terminal_width=250)

    # Then both were listed, by key and DLQ message id, before the question; nothing moved; exit code DECLINED
    assert result.exit_code == ExitCode.DECLINED, result.output
    question = result.output.index("Redrive the 2 failure record(s)")
    for order_id in order_ids:
        assert result.output.index(order_id) < question
    for dlq_message_id in message_ids.values():
        assert result.output.index(dlq_message_id) < question
    assert "declined 2" in result.output
    assert queued_orders(aws, "FailureDlqUrl") == dict.fromkeys(order_ids, 1)
    assert depth(aws, "FailureDlqUrl") == (2, 0) and depth(aws, "SourceQueueUrl") == (0, 0)


def test_redrive_goes_at_the_rate_and_writes_an_audit_line_per_message(
        aws: Rehearsal, cli: CliRunner, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Given three failed orders, restocked, and a clock that moves only when ff-ops waits
    order_ids = failed_orders(aws, 3, first=7611)
    restock(aws)
    clock = Clock()
    clock.install(monkeypatch)
    log = tmp_path / "audit.jsonl"

    # When the operator redrives them at 2 a second
    code, document = ff_ops(cli, "failures", "redrive", "--error", "OutOfStock", "--rate", "2", "--yes",
                            "--log", str(log))

    # Then the three sends were half a second apart, and each left one line: who, what, when, result
    assert code == ExitCode.OK and document["summary"]["redriven"] == 3
    assert clock.waits == [0.5, 0.5]
    lines = audit_lines(log.read_text(encoding="utf-8"))
    assert [line["at"] for line in lines] == [
        "2026-11-29T12:00:00Z", "2026-11-29T12:00:00.500000Z", "2026-11-29T12:00:01Z"]
    assert sorted(line["target"]["key"] for line in lines) == sorted(order_ids)
    for line in lines:
        assert line["who"]["principal"].startswith("arn:aws:") and line["command"] == "failures redrive"
        assert (line["action"], line["result"], line["forced"]) == ("SendMessage+DeleteMessage", "redriven", False)
        assert line["target"]["newMessageId"]
    assert document["audit"] == {"schema": "ff-ops/audit/v1", "log": str(log), "actions": 3}
    assert depth(aws, "FailureDlqUrl") == (0, 0)


def test_discard_goes_at_the_rate(aws: Rehearsal, cli: CliRunner, monkeypatch: pytest.MonkeyPatch,
                                  tmp_path: Path) -> None:
    failed_orders(aws, 2, first=7621)
    clock = Clock()
    clock.install(monkeypatch)

    code, document = ff_ops(cli, "failures", "discard", "--error", "OutOfStock", "--rate", "4", "--yes",
                            "--log", str(tmp_path / "log.jsonl"))

    assert code == ExitCode.OK and document["summary"]["discarded"] == 2
    assert clock.waits == [0.25] and document["audit"]["actions"] == 2


def test_an_aborted_execution_the_reconciler_settled_is_never_redriven(aws: Rehearsal, cli: CliRunner) -> None:
    # Given an order aborted in ChargePayment, which the Reconciler compensated, recorded and announced
    sample = make_order(OrderKind.VALID, 7631, random.Random(7631))
    assert sample.order_id is not None
    aws.faults.add(Fault("ChargePayment", FaultKind.HANG, key=sample.order_id))
    aws.send(sample.body)
    (hung,) = aws.wait_for_hang()
    aws.abort(hung)
    aws.release_held()
    aws.run()
    (record,) = [json.loads(m["Body"]) for m in aws.messages("FailureDlqUrl")]
    assert record["executionArn"] == hung and record["reconciliation"]["status"] == "ABORTED"

    # When the operator redrives the execution, even with --force
    code, document = ff_ops(cli, "executions", "redrive", "--execution-arn", hung, "--force", "--yes")

    # Then it is refused, the reason names the Reconciler, and nothing was redriven
    (item,) = document["items"]
    assert code == ExitCode.OK and (item["status"], item["verdict"]) == ("ABORTED", "reconciled")
    assert "the Reconciler compensated it, recorded its message in the failure DLQ and announced it" in item["reason"]
    assert document["audit"]["actions"] == 0
    assert aws.execution_status(hung) == "ABORTED"


def test_a_hang_holds_after_an_earlier_test_released_held_calls(aws: Rehearsal) -> None:
    # Given an earlier test's release, left set on the package's one deployment
    aws.faults.release()
    # When the next test's reset runs, and that test plans a hang
    forget_releases(aws)
    order = make_order(OrderKind.VALID, 9301, random.Random(9301))
    assert order.order_id is not None
    aws.faults.add(Fault("ChargePayment", FaultKind.HANG, key=order.order_id))
    aws.send(order.body)
    # Then the hang holds its invocation until released, however long the rehearsal runs
    (hung,) = aws.wait_for_hang()
    aws.run_until_quiet()
    assert aws.execution(hung).status == "RUNNING"
    aws.release_held()
    aws.run()
    assert aws.execution(hung).status == "SUCCEEDED"
