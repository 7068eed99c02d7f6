"""IndexProduct: claim the delivery, validate the document, write it unless the index already holds a newer version."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from functools import cache
from typing import TYPE_CHECKING, Any, NamedTuple

import boto3
from botocore.config import Config

from fire_and_forget.runtime.deliveries import DeliveryClaims, DynamoDBDeliveryClaims
from fire_and_forget.runtime.errors import DuplicateDelivery, TransientError
from index_product.errors import InvalidDocument
from index_product.model import ProductDocument, parse_document, search_terms
from index_product.search_index import DynamoDBSearchIndex
from index_product.settings import IndexProductSettings
from index_product.telemetry import count, logger

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient

INDEXED = "INDEXED"
SUPERSEDED = "SUPERSEDED"

# The workflow's Retry owns retries and their backoff; botocore keeps a short budget of its own: `max_attempts` counts
# retries after the first call (botocore's Config reference), so 3 calls at most per request.
_CLIENT_CONFIG = Config(retries={"mode": "standard", "max_attempts": 2}, connect_timeout=2, read_timeout=5)


@cache
def dynamodb() -> DynamoDBClient:
    """One DynamoDB client per execution environment, made on first use."""
    return boto3.client("dynamodb", config=_CLIENT_CONFIG)


def now() -> int:
    """Epoch seconds for indexedAt (a module function, so a test can hold the clock still)."""
    return int(time.time())


class Delivery(NamedTuple):
    message_id: str
    body: str
    execution_arn: str


def handle(event: Any) -> dict[str, Any]:
    """Wire the adapters from the environment and index one delivered message."""
    settings = IndexProductSettings.from_env(os.environ)
    client = dynamodb()
    return index_product(
        event,
        claims=DynamoDBDeliveryClaims(client, settings.deliveries_table, settings.claim_ttl_seconds,
                                      settings.claim_stale_after_seconds),
        index=DynamoDBSearchIndex(client, settings.search_index_table),
    )


def index_product(
    event: Any,
    *,
    claims: DeliveryClaims,
    index: DynamoDBSearchIndex,
) -> dict[str, Any]:
    """Return the outcome (INDEXED or SUPERSEDED); raise InvalidDocument, DuplicateDelivery or TransientError."""
    delivery = read_delivery(event)
    logger.append_keys(messageId=delivery.message_id)
    # Claimed before the body is read: a duplicate execution must stop even when the body is bad.
    owned = claims.claim(delivery.message_id, delivery.execution_arn)
    if not owned:
        count("DuplicateDeliveries")
        logger.warning("another execution owns this SQS message", extra={"executionArn": delivery.execution_arn})
        raise DuplicateDelivery(f"SQS message {delivery.message_id} belongs to another execution")
    document = validated(delivery.body)
    logger.append_keys(productId=document.productId)
    return write(document, delivery.message_id, index)


def validated(body: str) -> ProductDocument:
    """The body's document; InvalidDocument is counted here, where it is known."""
    try:
        return parse_document(body)
    except InvalidDocument:
        count("InvalidDocuments")
        raise


def write(document: ProductDocument, message_id: str, index: DynamoDBSearchIndex) -> dict[str, Any]:
    """Index the document unless a newer or equal version is there; tell an own earlier write from another's."""
    outcome = {"productId": document.productId, "version": document.version}
    if index.write_if_newer(document, search_terms(document), message_id, now()):
        count("ProductsIndexed")
        return {**outcome, "status": INDEXED, "indexedVersion": document.version}
    held = index.indexed(document.productId)
    if held is None or held.version < document.version:
        # The condition saw this version or a newer one there a moment ago; a retry writes or explains it.
        raise TransientError(f"product {document.productId} changed between the write and the read; retry")
    if held.version == document.version and held.message_id == message_id:
        logger.info("this message's document is already in the index (a retry after the write)")
        return {**outcome, "status": INDEXED, "indexedVersion": held.version}
    count("ProductsSuperseded")
    logger.info("the index holds this version or a newer one", extra={"indexedVersion": held.version})
    return {**outcome, "status": SUPERSEDED, "indexedVersion": held.version}


def read_delivery(event: Any) -> Delivery:
    """The SQS record the pipe delivered and the execution's ARN; a task input without them is InvalidDocument."""
    if not isinstance(event, Mapping) or not isinstance(event.get("record"), Mapping):
        raise InvalidDocument("task input needs 'record': the SQS record the pipe delivered ($[0] of the input)")
    record: Mapping[str, Any] = event["record"]
    fields = {"record.messageId": record.get("messageId"), "record.body": record.get("body")}
    fields["executionArn"] = event.get("executionArn")
    for name, value in fields.items():
        if not isinstance(value, str) or (not value and name != "record.body"):
            raise InvalidDocument(f"task input field {name} is missing or not a string")
    return Delivery(message_id=record["messageId"], body=record["body"], execution_arn=event["executionArn"])
