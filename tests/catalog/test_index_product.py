"""IndexProduct on moto: its bounds, its outcomes (INDEXED, SUPERSEDED), its errors and the metrics of each path."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import time_machine
from botocore.exceptions import ClientError

from fire_and_forget.runtime.deliveries import STALE_AFTER_VARIABLE, DynamoDBDeliveryClaims
from fire_and_forget.runtime.errors import DuplicateDelivery, TransientError
from index_product import logic
from index_product.errors import InvalidDocument
from index_product.model import MAX_TERMS, parse_document, search_terms
from index_product.settings import IndexProductSettings
from tests.catalog.conftest import (
    DELIVERIES,
    EXECUTION,
    OTHER_EXECUTION,
    SEARCH_INDEX,
    Catalog,
    document,
    task_input,
)

WITHIN_BOUNDS = {
    "shortest productId": document(productId="a"),
    "longest productId, every allowed character": document(productId=("Az09_-" * 11)[:64]),
    "version 1": document(version=1),
    "version 2**53": document(version=2**53),
    "title of 1": document(title="x"),
    "title of 200": document(title="t" * 200),
    "description empty": document(description=""),
    "description of 2000": document(description="d" * 2000),
    "no tags": document(tags=[]),
    "20 tags": document(tags=[f"tag{n}" for n in range(20)]),
    "tag of 1 and of 40": document(tags=["x", "y" * 40]),
}

# (body, the field the message must name)
PAST_BOUNDS = {
    "empty productId": (document(productId=""), "productId"),
    "productId of 65": (document(productId="p" * 65), "productId"),
    "productId with a dot": (document(productId="sku.1"), "productId"),
    "productId with a space": (document(productId="sku 1"), "productId"),
    "productId ending in a newline": (document(productId="sku1\n"), "productId"),
    "version 0": (document(version=0), "version"),
    "version 2**53 + 1": (document(version=2**53 + 1), "version"),
    "version as a string": (document(version="3"), "version"),
    "version as a float": (document(version=1.0), "version"),
    "version as a boolean": (document(version=True), "version"),
    "title empty": (document(title=""), "title"),
    "title of 201": (document(title="t" * 201), "title"),
    "title not a string": (document(title=["Trail", "Shoe"]), "title"),
    "description of 2001": (document(description="d" * 2001), "description"),
    "21 tags": (document(tags=[f"tag{n}" for n in range(21)]), "tags"),
    "an empty tag": (document(tags=["ok", ""]), "tags.1"),
    "a tag of 41": (document(tags=["z" * 41]), "tags.0"),
    "tags not a list": (document(tags="red"), "tags"),
    "productId missing": ({"version": 1, "title": "Trail Shoe"}, "productId"),
    "title missing": ({"productId": "sku-1", "version": 1}, "title"),
    "an extra key": (document(price=10), "price"),
    "a misspelt key": ({"productID": "sku-1", "version": 1, "title": "Trail Shoe"}, "productID"),
}

NOT_A_DOCUMENT = {
    "not JSON": ("productId=sku-1", "not usable JSON"),
    "truncated JSON": ('{"productId": "sku-1"', "not usable JSON"),
    "empty body": ("", "not usable JSON"),
    "deeply nested JSON": ("[" * 50_000 + "]" * 50_000, "not usable JSON"),
    "deeply nested inside a field": (
        '{"productId": "sku-1", "version": 1, "title": ' + "[" * 5_000 + "]" * 5_000 + "}",
        "not usable JSON",
    ),
    "a JSON array": ("[]", "must be a JSON object"),
    "a JSON string": ('"sku-1"', "must be a JSON object"),
    "JSON null": ("null", "must be a JSON object"),
}


@pytest.mark.parametrize("body", WITHIN_BOUNDS.values(), ids=WITHIN_BOUNDS.keys())
def test_a_document_at_each_bound_is_indexed(catalog: Catalog, body: dict[str, Any]) -> None:
    result = catalog.invoke(task_input(body))

    assert result["status"] == "INDEXED"
    item = catalog.indexed(body["productId"])
    assert item is not None
    assert item["version"] == {"N": str(body["version"])}
    assert item["description"] == {"S": body.get("description", "")}
    assert item["tags"] == {"L": [{"S": tag} for tag in body.get("tags", [])]}
    assert catalog.metrics() == {"ProductsIndexed": 1}


@pytest.mark.parametrize(("body", "field"), PAST_BOUNDS.values(), ids=PAST_BOUNDS.keys())
def test_a_document_just_past_a_bound_is_invalid_and_names_the_field(
    catalog: Catalog, body: dict[str, Any], field: str
) -> None:
    with pytest.raises(InvalidDocument) as raised:
        catalog.invoke(task_input(body))

    assert f"{field}: " in str(raised.value)
    assert catalog.index_size() == 0
    assert catalog.metrics() == {"InvalidDocuments": 1}


@pytest.mark.parametrize(("body", "says"), NOT_A_DOCUMENT.values(), ids=NOT_A_DOCUMENT.keys())
def test_a_body_that_is_not_a_document_object_is_invalid(catalog: Catalog, body: str, says: str) -> None:
    with pytest.raises(InvalidDocument, match=says):
        catalog.invoke(task_input(body))

    assert catalog.index_size() == 0
    assert catalog.metrics() == {"InvalidDocuments": 1}


def test_the_message_of_an_invalid_document_never_repeats_the_value() -> None:
    with pytest.raises(InvalidDocument) as raised:
        parse_document(json.dumps(document(productId="secret value!", tags=["ok", "x" * 41], colour="red")))

    message = str(raised.value)
    assert "secret value!" not in message
    assert "x" * 41 not in message
    assert [problem.split(":")[0] for problem in message.removeprefix("invalid product document: ").split("; ")] == [
        "productId",
        "tags.1",
        "colour",
    ]


def test_a_new_product_is_written_with_every_attribute(catalog: Catalog) -> None:
    body = document(title="Trail Shoe, Blue", description="Grippy soles.", tags=["Running", "trail"], version=7)

    result = catalog.invoke(task_input(body, message_id="msg-7"))

    assert result == {"status": "INDEXED", "productId": "sku-1", "version": 7, "indexedVersion": 7}
    item = catalog.indexed()
    assert item is not None
    assert set(item) == {"productId", "version", "title", "description", "tags", "terms", "messageId", "indexedAt"}
    assert item["title"] == {"S": "Trail Shoe, Blue"}
    assert sorted(item["terms"]["SS"]) == ["blue", "grippy", "running", "shoe", "soles", "trail"]
    assert item["messageId"] == {"S": "msg-7"}
    assert int(item["indexedAt"]["N"]) > 1_700_000_000
    assert catalog.rules.violations == []
    assert catalog.metrics() == {"ProductsIndexed": 1}


def test_a_title_without_words_is_indexed_without_a_terms_set(catalog: Catalog) -> None:
    # DynamoDB refuses an empty string set (so does moto: ValidationException); the attribute is left out instead.
    result = catalog.invoke(task_input(document(title="!!! ---")))

    assert result["status"] == "INDEXED"
    item = catalog.indexed()
    assert item is not None
    assert "terms" not in item


def test_terms_are_distinct_lowercase_words_in_order_and_capped() -> None:
    words = [f"w{n}" for n in range(300)]
    product = parse_document(
        json.dumps(document(title="Shoe SHOE trail_run", description=" ".join(words), tags=["Trail", "late"]))
    )

    terms = search_terms(product)

    assert len(terms) == MAX_TERMS
    assert terms[:3] == ["shoe", "trail", "run"]
    assert terms[-1] == "w196"
    assert "late" not in terms  # past the cap: words are kept in order of first appearance


def test_a_duplicate_delivery_raises_and_writes_nothing(catalog: Catalog) -> None:
    # Given the first execution claimed the message and stopped before writing (a crash, or still running)
    DynamoDBDeliveryClaims(catalog.client, DELIVERIES, 3600).claim("msg-1", EXECUTION)

    with pytest.raises(DuplicateDelivery):
        catalog.invoke(task_input(document(), execution_arn=OTHER_EXECUTION))

    assert catalog.index_size() == 0
    assert catalog.claims() == {"msg-1": EXECUTION}
    assert catalog.metrics() == {"DuplicateDeliveries": 1}


def test_a_duplicate_delivery_with_a_bad_body_is_a_duplicate_not_invalid(catalog: Catalog) -> None:
    DynamoDBDeliveryClaims(catalog.client, DELIVERIES, 3600).claim("msg-bad", EXECUTION)

    with pytest.raises(DuplicateDelivery):
        catalog.invoke(task_input("not json", message_id="msg-bad", execution_arn=OTHER_EXECUTION))

    assert catalog.metrics() == {"DuplicateDeliveries": 1}


def test_a_duplicate_after_success_leaves_the_item_as_written(catalog: Catalog) -> None:
    catalog.invoke(task_input(document(title="First")))
    before = catalog.indexed()

    with pytest.raises(DuplicateDelivery):
        catalog.invoke(task_input(document(title="First"), execution_arn=OTHER_EXECUTION))

    assert catalog.indexed() == before
    assert catalog.metrics() == {"ProductsIndexed": 1, "DuplicateDeliveries": 1}


def test_a_retry_of_the_same_execution_after_success_is_indexed_without_a_second_write(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(logic, "now", lambda: 1_800_000_000)
    catalog.invoke(task_input(document(version=3)))
    assert catalog.metrics() == {"ProductsIndexed": 1}

    monkeypatch.setattr(logic, "now", lambda: 1_800_000_099)
    result = catalog.invoke(task_input(document(version=3)))

    assert result == {"status": "INDEXED", "productId": "sku-1", "version": 3, "indexedVersion": 3}
    item = catalog.indexed()
    assert item is not None
    assert item["indexedAt"] == {"N": "1800000000"}  # the first write's, not the retry's clock
    assert catalog.metrics() == {}  # the effect was counted once, by the attempt that made it
    assert catalog.rules.explaining_reads == 1
    assert catalog.rules.violations == []


def test_an_older_version_after_a_newer_one_is_superseded_and_leaves_the_newer(catalog: Catalog) -> None:
    catalog.invoke(task_input(document(version=5, title="Newer"), message_id="msg-5"))
    catalog.metrics()

    result = catalog.invoke(task_input(document(version=4, title="Older"), message_id="msg-4"))

    assert result == {"status": "SUPERSEDED", "productId": "sku-1", "version": 4, "indexedVersion": 5}
    item = catalog.indexed()
    assert item is not None
    assert (item["version"], item["title"], item["messageId"]) == ({"N": "5"}, {"S": "Newer"}, {"S": "msg-5"})
    assert catalog.metrics() == {"ProductsSuperseded": 1}
    assert catalog.rules.violations == []


def test_the_same_version_from_another_message_is_superseded(catalog: Catalog) -> None:
    catalog.invoke(task_input(document(version=2, title="First"), message_id="msg-a"))
    catalog.metrics()

    result = catalog.invoke(task_input(document(version=2, title="Second"), message_id="msg-b"))

    assert (result["status"], result["indexedVersion"]) == ("SUPERSEDED", 2)
    item = catalog.indexed()
    assert item is not None
    assert item["title"] == {"S": "First"}
    assert catalog.metrics() == {"ProductsSuperseded": 1}


def test_a_newer_version_replaces_an_older_one(catalog: Catalog) -> None:
    catalog.invoke(task_input(document(version=1, tags=["old"]), message_id="msg-1"))

    result = catalog.invoke(task_input(document(version=2, tags=[]), message_id="msg-2"))

    assert (result["status"], result["indexedVersion"]) == ("INDEXED", 2)
    item = catalog.indexed()
    assert item is not None
    assert (item["version"], item["tags"], item["messageId"]) == ({"N": "2"}, {"L": []}, {"S": "msg-2"})
    assert catalog.metrics() == {"ProductsIndexed": 2}


@contextmanager
def failing(operation: str, code: str, status: int, answer: Callable[..., Any] | None = None) -> Iterator[None]:
    """Make the handler's client fail ``operation`` on the search-index table with an AWS error, other tables real."""
    client = logic.dynamodb()
    real = getattr(client, operation)

    def patched(**kwargs: Any) -> Any:
        if kwargs.get("TableName") != SEARCH_INDEX:
            return real(**kwargs)
        if answer is not None:
            return answer(**kwargs)
        error = {"Error": {"Code": code, "Message": code}, "ResponseMetadata": {"HTTPStatusCode": status}}
        raise ClientError(error, operation)  # type: ignore[arg-type]

    setattr(client, operation, patched)
    try:
        yield
    finally:
        setattr(client, operation, real)


