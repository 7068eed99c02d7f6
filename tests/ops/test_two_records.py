"""Two failure records of one execution (SQS standard queues do not deduplicate) are one failure to ff-ops: listed and
shown once, redriven once with both records deleted after the send, discarded together with both logged."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from fire_and_forget.rehearsal.rehearsal import Rehearsal
from tests.ops.helpers import depth, failed_orders, ff_ops, queued_orders


def _second_record(aws: Rehearsal, order_id: str, *, reconciled: bool) -> tuple[str, str]:
    """The window's second record of the order's execution: HandleFailure's again (its retry after a lost response)
    or the Reconciler's (an abort while that send was in flight). Returns (the tail's DLQ id, the second's)."""
    (message,) = [m for m in aws.messages("FailureDlqUrl") if order_id in m["Body"]]
    document = json.loads(message["Body"])
    if reconciled:
        document["reconciliation"] = {"status": "ABORTED", "via": "sweep", "reconciledAt": document["failedAt"],
                                      "reason": "The execution was stopped in HandleFailure", "compensated": []}
    second = aws.sqs.send_message(QueueUrl=aws.outputs["FailureDlqUrl"], MessageBody=json.dumps(document))
    return message["MessageId"], second["MessageId"]


def test_failures_list_and_show_give_one_failure_for_one_execution_and_name_the_other_record(
    aws: Rehearsal, cli: CliRunner
) -> None:
    # Given an order whose execution left two records: its own and the Reconciler's
    (order_id, other) = failed_orders(aws, 2, first=7301)
    tail, reconciled = _second_record(aws, order_id, reconciled=True)

    # When the operator lists and shows the failures
    _, listed = ff_ops(cli, "failures", "list")
    _, shown = ff_ops(cli, "failures", "show", order_id)

    # Then the execution is one failure, described by the Reconciler's record (how it ended), the tail's its copy
    assert sorted(f["key"] for f in listed["failures"]) == sorted([order_id, other])
    (one,) = [f for f in listed["failures"] if f["key"] == order_id]
    assert (one["messageId"], one["copies"]) == (reconciled, [tail])
    assert one["reconciliation"]["status"] == "ABORTED" and one["disposition"] == "needs-decision"
    (detail,) = shown["failures"]
    assert (detail["messageId"], detail["copies"]) == (reconciled, [tail])
    # And found by the copy's own DLQ message id too
    _, by_copy = ff_ops(cli, "failures", "show", tail)
    assert [f["messageId"] for f in by_copy["failures"]] == [reconciled]


def test_failures_redrive_sends_one_execution_once_and_deletes_both_records_after_the_send(
    aws: Rehearsal, cli: CliRunner
) -> None:
    # Given an order whose failure record was sent twice (HandleFailure's retry after a lost response)
    (order_id,) = failed_orders(aws, 1, first=7311)
    first, second = _second_record(aws, order_id, reconciled=False)

    # When the operator redrives it
    code, doc = ff_ops(cli, "failures", "redrive", "--yes", "--order-id", order_id)

    # Then one message went back, and both records left the DLQ, the copy deleted once the send was done
    assert code == 0 and doc["complete"] is True
    assert [(i["messageId"], i["action"]) for i in doc["items"]] == [(min(first, second), "redriven"),
                                                                     (max(first, second), "copy-deleted")]
    assert doc["summary"]["redriven"] == 1 and doc["summary"]["copyDeleted"] == 1
    assert len({i["newMessageId"] for i in doc["items"]}) == 1
    assert queued_orders(aws, "SourceQueueUrl") == {order_id: 1}
    assert depth(aws, "FailureDlqUrl") == (0, 0)


def test_failures_discard_logs_and_deletes_every_record_of_the_execution(
    aws: Rehearsal, cli: CliRunner, tmp_path: Path
) -> None:
    # Given an abandoned order whose execution left two records, and another abandoned order
    (order_id, other) = failed_orders(aws, 2, first=7321)
    first, second = _second_record(aws, order_id, reconciled=False)
    log = tmp_path / "discarded.jsonl"

    # When the operator discards it
    code, doc = ff_ops(cli, "failures", "discard", "--order-id", order_id, "--yes", "--log", str(log))

    # Then it is one discarded failure, both its records logged before they were deleted, the other order kept
    assert code == 0 and doc["summary"]["discarded"] == 1
    (item,) = doc["items"]
    assert (item["key"], item["copies"]) == (order_id, [max(first, second)])
    lines = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    logged = [line["dlqMessageId"] for line in lines if line["schema"] == "ff-ops/discarded/v1"]
    assert sorted(logged) == sorted([first, second])
    assert queued_orders(aws, "FailureDlqUrl") == {other: 1}
