"""Catalog-example fixtures: an emulated account with the deliveries and search-index tables, and the handler."""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import boto3
import pytest
from moto import mock_aws


def _import_with_catalog_environment() -> None:
    """Import the function's modules with the Powertools settings its stack gives it, then put the environment back.

    Logger and Metrics read POWERTOOLS_* once, when created; restoring keeps the order example's tests (collected
    in the same session) on their own service name.
    """
    wanted = {"POWERTOOLS_SERVICE_NAME": "catalog-index", "POWERTOOLS_METRICS_NAMESPACE": "FireAndForget"}
    before = {name: os.environ.get(name) for name in wanted}
    os.environ.update(wanted)
    try:
        import index_product.handler  # noqa: F401, PLC0415 - the import is the point
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


_import_with_catalog_environment()

from index_product import logic  # noqa: E402 - after the Powertools environment above
from index_product.handler import handler  # noqa: E402
from tests.handlers.request_rules import RequestRules  # noqa: E402

DELIVERIES = "Deliveries"
SEARCH_INDEX = "SearchIndex"
EXECUTION = "arn:aws:states:us-east-1:123456789012:execution:CatalogIndex:exec-1"
OTHER_EXECUTION = "arn:aws:states:us-east-1:123456789012:execution:CatalogIndex:exec-2"


def document(**fields: Any) -> dict[str, Any]:
    """A valid product document, with ``fields`` laid over it."""
    return {"productId": "sku-1", "version": 1, "title": "Trail Shoe", **fields}


def task_input(body: Any, *, message_id: str = "msg-1", execution_arn: str = EXECUTION) -> dict[str, Any]:
    """The task input the workflow builds: the pipe's SQS record (body as sent) and the execution's ARN."""
    text = body if isinstance(body, str) else json.dumps(body)
    record = {
        "messageId": message_id,
        "receiptHandle": f"handle-{message_id}",
        "body": text,
        "attributes": {"ApproximateReceiveCount": "1", "SentTimestamp": "1764400000000"},
        "messageAttributes": {},
        "eventSource": "aws:sqs",
        "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:CatalogSource",
        "awsRegion": "us-east-1",
    }
    return {"record": record, "executionArn": execution_arn}


@dataclass
class Catalog:
    """The emulated account as the handler sees it, with readers for what it wrote."""

    client: Any
    rules: RequestRules
    capsys: pytest.CaptureFixture[str]

    def invoke(self, event: Any) -> Any:
        context = SimpleNamespace(
            function_name="IndexProduct",
            memory_limit_in_mb=256,
            invoked_function_arn="arn:aws:lambda:us-east-1:123456789012:function:IndexProduct",
            aws_request_id="req-1",
        )
        return handler(event, context)

    def indexed(self, product_id: str = "sku-1") -> dict[str, Any] | None:
        item: dict[str, Any] | None = self.client.get_item(
            TableName=SEARCH_INDEX, Key={"productId": {"S": product_id}}, ConsistentRead=True
        ).get("Item")
        return item

    def index_size(self) -> int:
        return int(self.client.scan(TableName=SEARCH_INDEX, Select="COUNT")["Count"])

    def claims(self) -> dict[str, str]:
        items = self.client.scan(TableName=DELIVERIES)["Items"]
        return {item["messageId"]["S"]: item["executionArn"]["S"] for item in items}

    def metrics(self) -> Counter[str]:
        """Every metric the invocations since the last call printed as EMF, summed by name."""
        counted: Counter[str] = Counter()
        for line in self.capsys.readouterr().out.splitlines():
            if not line.startswith('{"_aws"'):
                continue  # a log line, not an EMF document
            blob = json.loads(line)
            for directive in blob["_aws"]["CloudWatchMetrics"]:
                assert directive["Namespace"] == "FireAndForget"
                assert ["service"] in directive["Dimensions"] and blob["service"] == "catalog-index"
                for metric in directive["Metrics"]:
                    value = blob[metric["Name"]]  # Powertools writes a list of values, one per add_metric
                    counted[metric["Name"]] += int(sum(value) if isinstance(value, list) else value)
        return counted


@pytest.fixture(scope="module")
def emulated_tables() -> Iterator[Any]:
    """One emulated account per module (starting moto and creating tables is most of a test's cost)."""
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        for table, key in ((DELIVERIES, "messageId"), (SEARCH_INDEX, "productId")):
            client.create_table(
                TableName=table,
                KeySchema=[{"AttributeName": key, "KeyType": "HASH"}],
                AttributeDefinitions=[{"AttributeName": key, "AttributeType": "S"}],
                BillingMode="PAY_PER_REQUEST",
            )
        yield client


@pytest.fixture
def catalog(
    emulated_tables: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Iterator[Catalog]:
    """Empty tables, the function's environment, and a fresh handler client watched by RequestRules."""
    client = emulated_tables
    for table, key in ((DELIVERIES, "messageId"), (SEARCH_INDEX, "productId")):
        for item in client.scan(TableName=table, ProjectionExpression=key)["Items"]:
            client.delete_item(TableName=table, Key=item)
    monkeypatch.setenv("DELIVERIES_TABLE_NAME", DELIVERIES)
    monkeypatch.setenv("DELIVERY_CLAIM_TTL_SECONDS", str(15 * 24 * 3600))
    monkeypatch.setenv("SEARCH_INDEX_TABLE_NAME", SEARCH_INDEX)
    logic.dynamodb.cache_clear()  # a cached client would carry the previous test's RequestRules and patches
    rules = RequestRules().attach(logic.dynamodb())
    try:
        yield Catalog(client=client, rules=rules, capsys=capsys)
    finally:
        logic.dynamodb.cache_clear()
