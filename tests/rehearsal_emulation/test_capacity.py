"""The DynamoDB meter counts request units by DynamoDB's documented rules (read-write-operations.html,
transaction-apis.html#transaction-capacity-handling), on moto's own item sizes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from fire_and_forget.rehearsal.capacity import CapacityMeter, Units

TABLE = "Things"


@pytest.fixture
def metered() -> Iterator[tuple[Any, CapacityMeter]]:
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        client.create_table(TableName=TABLE, BillingMode="PAY_PER_REQUEST",
                            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}])
        meter = CapacityMeter()
        uninstall = meter.install()
        try:
            yield client, meter
        finally:
            uninstall()


def _item(key: str, payload_bytes: int) -> dict[str, Any]:
    return {"pk": {"S": key}, "data": {"S": "x" * payload_bytes}}


def _spent(meter: CapacityMeter, before: Units) -> tuple[float, float]:
    spent = meter.snapshot() - before
    return spent.write, spent.read


def test_a_write_costs_one_unit_per_kilobyte_of_the_larger_item(metered: tuple[Any, CapacityMeter]) -> None:
    client, meter = metered
    start = meter.snapshot()
    client.put_item(TableName=TABLE, Item=_item("a", 100))
    assert _spent(meter, start) == (1, 0)
    start = meter.snapshot()
    client.put_item(TableName=TABLE, Item=_item("b", 2500))  # 2.5 KB and a little: 3 units
    assert _spent(meter, start) == (3, 0)
    start = meter.snapshot()
    client.put_item(TableName=TABLE, Item=_item("b", 10))  # replaces a 3-unit item: the larger counts
    assert _spent(meter, start) == (3, 0)
    start = meter.snapshot()
    client.update_item(TableName=TABLE, Key={"pk": {"S": "a"}}, UpdateExpression="SET big = :v",
                       ExpressionAttributeValues={":v": {"S": "y" * 1500}})  # grows past 1 KB: 2 units
    assert _spent(meter, start) == (2, 0)
    start = meter.snapshot()
    client.delete_item(TableName=TABLE, Key={"pk": {"S": "a"}})  # the item deleted: 2 units
    assert _spent(meter, start) == (2, 0)


def test_a_write_refused_by_its_condition_still_consumes(metered: tuple[Any, CapacityMeter]) -> None:
    client, meter = metered
    client.put_item(TableName=TABLE, Item=_item("a", 2000))
    start = meter.snapshot()
    with pytest.raises(ClientError, match="ConditionalCheckFailed"):
        client.put_item(TableName=TABLE, Item=_item("a", 10), ConditionExpression="attribute_not_exists(pk)")
    assert _spent(meter, start) == (2, 0)


def test_reads_cost_per_four_kilobytes_half_when_eventually_consistent(metered: tuple[Any, CapacityMeter]) -> None:
    client, meter = metered
    client.put_item(TableName=TABLE, Item=_item("big", 5000))  # over 4 KB: 2 blocks
    start = meter.snapshot()
    client.get_item(TableName=TABLE, Key={"pk": {"S": "big"}})
    assert _spent(meter, start) == (0, 1.0)
    start = meter.snapshot()
    client.get_item(TableName=TABLE, Key={"pk": {"S": "big"}}, ConsistentRead=True)
    assert _spent(meter, start) == (0, 2.0)
    start = meter.snapshot()
    client.get_item(TableName=TABLE, Key={"pk": {"S": "none"}})  # nothing there: still the minimum
    assert _spent(meter, start) == (0, 0.5)


def test_a_transaction_costs_twice_per_item_and_counts_its_condition_checks(
        metered: tuple[Any, CapacityMeter]) -> None:
    client, meter = metered
    client.put_item(TableName=TABLE, Item=_item("owner", 10))
    start = meter.snapshot()
    client.transact_write_items(TransactItems=[
        {"ConditionCheck": {"TableName": TABLE, "Key": {"pk": {"S": "owner"}},
                            "ConditionExpression": "attribute_exists(pk)"}},
        {"Put": {"TableName": TABLE, "Item": _item("new", 10)}},
        {"Update": {"TableName": TABLE, "Key": {"pk": {"S": "counter"}}, "UpdateExpression": "ADD n :one",
                    "ExpressionAttributeValues": {":one": {"N": "1"}}}},
    ])
    spent = meter.snapshot() - start
    assert (spent.write, spent.read, spent.condition_checks) == (6, 0, 1)
    start = meter.snapshot()
    with pytest.raises(ClientError, match="TransactionCanceled"):
        client.transact_write_items(TransactItems=[
            {"ConditionCheck": {"TableName": TABLE, "Key": {"pk": {"S": "missing"}},
                                "ConditionExpression": "attribute_exists(pk)"}},
            {"Put": {"TableName": TABLE, "Item": _item("other", 10)}},
        ])
    assert _spent(meter, start) == (4, 0)  # a cancelled transaction consumed what it prepared


def test_a_scan_rounds_the_items_it_read_once_per_request(metered: tuple[Any, CapacityMeter]) -> None:
    client, meter = metered
    for key in ("a", "b", "c"):
        client.put_item(TableName=TABLE, Item=_item(key, 2000))  # about 6 KB in all: two 4 KB blocks
    start = meter.snapshot()
    client.scan(TableName=TABLE)
    assert _spent(meter, start) == (0, 1.0)
