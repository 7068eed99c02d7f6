"""Listing and showing the failure DLQ's records without consuming them (see fire_and_forget/runtime/dlq.py for
visibility), a page at a time if asked.

SQS has no cursor: a receive returns messages in no defined sequence, and a message released is received again. A
page is therefore cut from the whole read: every message is received (held hidden while the read goes on, so that the
next receive brings others), the records are sorted as every reader sorts them (failure time, then DLQ message id),
and the page is the first `max_records` records after the token; then everything is released at once, before
anything is printed. The token is the position of the page's last record, not a place in the queue.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, NamedTuple

from fire_and_forget.cli.errors import NotFound, UsageError
from fire_and_forget.runtime.dlq import DEFAULT_VISIBILITY_TIMEOUT, HeldMessages
from fire_and_forget.runtime.records import (
    DEFAULT_KEY_FIELD,
    FailureRecord,
    Selection,
    UnrecognizedMessage,
    one_per_execution,
    parse,
    parse_time,
)

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

DEFAULT_LIMIT = 10_000
_UNDATED = datetime(1970, 1, 1, tzinfo=UTC)  # stands in for a missing failure time (such records sort last)
_TOKEN_VERSION = 1


class Position(NamedTuple):
    """A record's place in a listing, compared as a tuple: by failure time (records without one last), then by DLQ
    message id."""

    undated: bool
    failed_at: datetime
    message_id: str

    @classmethod
    def of(cls, record: FailureRecord) -> Position:
        return cls(record.failed_at is None, record.failed_at or _UNDATED, record.message_id)

    def token(self) -> str:
        """The continuation token naming this position: base64url of `1,<failure time or ->,<DLQ message id>`."""
        when = "-" if self.undated else self.failed_at.isoformat().replace("+00:00", "Z")
        text = f"{_TOKEN_VERSION},{when},{self.message_id}"
        return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")

    @classmethod
    def from_token(cls, token: str) -> Position:
        """The position a token names; raises UsageError for anything `token()` did not write."""
        try:
            version, when, message_id = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode().split(",", 2)
            failed_at = None if when == "-" else parse_time(when)
            if version != str(_TOKEN_VERSION) or not message_id or (when != "-" and failed_at is None):
                raise ValueError(token)
        except (ValueError, binascii.Error, UnicodeDecodeError) as error:
            raise UsageError(f"--starting-token {token!r} is not a token `ff-ops failures list` printed",
                             "copy the nextToken of the previous page, or leave the option out to start again") \
                from error
        return cls(failed_at is None, failed_at or _UNDATED, message_id)


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
    matching: int = 0  # records that match the selection after the starting position, this page's and the later ones
    next_token: str | None = None  # where the next page starts; None when this page is the last


@dataclass(frozen=True)
class Page:
    """Which part of the matching records a listing returns: at most `max_records` (None: all), after `after`."""

    max_records: int | None = None
    after: Position | None = None


def list_failures(sqs: SQSClient, queue_url: str, selection: Selection | None = None, *,
                  limit: int = DEFAULT_LIMIT, visibility_timeout: int = DEFAULT_VISIBILITY_TIMEOUT,
                  wait_seconds: int | None = None, batch_size: int = 10,
                  key_field: str = DEFAULT_KEY_FIELD, keep: Callable[[FailureRecord], bool] | None = None,
                  page: Page | None = None) -> FailureListing:
    """Read up to `limit` messages, then make all of them visible again; unrecognized ones are always listed. Each
    record's key is the original body's `key_field` (the stack's MessageKeyField); the records of one execution are
    listed as one, its `copies` naming the others (fire_and_forget/runtime/records.py, one_per_execution). The records
    that match `selection` and `keep` are sorted by Position; `page` cuts them (module docstring)."""
    selection = selection or Selection()
    page = page or Page()
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
    matching = sorted((r for r in one_per_execution(found) if selection.matches(r) and (keep is None or keep(r))),
                      key=Position.of)
    if page.after is not None:
        matching = [r for r in matching if Position.of(r) > page.after]
    listing.matching = len(matching)
    listing.records = matching[:page.max_records] if page.max_records is not None else matching
    if len(listing.records) < len(matching):
        listing.next_token = Position.of(listing.records[-1]).token()
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
