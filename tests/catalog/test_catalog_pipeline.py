"""The catalog example through the same rehearsal and ff-ops as the order saga: the synthesized FireAndForget-Catalog
stack deployed into moto, the pipe emulated, the real ASL and the real IndexProduct handler.

The accounting here is the test's own: it knows what it sent (product, version, messageId) and looks each message up
in the search index, the failure DLQ, the source DLQ and the executions, never in what the handler returned.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import fire_and_forget.runtime.dlq
from fire_and_forget.cli.app import app as ff_ops_app
from fire_and_forget.rehearsal.accounting import Place, account, advance_past_retries
from fire_and_forget.rehearsal.faults import Fault, FaultKind
from fire_and_forget.rehearsal.rehearsal import Execution, Rehearsal
from tests.support.cdk import CATALOG_STACK_NAME

logging.getLogger("moto.stepfunctions.parser").setLevel(logging.CRITICAL)

RECORD_KIND = "fire-and-forget.failure.v1"
# What the catalog ASL says (statemachines/catalog/index_product.asl.json): one try and four retries.
INDEX_PRODUCT_ATTEMPTS = 5
# Calls to DynamoDB in one attempt: botocore's retries={"max_attempts": 2} means two retries after the first call
# (botocore adds the first call: total_max_attempts = max_attempts + 1), and a 503 is retried in standard mode.
CALLS_PER_ATTEMPT = 3


@pytest.fixture
def aws(cloud_assembly: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Rehearsal]:
    """The catalog stack of this session's assembly, deployed into moto (a fresh account per test)."""
    # Long polling makes ff-ops' last, empty receive wait in moto; short polling is exact there (as in tests/ops).
    monkeypatch.setattr(fire_and_forget.runtime.dlq, "DEFAULT_WAIT_SECONDS", 0)
    with Rehearsal.start(cloud_assembly, stack_name=CATALOG_STACK_NAME) as rehearsal:
        rehearsal.publish_pipe()  # what ff-ops status reads and moto's CloudFormation skips
        yield rehearsal


def product(product_id: str, version: int, title: str = "Trail Shoe") -> str:
    return json.dumps({"productId": product_id, "version": version, "title": title, "tags": ["outdoor"]})


def ff_ops(*args: str) -> tuple[int, Any]:
    """ff-ops against the catalog stack, --json; the exit code and the parsed document."""
    result = CliRunner().invoke(ff_ops_app, [*args, "--stack-name", CATALOG_STACK_NAME, "--json"])
    assert result.stdout.strip(), result.output
    return result.exit_code, json.loads(result.stdout)


def places(aws: Rehearsal, message_ids: list[str]) -> dict[str, list[str]]:
    """Where each message ended, found from the outputs and tables alone (the test's own accounting)."""
    found: dict[str, list[str]] = {message_id: [] for message_id in message_ids}
    for item in aws.items("SearchIndexTableName"):
        if item["messageId"] in found:
            found[item["messageId"]].append("search index")
    for record in failure_records(aws):
        if record["record"]["messageId"] in found:
            found[record["record"]["messageId"]].append("failure DLQ")
    for message in aws.messages("SourceDlqUrl"):
        if message["MessageId"] in found:
            found[message["MessageId"]].append("source DLQ")
    in_index_or_dlq = {m for m, where in found.items() if where}
    for execution in owning_executions(aws):
        if execution.status == "SUCCEEDED" and execution.message_id not in in_index_or_dlq:
            found[execution.message_id or ""].append("succeeded, another version in the index")
    return found


def owning_executions(aws: Rehearsal) -> list[Execution]:
    """Executions that did the message's work: not the ones a duplicate delivery ended quietly."""
    return [e for e in aws.executions() if e.states and e.states[-1] != "DuplicateDeliveryIgnored"]


def failure_records(aws: Rehearsal) -> list[dict[str, Any]]:
    return [json.loads(message["Body"]) for message in aws.messages("FailureDlqUrl")]


def alerts_naming(aws: Rehearsal, execution_arn: str) -> int:
    return sum(execution_arn in text for _subject, text in aws.notifications())


def test_a_valid_product_is_indexed_in_one_transition(aws: Rehearsal) -> None:
    # Given a product change fired into the catalog stack's source queue
    message_id = aws.send(product("sku-1", 3))

    # When the pipe hands it over and the workflow runs
    (execution,) = aws.run()

    # Then the index holds it, written by this message, after one state of business work and no failure path
    (item,) = aws.items("SearchIndexTableName")
    assert (item["productId"], item["version"], item["title"], item["messageId"]) == (
        "sku-1",
        3,
        "Trail Shoe",
        message_id,
    )
    assert execution.status == "SUCCEEDED"
    assert execution.states == ["IndexProduct"] and execution.transitions == 1
    assert failure_records(aws) == [] and aws.notifications() == []
    assert places(aws, [message_id]) == {message_id: ["search index"]}