def test_a_throttled_write_is_a_transient_error_and_the_retry_indexes(catalog: Catalog) -> None:
    with failing("put_item", "ProvisionedThroughputExceededException", 400), pytest.raises(TransientError) as raised:
        catalog.invoke(task_input(document()))

    assert isinstance(raised.value.__cause__, ClientError)
    assert catalog.index_size() == 0
    assert catalog.metrics() == {}
    # The workflow's Retry runs the same execution again: its claim is its own, and the write goes through.
    assert catalog.invoke(task_input(document()))["status"] == "INDEXED"
    assert catalog.metrics() == {"ProductsIndexed": 1}


def test_a_server_error_on_the_write_is_transient(catalog: Catalog) -> None:
    with failing("put_item", "InternalServerError", 500), pytest.raises(TransientError):
        catalog.invoke(task_input(document()))


def test_access_denied_is_not_disguised_as_transient(catalog: Catalog) -> None:
    with failing("put_item", "AccessDeniedException", 400), pytest.raises(Exception) as raised:
        catalog.invoke(task_input(document()))

    assert type(raised.value) is ClientError
    assert raised.value.response["Error"]["Code"] == "AccessDeniedException"
    assert catalog.index_size() == 0


def test_a_throttled_explaining_read_is_transient(catalog: Catalog) -> None:
    catalog.invoke(task_input(document(version=2), message_id="msg-2"))
    catalog.metrics()

    with failing("get_item", "ThrottlingException", 400), pytest.raises(TransientError):
        catalog.invoke(task_input(document(version=1), message_id="msg-1"))

    assert catalog.metrics() == {}


