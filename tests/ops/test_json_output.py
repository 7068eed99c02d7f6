"""The --json documents keep exactly the keys docs/operator-cli.md lists (a script's contract), every time.

source-dlq and executions documents are held to theirs in test_stubbed_redrives.py.
"""

from __future__ import annotations

from typer.testing import CliRunner

from fire_and_forget.cli.errors import ExitCode
from fire_and_forget.rehearsal.rehearsal import Rehearsal
from tests.ops.helpers import failed_orders, ff_ops

FAILURE = {"messageId", "sourceMessageId", "key", "error", "cause", "failedState", "failedAt", "manualRepair",
           "executionArn", "disposition", "attempt", "dueAt", "notRedrivable", "reconciliation", "copies"}
FAILURE_DETAIL = FAILURE | {"compensation", "stateMachineArn", "body", "messageAttributes", "record"}
UNRECOGNIZED = {"messageId", "reason", "bodyPreview"}
REDRIVE_ITEM = {"messageId", "key", "error", "action", "newMessageId", "reason"}
REDRIVE_SUMMARY = {"redriven", "wouldRedrive", "refusedManualRepair", "unrecognized", "sendFailed", "sentNotDeleted",
                   "copyDeleted", "declined"}
AUDIT = {"schema", "log", "actions"}
QUEUE = {"outputKey", "label", "url", "visible", "inFlight", "delayed", "oldestAgeSeconds"}
EXECUTION = {"executionArn", "name", "status", "startDate", "stopDate", "messageId", "key"}


def test_failures_list_and_show_documents(aws: Rehearsal, cli: CliRunner) -> None:
    (order_id,) = failed_orders(aws, 1)
    aws.sqs.send_message(QueueUrl=aws.outputs["FailureDlqUrl"], MessageBody="not ours")

    _, listing = ff_ops(cli, "failures", "list")
    _, shown = ff_ops(cli, "failures", "show", order_id)

    assert listing["schema"] == "ff-ops/failures-list/v1"
    assert set(listing) == {"schema", "stack", "keyField", "queueUrl", "approximateDepth", "read", "truncated",
                            "matching", "nextToken", "failures", "unrecognized"}
    assert listing["keyField"] == "orderId" and [f["key"] for f in listing["failures"]] == [order_id]
    assert [set(f) for f in listing["failures"]] == [FAILURE]
    assert [set(m) for m in listing["unrecognized"]] == [UNRECOGNIZED]
    assert shown["schema"] == "ff-ops/failures-show/v1" and set(shown) == {"schema", "stack",
    "keyField", "failures"}
    assert [set(f) for f in shown["failures"]] == [FAILURE_DETAIL]


def test_failures_redrive_document(aws: Rehearsal, cli: CliRunner) -> None:
    failed_orders(aws, 2)

    _, dry = ff_ops(cli, "failures", "redrive", "--all", "--dry-run")
    _, done = ff_ops(cli, "failures", "redrive", "--yes", "--all")

    for document in (dry, done):
        assert document["schema"] == "ff-ops/failures-redrive/v1"
        assert set(document) == {"schema", "stack", "keyField", "dryRun", "read", "complete", "summary", "items",
                                 "audit"}
        assert set(document["audit"]) == AUDIT and document["audit"]["schema"] == "ff-ops/audit/v1"
        assert document["keyField"] == "orderId"
        assert set(document["summary"]) == REDRIVE_SUMMARY
        assert {frozenset(item) for item in document["items"]} == {frozenset(REDRIVE_ITEM)}
    assert {item["action"] for item in dry["items"]} == {"would-redrive"}
    assert {item["action"] for item in done["items"]} == {"redriven"}
    assert (dry["audit"]["actions"], done["audit"]["actions"]) == (0, 2)


def test_status_document(aws: Rehearsal, cli: CliRunner) -> None:
    failed_orders(aws, 1, first=400)

    _, status = ff_ops(cli, "status")

    assert status["schema"] == "ff-ops/status/v1"
    assert set(status) == {"schema", "stack", "region", "keyField", "invocationType", "queues", "pipe", "executions",
                           "healing"}
    assert status["invocationType"] == "FIRE_AND_FORGET"
    assert [q["outputKey"] for q in status["queues"]] == [
        "SourceQueueUrl", "SourceDlqUrl", "FailureDlqUrl", "FailureEventsQueueUrl", "EventTargetDlqUrl",
        "ReconcilerDlqUrl", "ScheduleDlqUrl"]
    assert {frozenset(q) for q in status["queues"]} == {frozenset(QUEUE)}
    assert set(status["pipe"]) == {"name", "currentState", "desiredState", "stateReason"}
    assert set(status["executions"]) == {"windowHours", "counts", "countsTruncated", "countedFrom", "recent"}
    assert status["executions"]["countedFrom"] == "executions"
    assert set(status["executions"]["counts"]) == {"FAILED", "TIMED_OUT", "ABORTED"}
    assert {frozenset(e) for e in status["executions"]["recent"]} == {frozenset(EXECUTION)}
    assert set(status["healing"]) == {"failureDlq", "healedAutomatically"}
    assert set(status["healing"]["failureDlq"]) == {"read", "truncated", "unrecognized", "waitingForRetry",
                                                    "nextDueAt", "needingAPerson", "byDisposition"}
    assert set(status["healing"]["failureDlq"]["byDisposition"]) == {"retries-exhausted", "manual-repair",
                                                                     "needs-decision", "cannot-redrive"}
    assert set(status["healing"]["healedAutomatically"]) == {"windowHours", "service", "executionsReconciled",
                                                             "failuresAutoRedriven"}


def test_message_document(aws: Rehearsal, cli: CliRunner) -> None:
    (order_id,) = failed_orders(aws, 1, first=401)

    _, document = ff_ops(cli, "message", aws.sent[-1])

    assert document["schema"] == "ff-ops/message/v1"
    assert set(document) == {"schema", "stack", "messageId", "state", "final", "attemptMessageId", "redrives", "stage",
                             "executionArn", "error", "failedState", "manualRepair", "retry", "absorbedBy",
                             "updatedAt", "ticket"}
    # The order failed for a business reason: recorded for a person, nothing more happens by itself
    assert (document["state"], document["final"], document["retry"]) == ("failed", True, False)
    assert document["failedState"] and document["error"] and order_id


def test_a_message_nobody_received_exits_not_found(aws: Rehearsal, cli: CliRunner) -> None:
    code, document = ff_ops(cli, "message", "00000000-0000-0000-0000-000000000000")

    assert code == ExitCode.NOT_FOUND and document["state"] == "unknown" and document["final"] is False


def test_error_document(cli: CliRunner) -> None:
    code, document = ff_ops(cli, "failures", "list", "--since", "soon")

    assert code == 2
    assert set(document) == {"schema", "error"} and document["schema"] == "ff-ops/error/v1"
    assert set(document["error"]) == {"type", "message", "hint", "exitCode"}