@pytest.mark.parametrize("body", ["not json at all", json.dumps({"productId": "sku-1", "version": "2"})])
def test_an_invalid_document_ends_in_the_failure_dlq_once_and_is_announced_once(aws: Rehearsal, body: str) -> None:
    message_id = aws.send(body, attributes={"source": "pim"})

    (execution,) = aws.run()

    (record,) = failure_records(aws)
    assert record["kind"] == RECORD_KIND and record["pipeline"] == "catalog"
    assert record["record"]["messageId"] == message_id and record["record"]["body"] == body
    assert record["record"]["messageAttributes"]["source"]["stringValue"] == "pim"
    assert record["failure"]["error"] == "InvalidDocument" and record["failure"]["state"] == "IndexProduct"
    assert execution.states[:3] == ["IndexProduct", "IndexProductFailed", "ClaimFailure"]  # no retry of it
    assert "HandleFailure" in execution.states and execution.error == "FailureRecorded"
    assert len(aws.notifications()) == 1 and alerts_naming(aws, execution.arn) == 1
    assert aws.items("SearchIndexTableName") == []
    assert places(aws, [message_id]) == {message_id: ["failure DLQ"]}
    assert account(aws, [message_id]).balanced


def test_a_duplicate_delivery_is_absorbed_by_the_execution_that_owns_the_message(aws: Rehearsal) -> None:
    # Given SQS delivers the same message twice (the same messageId, so the pipe starts two executions)
    message_id = aws.send(product("sku-2", 1))
    aws.pipe.duplicate_next = 1

    executions = aws.run()

    # Then one execution indexed it, the other ended quietly, the claim names the owner, and nobody was alerted
    assert [e.message_id for e in executions] == [message_id, message_id]
    ends = Counter(e.states[-1] for e in executions)
    assert ends == Counter({"IndexProduct": 1, "DuplicateDeliveryIgnored": 1})
    assert {e.status for e in executions} == {"SUCCEEDED"}
    (owner,) = owning_executions(aws)
    (claim,) = aws.items("DeliveriesTableName")
    assert claim["messageId"] == message_id and claim["executionArn"] == owner.arn
    assert len(aws.items("SearchIndexTableName")) == 1
    assert aws.notifications() == [] and failure_records(aws) == []
    assert places(aws, [message_id]) == {message_id: ["search index"]}
    assert account(aws, [message_id]).balanced


def test_an_older_version_after_a_newer_one_leaves_the_newer(aws: Rehearsal) -> None:
    newer = aws.send(product("sku-3", 5, title="Trail Shoe v5"))
    aws.run()
    older = aws.send(product("sku-3", 4, title="Trail Shoe v4"))

    aws.run()

    (item,) = aws.items("SearchIndexTableName")
    assert (item["version"], item["title"], item["messageId"]) == (5, "Trail Shoe v5", newer)
    assert {e.status for e in aws.executions()} == {"SUCCEEDED"}
    assert failure_records(aws) == [] and aws.notifications() == []
    assert places(aws, [newer, older]) == {newer: ["search index"], older: ["succeeded, another version in the index"]}