def test_an_item_gone_between_the_write_and_the_read_is_transient(catalog: Catalog) -> None:
    catalog.invoke(task_input(document(version=2), message_id="msg-2"))

    with failing("get_item", "", 0, answer=lambda **_: {}), pytest.raises(TransientError, match="retry"):
        catalog.invoke(task_input(document(version=1), message_id="msg-1"))


TASK_INPUTS_WITHOUT_A_RECORD = {
    "no record": ({"executionArn": EXECUTION}, "'record'"),
    "record not an object": ({"record": "msg-1", "executionArn": EXECUTION}, "'record'"),
    "no messageId": ({"record": {"body": "{}"}, "executionArn": EXECUTION}, "record.messageId"),
    "empty messageId": ({"record": {"messageId": "", "body": "{}"}, "executionArn": EXECUTION}, "record.messageId"),
    "no body": ({"record": {"messageId": "msg-1"}, "executionArn": EXECUTION}, "record.body"),
    "no executionArn": ({"record": {"messageId": "msg-1", "body": "{}"}}, "executionArn"),
    "not an object at all": ([{"messageId": "msg-1", "body": "{}"}], "'record'"),
}


@pytest.mark.parametrize(("event", "names"), TASK_INPUTS_WITHOUT_A_RECORD.values(), ids=TASK_INPUTS_WITHOUT_A_RECORD)
def test_a_task_input_without_the_record_is_invalid_before_any_claim(catalog: Catalog, event: Any, names: str) -> None:
    with pytest.raises(InvalidDocument, match=names):
        catalog.invoke(event)

    assert catalog.claims() == {}
    assert catalog.index_size() == 0


