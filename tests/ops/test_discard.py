"""`ff-ops failures discard` on the offline deployment: only the selected go, each logged before it is deleted."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fire_and_forget.cli.app import app
from fire_and_forget.cli.aws import Clients
from fire_and_forget.cli.discard import DiscardRequest, DiscardVerdict, discard_failures
from fire_and_forget.cli.errors import ExitCode
from fire_and_forget.rehearsal.ops_center import OpsCenter
from fire_and_forget.rehearsal.rehearsal import Rehearsal
from fire_and_forget.runtime.records import Selection
from tests.ops.helpers import depth, failed_orders, ff_ops, queued_orders


def test_discard_deletes_only_the_selected_order_and_logs_its_whole_record(
    aws: Rehearsal, cli: CliRunner, tmp_path: Path
) -> None:
    # Given three abandoned orders in the failure DLQ
    first, second, third = failed_orders(aws, 3, first=7201)
    (dlq_message,) = [m for m in aws.messages("FailureDlqUrl") if second in m["Body"]]
    log = tmp_path / "discarded.jsonl"

    # When the operator discards the second one
    code, doc = ff_ops(cli, "failures", "discard", "--order-id", second, "--yes", "--log", str(log))

    # Then it is gone, the others are visible again, and the log holds exactly what the DLQ message held
    assert code == 0 and doc["summary"]["discarded"] == 1 and doc["complete"] is True
    assert doc["keyField"] == "orderId" and [item["key"] for item in doc["items"]] == [second]
    assert queued_orders(aws, "FailureDlqUrl") == {first: 1, third: 1}
    assert depth(aws, "FailureDlqUrl") == (2, 0)
    # (and after it, the audit line of the delete: fire_and_forget/cli/guard.py)
    logged, audited = (json.loads(line) for line in log.read_text(encoding="utf-8").splitlines())
    assert audited["schema"] == "ff-ops/audit/v1" and audited["result"] == "discarded"
    assert audited["target"]["messageId"] == dlq_message["MessageId"]
    assert logged["schema"] == "ff-ops/discarded/v1" and logged["key"] == second and logged["keyField"] == "orderId"
    assert logged["dlqMessageId"] == dlq_message["MessageId"] and logged["error"] == "OutOfStock"
    assert logged["failureRecord"] == json.loads(dlq_message["Body"])


def test_each_record_is_in_the_log_while_its_message_is_still_in_the_dlq(aws: Rehearsal) -> None:
    # Given two abandoned orders, and a log that notes how many messages the DLQ holds at each write
    order_ids = failed_orders(aws, 2, first=7251)
    seen: list[int] = []

    class Log(io.StringIO):
        def write(self, text: str) -> int:
            seen.append(sum(depth(aws, "FailureDlqUrl")))
            return super().write(text)

    log = Log()
    request = DiscardRequest(Selection(keys=frozenset(order_ids)), wait_seconds=0)

    # When both are discarded
    result = discard_failures(aws.sqs, aws.outputs["FailureDlqUrl"], "FireAndForget", request, log)

    # Then the first line was written with both messages still there, the second with its own still there
    assert result.count(DiscardVerdict.DISCARDED) == 2
    assert seen == [2, 1]
    assert sorted(json.loads(line)["key"] for line in log.getvalue().splitlines()) == sorted(order_ids)
    assert depth(aws, "FailureDlqUrl") == (0, 0)


def test_a_log_that_cannot_be_opened_deletes_nothing(aws: Rehearsal, cli: CliRunner, tmp_path: Path) -> None:
    # Given a log that cannot be written (a directory)
    (order_id,) = failed_orders(aws, 1, first=7211)

    result = cli.invoke(app, ["failures", "discard", "--order-id", order_id, "--yes", "--log", str(tmp_path)])

    # Then nothing was deleted, and the operator is told why
    assert result.exit_code == ExitCode.USAGE and "cannot write the log" in result.output
    assert queued_orders(aws, "FailureDlqUrl") == {order_id: 1}


def test_dry_run_and_a_declined_prompt_delete_nothing(
    aws: Rehearsal, cli: CliRunner, tmp_path: Path, terminal: None
) -> None:
    order_ids = failed_orders(aws, 2, first=7221)
    log = tmp_path / "log.jsonl"

    code, dry = ff_ops(cli, "failures", "discard", "--error", "OutOfStock", "--dry-run", "--log", str(log))
    declined = cli.invoke(app, ["failures", "discard", "--error", "OutOfStock", "--log", str(log)], input="n\n")

    assert code == 0 and dry["summary"]["wouldDiscard"] == 2 and dry["dryRun"] is True
    assert declined.exit_code == ExitCode.DECLINED and "declined 2" in declined.output
    assert queued_orders(aws, "FailureDlqUrl") == dict.fromkeys(order_ids, 1)
    assert depth(aws, "FailureDlqUrl") == (2, 0)
    assert not log.exists() or log.read_text(encoding="utf-8") == ""


def test_a_yes_at_the_prompt_discards_by_source_message_id(
    aws: Rehearsal, cli: CliRunner, tmp_path: Path, terminal: None
) -> None:
    kept, gone = failed_orders(aws, 2, first=7231)
    source_id = next(
        json.loads(m["Body"])["record"]["messageId"] for m in aws.messages("FailureDlqUrl") if gone in m["Body"]
    )

    result = cli.invoke(
        app, ["failures", "discard", "--message-id", source_id, "--log", str(tmp_path / "l")], input="y\n"
    )

    assert result.exit_code == 0, result.output
    assert "Discard the 1 failure record(s)" in result.output and gone in result.output
    assert queued_orders(aws, "FailureDlqUrl") == {kept: 1}


def test_discard_without_a_selection_is_refused(aws: Rehearsal, cli: CliRunner) -> None:
    failed_orders(aws, 1, first=7241)

    result = cli.invoke(app, ["failures", "discard", "--yes"])

    assert result.exit_code == ExitCode.USAGE and "say which failures to discard" in result.output
    assert depth(aws, "FailureDlqUrl") == (1, 0)


def test_discarding_a_message_resolves_its_opscenter_ticket(aws: Rehearsal, cli: CliRunner, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    # Given an abandoned order whose failure for good opened a ticket (fire_and_forget.healing.tickets), in an
    # OpsCenter moto does not model (the rehearsal's emulator, checked against the SSM API's model)
    (order,) = failed_orders(aws, 1, first=7301)
    (dlq_message,) = aws.messages("FailureDlqUrl")
    caller = json.loads(dlq_message["Body"])["record"]["messageId"]
    center = OpsCenter()
    ticket = center.create_ops_item(Title="t", Source="fire-and-forget", Description="d")["OpsItemId"]
    table = aws.outputs["DeliveriesTableName"]
    aws.dynamodb.update_item(TableName=table, Key={"messageId": {"S": caller}}, UpdateExpression="SET ticket = :t",
                             ExpressionAttributeValues={":t": {"S": ticket}})
    monkeypatch.setattr(Clients, "ssm", property(lambda clients: center))
    log = tmp_path / "discarded.jsonl"

    # When the operator discards it
    code, doc = ff_ops(cli, "failures", "discard", "--order-id", order, "--yes", "--log", str(log))

    # Then its ticket is resolved, the caller's row says so, and the audit log has the call
    assert code == 0 and doc["summary"]["discarded"] == 1
    assert center.items[ticket].status == "Resolved"
    row = aws.dynamodb.get_item(TableName=table, Key={"messageId": {"S": caller}})["Item"]
    assert "ticket" not in row and row["resolvedTicket"] == {"S": ticket}
    audited = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()][-1]
    assert (audited["action"], audited["result"], audited["target"]["ticket"]) == ("UpdateOpsItem", "resolved", ticket)


def test_discarding_without_a_ticket_calls_no_opscenter(aws: Rehearsal, cli: CliRunner,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    (order,) = failed_orders(aws, 1, first=7311)
    center = OpsCenter()
    monkeypatch.setattr(Clients, "ssm", property(lambda clients: center))
    code, doc = ff_ops(cli, "failures", "discard", "--order-id", order, "--yes")
    assert code == 0 and doc["summary"]["discarded"] == 1 and center.calls == []
