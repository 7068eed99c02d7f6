"""Small steps the operator tests share: failing orders, restocking, invoking ff-ops, looking into queues."""

from __future__ import annotations

import json
import random
from collections import Counter
from typing import Any

from typer.testing import CliRunner

from demos.orders.cli_smoke import app as smoke_app
from demos.orders.samples import OUT_OF_STOCK_SKU, OrderKind, make_order
from fire_and_forget.cli.app import app
from fire_and_forget.rehearsal.rehearsal import Rehearsal


def failed_orders(aws: Rehearsal, count: int, kind: OrderKind = OrderKind.OUT_OF_STOCK, first: int = 1) -> list[str]:
    """Send `count` orders that fail, run the pipe; returns their order ids, now in the failure DLQ."""
    order_ids = []
    for number in range(first, first + count):
        sample = make_order(kind, number, random.Random(number))
        aws.send(sample.body, attributes={"tenant": "acme", "source": "web"})
        assert sample.order_id is not None
        order_ids.append(sample.order_id)
    aws.run()
    return order_ids


def restock(aws: Rehearsal, available: int = 100) -> None:
    """The operator's fix for OutOfStock: the sold-out sku gets stock."""
    aws.dynamodb.put_item(TableName=aws.outputs["InventoryTableName"],
                          Item={"sku": {"S": OUT_OF_STOCK_SKU}, "available": {"N": str(available)}})


def stock(aws: Rehearsal, sku: str) -> int:
    return next(int(item["available"]) for item in aws.items("InventoryTableName") if item["sku"] == sku)


def ff_ops(cli: CliRunner, *args: str) -> tuple[int, Any]:
    """Run ff-ops with --json; the exit code and the parsed document."""
    result = cli.invoke(app, [*args, "--json"])
    assert result.stdout.strip(), result.output
    return result.exit_code, json.loads(result.stdout)


def smoke(cli: CliRunner, *args: str) -> tuple[int, Any]:
    """Run the order example's smoke test (demos/orders/cli_smoke.py) with --json, as ff_ops does."""
    result = cli.invoke(smoke_app, [*args, "--json"])
    assert result.stdout.strip(), result.output
    return result.exit_code, json.loads(result.stdout)


def queued_orders(aws: Rehearsal, output_key: str) -> Counter[str]:
    """Order ids in a queue, counted; failure records count by the order id of the record's original body."""
    found: Counter[str] = Counter()
    for message in aws.messages(output_key):
        body = json.loads(message["Body"])
        if isinstance(body, dict) and "record" in body:
            body = json.loads(body["record"]["body"])
        found[body["orderId"]] += 1
    return found


def depth(aws: Rehearsal, output_key: str) -> tuple[int, int]:
    """(visible, in flight) messages of a queue."""
    attributes = aws.sqs.get_queue_attributes(
        QueueUrl=aws.outputs[output_key],
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"])["Attributes"]
    return int(attributes["ApproximateNumberOfMessages"]), int(attributes["ApproximateNumberOfMessagesNotVisible"])


def shipped(aws: Rehearsal) -> Counter[str]:
    return Counter(item["orderId"] for item in aws.items("ShipmentsTableName"))


def forget_releases(aws: Rehearsal) -> None:
    """Forget a release of held calls (`release_held`, `faults.release()`) on the package's one deployment: left set,
    a HANG fault of the next test would hold nothing."""
    aws.faults.released.clear()
    aws.faults.holding.clear()
    aws.runtime.hanging.clear()