def test_settings_refuse_a_missing_or_bad_environment() -> None:
    good = {"DELIVERIES_TABLE_NAME": "D", "DELIVERY_CLAIM_TTL_SECONDS": "60", "SEARCH_INDEX_TABLE_NAME": "S"}
    assert IndexProductSettings.from_env(good) == IndexProductSettings("D", 60, "S")

    with pytest.raises(LookupError, match="SEARCH_INDEX_TABLE_NAME"):
        IndexProductSettings.from_env({**good, "SEARCH_INDEX_TABLE_NAME": ""})
    with pytest.raises(ValueError, match="DELIVERY_CLAIM_TTL_SECONDS"):
        IndexProductSettings.from_env({**good, "DELIVERY_CLAIM_TTL_SECONDS": "0"})


STALE_AFTER = 325  # the REQUEST_RESPONSE catalog's: Express TimeoutSeconds 300 + the function's 25 s


def _claim_at(catalog: Catalog, moment: float, execution_arn: str, stale_after: int | None = STALE_AFTER,
              message_id: str = "msg-1") -> bool:
    with time_machine.travel(moment, tick=False):
        return DynamoDBDeliveryClaims(catalog.client, DELIVERIES, 3600, stale_after).claim(message_id, execution_arn)


@pytest.mark.parametrize(("age", "stale_after", "delivered", "taken_over"), [
    (STALE_AFTER + 1, STALE_AFTER, False, True),  # its execution can no longer run: the new receive owns it
    (STALE_AFTER, STALE_AFTER, False, False),  # not older than the bound: the owner may still be running
    (STALE_AFTER + 1, STALE_AFTER, True, False),  # the owner completed the delivery: a duplicate of a done message
    (10 * 24 * 3600, None, False, False),  # FIRE_AND_FORGET: never taken over, the Reconciler settles it
], ids=["stale", "at the bound", "stale but delivered", "no takeover configured"])
def test_a_claim_is_taken_over_only_when_stale_and_never_delivered(
        catalog: Catalog, age: int, stale_after: int | None, delivered: bool, taken_over: bool) -> None:
    start = 1_800_000_000
    assert _claim_at(catalog, start, EXECUTION, stale_after)
    if delivered:  # what the returning tail's DeliveryCompleted writes
        catalog.client.update_item(TableName=DELIVERIES, Key={"messageId": {"S": "msg-1"}},
                                   UpdateExpression="SET deliveredAt = :at", ExpressionAttributeValues={
                                       ":at": {"N": str(start)}})

    assert _claim_at(catalog, start + age, OTHER_EXECUTION, stale_after) is taken_over
    assert catalog.claims() == {"msg-1": OTHER_EXECUTION if taken_over else EXECUTION}


def test_the_owners_retry_restamps_the_claim_so_its_age_counts_from_the_latest_invocation(catalog: Catalog) -> None:
    start = 1_800_000_000
    assert _claim_at(catalog, start, EXECUTION)
    assert _claim_at(catalog, start + 200, EXECUTION)  # a Retry of the same Task, 200 s later

    assert not _claim_at(catalog, start + STALE_AFTER + 1, OTHER_EXECUTION)  # 126 s after the retry: not stale
    assert _claim_at(catalog, start + 200 + STALE_AFTER + 1, OTHER_EXECUTION)


@pytest.mark.parametrize("value", ["0", "-5", "ten"])
def test_a_bad_takeover_age_is_refused_at_the_first_invocation(value: str) -> None:
    environ = {"DELIVERIES_TABLE_NAME": DELIVERIES, "DELIVERY_CLAIM_TTL_SECONDS": "3600",
               "SEARCH_INDEX_TABLE_NAME": SEARCH_INDEX, STALE_AFTER_VARIABLE: value}
    with pytest.raises(ValueError, match=STALE_AFTER_VARIABLE):
        IndexProductSettings.from_env(environ)
