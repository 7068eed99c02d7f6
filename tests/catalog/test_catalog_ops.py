"""ff-ops on the catalog example: every command family finds the catalog's failures by productId, the key field its
stack publishes (output MessageKeyField), and `smoke`, the order example's own check, refuses the stack.

The stack is the synthesized FireAndForget-Catalog, deployed into moto by the rehearsal with the real ASL and the
real IndexProduct handler; failures are real ones (an invalid document, a search-index outage past the retries).
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import fire_and_forget.runtime.dlq
from demos.orders.cli_smoke import app as smoke_app
from fire_and_forget.cli.app import app
from fire_and_forget.rehearsal.faults import Fault, FaultKind
from fire_and_forget.rehearsal.rehearsal import Rehearsal
from tests.support.cdk import CATALOG_STACK_NAME

logging.getLogger("moto.stepfunctions.parser").setLevel(logging.CRITICAL)


def _forget_handler_client() -> None:
    """Drop IndexProduct's cached DynamoDB client, which the asset's modules keep for the whole session: after this
    file's outages, a kept client made test_catalog_pipeline's outage test count 13 DynamoDB calls instead of 15
    (measured; botocore's retry bookkeeping is per client)."""
    logic = sys.modules.get("index_product.logic")
    if logic is not None:
        logic.dynamodb.cache_clear()


@pytest.fixture
def aws(cloud_assembly: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Rehearsal]:
    """The catalog stack of this session's assembly, deployed into moto (a fresh account per test)."""
    # Short polling is exact in moto (as in tests/ops).
    monkeypatch.setattr(fire_and_forget.runtime.dlq, "DEFAULT_WAIT_SECONDS", 0)
    _forget_handler_client()
    try:
        with Rehearsal.start(cloud_assembly, stack_name=CATALOG_STACK_NAME) as rehearsal:
            rehearsal.publish_pipe()
            yield rehearsal
    finally:
        _forget_handler_client()


def product(product_id: str, version: int = 1) -> str:
    return json.dumps({"productId": product_id, "version": version, "title": "Trail Shoe"})


def invalid(product_id: str) -> str:
    """A document IndexProduct refuses (no version) that still names its product."""
    return json.dumps({"productId": product_id})


def ff_ops(*args: str) -> tuple[int, Any]:
    """ff-ops against the catalog stack, --json; the exit code and the parsed document."""
    result = CliRunner().invoke(app, [*args, "--stack-name", CATALOG_STACK_NAME, "--json"])
    assert result.stdout.strip(), result.output
    return result.exit_code, json.loads(result.stdout)


def failed_in_an_outage(aws: Rehearsal, *product_ids: str) -> None:
    """Each product's change fails past the workflow's retries (the search index answers 503), then the outage ends."""
    aws.faults.add(Fault("SearchIndexTable", FaultKind.UNAVAILABLE))
    for product_id in product_ids:
        aws.send(product(product_id))
    aws.run()
    aws.faults.clear()


def recorded_products(aws: Rehearsal) -> list[str]:
    """The productId of every failure record's original body, read from the queue itself."""
    bodies = [json.loads(json.loads(m["Body"])["record"]["body"]) for m in aws.messages("FailureDlqUrl")]
    return sorted(body["productId"] for body in bodies)


def indexed(aws: Rehearsal) -> dict[str, str]:
    return {item["productId"]: item["messageId"] for item in aws.items("SearchIndexTableName")}


def test_failures_list_selects_by_product_id_and_labels_the_table_with_the_key_field(aws: Rehearsal) -> None:
    # Given two invalid product documents in the failure DLQ
    aws.send(invalid("sku-21"))
    aws.send(invalid("sku-22"))
    aws.run()

    # When the operator lists the failures of one product by its key
    code, listing = ff_ops("failures", "list", "--key", "sku-22")
    table = CliRunner().invoke(app, ["failures", "list", "--stack-name", CATALOG_STACK_NAME], terminal_width=200)

    # Then only that product's record is listed, keyed by productId, and the table's first column says productId
    assert code == 0 and listing["keyField"] == "productId"
    assert [(f["key"], f["error"]) for f in listing["failures"]] == [("sku-22", "InvalidDocument")]
    assert table.exit_code == 0 and "productId" in table.stdout.splitlines()[2]
    assert "sku-21" in table.stdout and "sku-22" in table.stdout and "order" not in table.stdout


def test_failures_show_finds_a_record_by_product_id(aws: Rehearsal) -> None:
    sent = aws.send(invalid("sku-23"))
    aws.run()

    code, shown = ff_ops("failures", "show", "sku-23")
    human = CliRunner().invoke(app, ["failures", "show", "sku-23", "--stack-name", CATALOG_STACK_NAME])

    assert code == 0 and shown["keyField"] == "productId"
    (failure,) = shown["failures"]
    assert (failure["key"], failure["sourceMessageId"], failure["body"]) == ("sku-23", sent, invalid("sku-23"))
    assert human.exit_code == 0 and "productId" in human.stdout and "order" not in human.stdout


def test_failures_redrive_by_key_sends_back_only_that_product_which_is_then_indexed(aws: Rehearsal) -> None:
    # Given two products whose changes failed during an outage that is now over
    failed_in_an_outage(aws, "sku-24", "sku-25")
    assert recorded_products(aws) == ["sku-24", "sku-25"]

    # When the operator redrives one of them by its productId, and the pipe runs
    code, summary = ff_ops("failures", "redrive", "--yes", "--key", "sku-25")
    aws.run()

    # Then that product is indexed by the redriven message; the other stays in the failure DLQ
    assert code == 0 and summary["keyField"] == "productId" and summary["summary"]["redriven"] == 1
    (item,) = summary["items"]
    assert item["key"] == "sku-25" and item["action"] == "redriven"
    assert indexed(aws) == {"sku-25": item["newMessageId"]}
    assert recorded_products(aws) == ["sku-24"]


def test_failures_discard_by_key_logs_then_deletes_only_that_product(aws: Rehearsal, tmp_path: Path) -> None:
    aws.send(invalid("sku-26"))
    aws.send(invalid("sku-27"))
    aws.run()
    log = tmp_path / "discarded.jsonl"

    code, doc = ff_ops("failures", "discard", "--key", "sku-26", "--yes", "--log", str(log))

    assert code == 0 and doc["keyField"] == "productId" and doc["summary"]["discarded"] == 1
    assert [item["key"] for item in doc["items"]] == ["sku-26"]
    logged, audited = (json.loads(line) for line in log.read_text(encoding="utf-8").splitlines())
    assert (logged["keyField"], logged["key"]) == ("productId", "sku-26")
    assert (audited["schema"], audited["target"]["key"]) == ("ff-ops/audit/v1", "sku-26")
    assert recorded_products(aws) == ["sku-27"]


def test_trace_by_product_id_follows_the_failure_and_the_redriven_message(aws: Rehearsal) -> None:
    # Given a product whose change failed in an outage, then was redriven and indexed
    failed_in_an_outage(aws, "sku-28")
    _, summary = ff_ops("failures", "redrive", "--yes", "--key", "sku-28")
    aws.run()
    (item,) = summary["items"]

    # When the operator traces the product by its productId
    code, doc = ff_ops("trace", "sku-28")
    human = CliRunner().invoke(app, ["trace", "sku-28", "--stack-name", CATALOG_STACK_NAME], terminal_width=200)

    # Then both executions are found by the key, the redriven one succeeded, the first left the failure DLQ
    assert code == 0 and (doc["keyField"], doc["query"], doc["key"]) == ("productId", "sku-28", "sku-28")
    assert sorted(e["status"] for e in doc["executions"]) == ["FAILED", "SUCCEEDED"]
    assert {e["key"] for e in doc["executions"]} == {"sku-28"}
    places = {w["messageId"]: w["place"] for w in doc["where"]}
    assert places[item["newMessageId"]] == "succeeded" and "left-failure-dlq" in places.values()
    assert human.exit_code == 0 and "Trace of productId sku-28" in human.stdout


def test_trace_by_product_id_finds_a_record_in_the_failure_dlq(aws: Rehearsal) -> None:
    sent = aws.send(invalid("sku-29"))
    aws.run()

    code, doc = ff_ops("trace", "sku-29")

    assert code == 0 and doc["key"] == "sku-29"
    assert [(w["place"], w["messageId"]) for w in doc["where"]] == [("failure-dlq", sent)]
    assert [r["sourceMessageId"] for r in doc["failureRecords"]] == [sent]


def test_report_counts_the_catalog_failures_from_their_records(aws: Rehearsal, tmp_path: Path) -> None:
    aws.send(invalid("sku-30"))
    aws.send(product("sku-31"))
    aws.run()
    page = tmp_path / "trend.html"

    code, doc = ff_ops("report", "--html", str(page))

    assert code == 0 and doc["stack"] == CATALOG_STACK_NAME and doc["executions"] == 2
    assert doc["outcomes"] == {"FAILED": 1, "SUCCEEDED": 1} and doc["errors"] == {"InvalidDocument": 1}
    assert "InvalidDocument" in page.read_text(encoding="utf-8")


def test_smoke_refuses_the_catalog_stack_as_a_usage_error_before_sending_anything(aws: Rehearsal) -> None:
    result = CliRunner().invoke(smoke_app, ["--timeout", "1", "--stack-name", CATALOG_STACK_NAME, "--json"])
    code, doc = result.exit_code, json.loads(result.stdout)

    assert code == 2 and doc["error"]["type"] == "UsageError"
    assert doc["error"]["message"].startswith("the smoke test checks the order example")
    assert "productId" in doc["error"]["message"] and "InventoryTableName" in doc["error"]["message"]
    assert "for another pipeline" in doc["error"]["hint"]
    assert aws.messages("SourceQueueUrl") == [] and aws.executions() == []
