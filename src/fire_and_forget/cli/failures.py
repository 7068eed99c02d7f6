"""Listing and showing the failure DLQ's records without consuming them (see fire_and_forget/runtime/dlq.py for
visibility)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from fire_and_forget.cli.errors import NotFound
from fire_and_forget.runtime.dlq import DEFAULT_VISIBILITY_TIMEOUT, HeldMessages
from fire_and_forget.runtime.records import (
    DEFAULT_KEY_FIELD,
    FailureRecord,
    Selection,
    UnrecognizedMessage,
    one_per_execution,
    parse,
)

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

DEFAULT_LIMIT = 10_000


@dataclass
class FailureListing:
    """What one read of the failure DLQ found: the records that match, and every message that is not ours."""

    queue_url: str
    approximate_depth: int
    key_field: str = DEFAULT_KEY_FIELD  # the body field each record's key was read from
    read: int = 0
    truncated: bool = False
    records: list[FailureRecord] = field(default_factory=list)
    unrecognized: list[UnrecognizedMessage] = field(default_factory=list)


def list_failures(sqs: SQSClient, queue_url: str, selection: Selection | None = None, *,
                  limit: int = DEFAULT_LIMIT, visibility_timeout: int = DEFAULT_VISIBILITY_TIMEOUT,
                  wait_seconds: int | None = None, batch_size: int = 10,
                  key_field: str = DEFAULT_KEY_FIELD) -> FailureListing:
    """Read up to `limit` messages, then make all of them visible again; unrecognized ones are always listed. Each
    record's key is the original body's `key_field` (the stack's MessageKeyField); the records of one execution are
    listed as one, its `copies` naming the others (fire_and_forget/runtime/records.py, one_per_execution)."""
    selection = selection or Selection()
    listing = FailureListing(queue_url, approximate_depth(sqs, queue_url), key_field)
    found: list[FailureRecord] = []
    with HeldMessages(sqs, queue_url, visibility_timeout=visibility_timeout, wait_seconds=wait_seconds) as held:
        while held.read < limit:
            batch = held.receive(min(batch_size, limit - held.read))
            if not batch:
                break
            for message in batch:
                parsed = parse(message, key_field)
                if isinstance(parsed, UnrecognizedMessage):
                    listing.unrecognized.append(parsed)
                else:
                    found.append(parsed)
        listing.read = held.read
        listing.truncated = held.read >= limit and bool(held.receive(1))
    listing.records = [record for record in one_per_execution(found) if selection.matches(record)]
    listing.records.sort(key=lambda r: (r.failed_at is None, r.failed_at))
    return listing


def find_failures(sqs: SQSClient, queue_url: str, key: str, *, limit: int = DEFAULT_LIMIT,
                  visibility_timeout: int = DEFAULT_VISIBILITY_TIMEOUT,
                  wait_seconds: int | None = None, key_field: str = DEFAULT_KEY_FIELD) -> list[FailureRecord]:
    """The records whose key (the body's `key_field`), DLQ message id, source message id or execution ARN is `key`."""
    listing = list_failures(sqs, queue_url, limit=limit, visibility_timeout=visibility_timeout,
                            wait_seconds=wait_seconds, key_field=key_field)
    found = [r for r in listing.records
             if key in (r.key, r.source_message_id, r.execution_arn, *r.message_ids)]
    if not found:
        raise NotFound(f"no failure record for {key!r} among the {listing.read} messages of the failure DLQ",
                       "`ff-ops failures list` shows what is there")
    return found


def approximate_depth(sqs: SQSClient, queue_url: str) -> int:
    attributes = sqs.get_queue_attributes(QueueUrl=queue_url,
                                          AttributeNames=["ApproximateNumberOfMessages"])["Attributes"]
    return int(attributes.get("ApproximateNumberOfMessages", "0"))