def test_a_dynamodb_outage_longer_than_the_retries_is_recorded_unannounced_then_redriven_by_ff_ops(
    aws: Rehearsal,
) -> None:
    # Given the search-index table answers 503 to every call, for longer than the workflow retries
    outage = aws.faults.add(Fault("SearchIndexTable", FaultKind.UNAVAILABLE))
    message_id = aws.send(product("sku-4", 1))

    (execution,) = aws.run()

    # Then each attempt failed (botocore tried three times each), and the message is in the failure DLQ, not announced:
    # TransientError is what IndexProduct's Retry retries, so the record waits for an automatic redrive
    attempts = [i for i in aws.runtime.invocations if i.task == "IndexProduct"]
    assert [i.error_type for i in attempts] == ["TransientError"] * INDEX_PRODUCT_ATTEMPTS
    assert outage.fired == CALLS_PER_ATTEMPT * INDEX_PRODUCT_ATTEMPTS
    assert len(aws.clock.for_execution(execution.arn)) == INDEX_PRODUCT_ATTEMPTS - 1  # the backoff waits
    (record_message,) = aws.messages("FailureDlqUrl")
    record = json.loads(record_message["Body"])
    assert record["failure"]["error"] == "TransientError" and record["record"]["messageId"] == message_id
    assert alerts_naming(aws, execution.arn) == 0 and aws.notifications() == []
    assert places(aws, [message_id]) == {message_id: ["failure DLQ"]}
    assert account(aws, [message_id]).fates[message_id].place is Place.WAITING

    # When the outage ends and the operator redrives the failure with ff-ops
    aws.faults.clear()
    code, summary = ff_ops("failures", "redrive", "--yes", "--error", "TransientError")
    (item,) = summary["items"]
    redriven = item["newMessageId"]
    aws.run()

    # Then the redriven copy is indexed, the failure DLQ is empty, and no alert was ever raised
    assert code == 0 and summary["summary"]["redriven"] == 1
    assert item["messageId"] == record_message["MessageId"] and item["key"] == "sku-4"  # keyed by productId
    assert failure_records(aws) == []
    (indexed,) = aws.items("SearchIndexTableName")
    assert (indexed["productId"], indexed["version"], indexed["messageId"]) == ("sku-4", 1, redriven)
    assert aws.notifications() == []
    assert places(aws, [message_id, redriven]) == {message_id: [], redriven: ["search index"]}
    assert {fate.place for fate in account(aws, [redriven]).fates.values()} == {Place.SUCCEEDED}


def test_a_dynamodb_outage_longer_than_the_retries_heals_by_the_automatic_redrive(aws: Rehearsal) -> None:
    # Given an outage that outlasts one execution's retries, then ends
    aws.faults.add(Fault("SearchIndexTable", FaultKind.UNAVAILABLE, times=CALLS_PER_ATTEMPT * INDEX_PRODUCT_ATTEMPTS))
    message_id = aws.send(product("sku-7", 1))
    (execution,) = aws.run()
    assert execution.states[-1] == "FailureRecordedForRetry" and aws.notifications() == []

    # When the clock passes the cool-off, the Redriver sends the record back to the source queue
    assert advance_past_retries(aws) > 0

    # Then the copy (carrying the caller's messageId) is indexed, the DLQ is empty, nobody was told
    copy = aws.executions()[-1]
    assert copy.status == "SUCCEEDED" and copy.input[0]["messageAttributes"]["ffFirstMessageId"]["stringValue"] == (
        message_id)
    (indexed,) = aws.items("SearchIndexTableName")
    assert (indexed["productId"], indexed["messageId"]) == ("sku-7", copy.message_id)
    assert failure_records(aws) == [] and aws.notifications() == []
    ledger = account(aws, [message_id])
    assert ledger.balanced and ledger.fates[message_id].place is Place.SUCCEEDED
    assert ledger.fates[message_id].redrives == 1


def test_ff_ops_status_and_failures_list_read_the_catalog_stack(aws: Rehearsal) -> None:
    bad = aws.send('{"productId": "sku-5"}')
    aws.send(product("sku-6", 1))
    aws.run()

    status_code, status = ff_ops("status")
    list_code, listing = ff_ops("failures", "list")

    assert status_code in (0, 1), status  # 1: something needs attention (the failure DLQ holds a record)
    assert status["stack"] == CATALOG_STACK_NAME
    queues = {queue["label"]: queue for queue in status["queues"]}
    assert queues["failure DLQ"]["visible"] == 1 and queues["source queue"]["visible"] == 0
    assert list_code == 0
    (listed,) = listing["failures"]
    assert listed["sourceMessageId"] == bad and listed["key"] == "sku-5"
    assert (listed["error"], listed["failedState"]) == ("InvalidDocument", "IndexProduct")
    show_code, shown = ff_ops("failures", "show", bad)  # found by the original message id, as an operator has it
    assert show_code == 0 and [f["body"] for f in shown["failures"]] == ['{"productId": "sku-5"}']


def test_every_message_of_a_mixed_batch_ends_in_exactly_one_place(aws: Rehearsal) -> None:
    sent = [aws.send(product(f"sku-{n}", 1)) for n in range(10, 16)]
    sent += [aws.send("[]"), aws.send(product("sku-10", 0))]  # not an object; version below 1
    aws.pipe.duplicate_next = 2

    aws.run()

    where = places(aws, sent)
    assert all(len(found) == 1 for found in where.values()), where
    assert Counter(found[0] for found in where.values()) == Counter({"search index": 6, "failure DLQ": 2})
    assert len(aws.notifications()) == 2
    ledger = account(aws, sent)
    assert ledger.balanced and ledger.counts() == Counter({"succeeded": 6, "failure DLQ": 2})
