"""The rehearsal's rollback of a failed TransactWriteItems (rehearsal/transactions.py) leaves the tables as moto's own
whole-table rollback does: the same transactions, run through both, answer the same and leave the same items."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import boto3
from botocore.exceptions import ClientError
from hypothesis import given, settings
from hypothesis import strategies as st
from moto import mock_aws

from fire_and_forget.rehearsal import transactions
from tests.support.wide import examples

KEYS = ("a", "b", "c")
TABLES = {"Single": [("pk", "HASH")], "Ranged": [("pk", "HASH"), ("sk", "RANGE")]}


def _key(table: str, pk: str, sk: str) -> dict[str, Any]:
    key: dict[str, Any] = {"pk": {"S": pk}}
    if table == "Ranged":
        key["sk"] = {"S": sk}
    return key


@st.composite
def actions(draw: st.DrawFn) -> dict[str, Any]:
    table = draw(st.sampled_from(sorted(TABLES)))
    key = _key(table, draw(st.sampled_from(KEYS)), draw(st.sampled_from(KEYS)))
    kind = draw(st.sampled_from(["Put", "Update", "Delete", "ConditionCheck"]))
    condition = draw(st.sampled_from([None, "attribute_exists(pk)", "attribute_not_exists(pk)", "n < :limit"]))
    op: dict[str, Any] = {"TableName": table}
    values: dict[str, Any] = {}
    if kind == "Put":
        op["Item"] = {**key, "n": {"N": str(draw(st.integers(0, 3)))}}
    else:
        op["Key"] = key
    if kind == "Update":
        op["UpdateExpression"] = "ADD n :one"
        values[":one"] = {"N": "1"}
    if condition is None and kind == "ConditionCheck":
        condition = "attribute_exists(pk)"
    if condition is not None:
        op["ConditionExpression"] = condition
        if ":limit" in condition:
            values[":limit"] = {"N": "2"}
    if values:
        op["ExpressionAttributeValues"] = values
    return {kind: op}


transactions_strategy = st.lists(st.lists(actions(), min_size=1, max_size=4), min_size=1, max_size=6)


@contextmanager
def _account(patched: bool) -> Iterator[Any]:
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        for name, schema in TABLES.items():
            client.create_table(
                TableName=name, BillingMode="PAY_PER_REQUEST",
                KeySchema=[{"AttributeName": a, "KeyType": t} for a, t in schema],
                AttributeDefinitions=[{"AttributeName": a, "AttributeType": "S"} for a, _ in schema])
        undo: Callable[[], None] | None = transactions.install() if patched else None
        try:
            yield client
        finally:
            if undo is not None:
                undo()


def _run(patched: bool, batches: list[list[dict[str, Any]]]) -> list[Any]:
    """What each transaction answered and every table's items after it."""
    seen: list[Any] = []
    with _account(patched) as client:
        for batch in batches:
            try:
                client.transact_write_items(TransactItems=batch)
                answer: Any = "ok"
            except ClientError as error:
                reasons = error.response.get("CancellationReasons", [])
                answer = (error.response["Error"]["Code"], [r.get("Code") for r in reasons])
            items = {name: sorted(str(sorted(i.items())) for i in client.scan(TableName=name)["Items"])
                     for name in TABLES}
            seen.append((answer, items))
    return seen


@settings(max_examples=examples(25), deadline=None)
@given(transactions_strategy)
def test_a_failed_transaction_leaves_the_tables_as_moto_s_rollback_does(batches: list[list[dict[str, Any]]]) -> None:
    assert _run(True, batches) == _run(False, batches)


def test_a_cancelled_transaction_undoes_the_actions_before_the_failing_one() -> None:
    # Given an item, and a transaction whose first action writes a new one and whose second fails its condition
    batch = [{"Put": {"TableName": "Single", "Item": {"pk": {"S": "b"}, "n": {"N": "1"}}}},
             {"Update": {"TableName": "Single", "Key": {"pk": {"S": "a"}}, "UpdateExpression": "ADD n :one",
                         "ConditionExpression": "attribute_not_exists(pk)",
                         "ExpressionAttributeValues": {":one": {"N": "1"}}}}]
    setup = [[{"Put": {"TableName": "Single", "Item": {"pk": {"S": "a"}, "n": {"N": "5"}}}}]]
    # When it runs through the rehearsal's rollback
    (_, (answer, items)) = _run(True, [*setup, batch])
    # Then it was cancelled, and neither the new item nor a change to the old one is left
    assert answer == ("TransactionCanceledException", ["None", "ConditionalCheckFailed"])
    assert items["Single"] == [str(sorted({"pk": {"S": "a"}, "n": {"N": "5"}}.items()))]
