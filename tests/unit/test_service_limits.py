"""The rehearsal's models of what AWS limits under load, each against its documented behaviour: Lambda's concurrency
(quotas.Slots: at most the limit running at once, a slot held for the invocation's duration, 429 past it) and
DynamoDB's transaction conflicts on one item (transactions.ItemContention: TransactionCanceledException with the
reason TransactionConflict for the item another invocation's transaction holds, which the handlers read as
transient)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from fire_and_forget.rehearsal import transactions
from fire_and_forget.rehearsal.quotas import Slots, lambda_concurrency_quota
from fire_and_forget.runtime.errors import cancellation_reasons, is_transient

START = datetime(2026, 12, 8, tzinfo=UTC)


def test_lambdas_default_concurrency_scales_down_to_at_least_one() -> None:
    quota = lambda_concurrency_quota()
    assert quota.limit == 1000 and quota.source.endswith("gettingstarted-limits.html")
    assert [quota.scaled(f).limit for f in (0.01, 0.001, 0.0001)] == [10, 1, 1]
    with pytest.raises(ValueError):
        quota.scaled(0)


def test_a_slot_is_held_for_the_invocations_duration_and_refused_past_the_limit() -> None:
    slots = Slots(lambda_concurrency_quota().scaled(0.002), seconds=2)  # two at once
    assert [slots.take(START) for _ in range(3)] == [True, True, False]
    assert not slots.take(START + timedelta(seconds=1.999))  # both still running
    assert slots.take(START + timedelta(seconds=2))  # the first two ended at 2 s: their slots are free
    assert (slots.taken, slots.refused, slots.peak) == (3, 2, 2)
    with pytest.raises(ValueError):
        Slots(lambda_concurrency_quota(), seconds=0)  # an invocation that takes no time holds nothing


class Invocations:
    """Which invocation makes the calls now, and the clock, as the rehearsal's runtime and VirtualClock give them."""

    def __init__(self) -> None:
        self.current: int | None = 1
        self.now = START

    def owner(self) -> int | None:
        return self.current


@pytest.fixture
def dynamodb() -> Iterator[tuple[Any, Invocations, transactions.ItemContention]]:
    invocations = Invocations()
    contention = transactions.ItemContention(0.1, lambda: invocations.now, invocations.owner)
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        client.create_table(TableName="Stock", KeySchema=[{"AttributeName": "sku", "KeyType": "HASH"}],
                            AttributeDefinitions=[{"AttributeName": "sku", "AttributeType": "S"}],
                            BillingMode="PAY_PER_REQUEST")
        for sku in ("a", "b"):
            client.put_item(TableName="Stock", Item={"sku": {"S": sku}, "n": {"N": "5"}})
        uninstall = transactions.install(contention)
        try:
            yield client, invocations, contention
        finally:
            uninstall()


def take(client: Any, *skus: str) -> None:
    client.transact_write_items(TransactItems=[
        {"Update": {"TableName": "Stock", "Key": {"sku": {"S": sku}}, "UpdateExpression": "SET n = n - :one",
                    "ConditionExpression": "n >= :one", "ExpressionAttributeValues": {":one": {"N": "1"}}}}
        for sku in skus])


def stock(client: Any, sku: str) -> int:
    return int(client.get_item(TableName="Stock", Key={"sku": {"S": sku}})["Item"]["n"]["N"])


def test_another_invocations_transaction_on_a_held_item_is_cancelled_as_a_conflict(dynamodb: Any) -> None:
    client, invocations, contention = dynamodb
    take(client, "a")
    invocations.current = 2
    with pytest.raises(ClientError) as refused:
        take(client, "b", "a")  # the second action names the item the first invocation's transaction holds
    error = refused.value
    assert error.response["Error"]["Code"] == "TransactionCanceledException"
    assert [reason["Code"] for reason in cancellation_reasons(error)] == ["None", "TransactionConflict"]
    assert is_transient(error)  # the handlers retry it (aws_errors_as_transient), the workflow's Retry with them
    assert (stock(client, "a"), stock(client, "b"), contention.conflicts) == (4, 5, 1)  # nothing of it was written
    invocations.now += timedelta(seconds=0.1)  # the first transaction has ended
    take(client, "b", "a")
    assert (stock(client, "a"), stock(client, "b")) == (3, 4)


def test_one_invocations_own_transactions_and_writes_outside_invocations_never_conflict(dynamodb: Any) -> None:
    client, invocations, contention = dynamodb
    take(client, "a")
    take(client, "a")  # the same invocation, one transaction after the other
    invocations.current = None  # a test's or the rehearsal's own write passes the hold
    take(client, "a")
    invocations.now += timedelta(seconds=0.1)  # the invocation's hold has ended
    take(client, "a")  # and a write outside any invocation takes none
    invocations.current = 2
    take(client, "a")
    assert (stock(client, "a"), contention.conflicts) == (0, 0)
