"""`failures discard`: delete abandoned messages from the failure DLQ, each written to the log before it is deleted.

A message an operator gives up on must still be accounted for: before each DeleteMessage, the whole failure record
(HandleFailure's document, the original message inside it, the DLQ message's id and attributes) is written as one JSON
line to the log and flushed (to disk, with fsync, for a file: fire_and_forget/cli/guard.py, write_line). If writing
fails, nothing is deleted. Only the selected records are deleted; every other message read is made visible again
(fire_and_forget/runtime/dlq.py), and messages that are not failure records are never deleted. The records of one
execution are one failure (fire_and_forget/runtime/records.py, one_per_execution): selected together, each logged and
deleted. `ff-ops failures discard` runs this twice: as a dry run for the list the operator confirms, then for the
confirmed records only (by their DLQ message ids), so that no message stays held while the prompt waits.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import IO, TYPE_CHECKING

from botocore.exceptions import ClientError

from fire_and_forget.cli.guard import write_line
from fire_and_forget.cli.report import json_time
from fire_and_forget.runtime.dlq import DEFAULT_VISIBILITY_TIMEOUT, HeldMessages
from fire_and_forget.runtime.errors import ACCESS_CODES, THROTTLING_CODES, error_code
from fire_and_forget.runtime.healing_policy import first_message_id
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

LOG_SCHEMA = "ff-ops/discarded/v1"


class DiscardVerdict(StrEnum):
    DISCARDED = "discarded"  # logged, then deleted
    WOULD_DISCARD = "would-discard"  # --dry-run
    DECLINED = "declined"  # the operator answered no: left in the DLQ
    DELETE_FAILED = "delete-failed"  # logged, but SQS refused the delete: still in the DLQ (and in the log)


@dataclass(frozen=True)
class DiscardRequest:
    selection: Selection
    message_ids: frozenset[str] = frozenset()  # DLQ message ids or source (original) message ids
    dry_run: bool = False
    visibility_timeout: int = DEFAULT_VISIBILITY_TIMEOUT
    wait_seconds: int | None = None
    key_field: str = DEFAULT_KEY_FIELD  # the body field --key selects by (the stack's MessageKeyField)

    @property
    def is_empty(self) -> bool:
        return self.selection.is_everything and not self.message_ids

    def matches(self, record: FailureRecord) -> bool:
        if self.message_ids and not self.message_ids & {*record.message_ids, record.source_message_id}:
            return False
        return self.selection.matches(record)


@dataclass(frozen=True)
class Discarded:
    message_id: str
    key: str | None
    error: str
    verdict: DiscardVerdict
    reason: str | None = None
    copies: tuple[str, ...] = ()  # further records of the same execution, discarded with it
    caller_message_id: str | None = None  # the caller's message (before any redrive): its status row, its ticket


@dataclass
class DiscardReport:
    dry_run: bool
    key_field: str = DEFAULT_KEY_FIELD
    read: int = 0
    outcomes: list[Discarded] = field(default_factory=list)

    def count(self, verdict: DiscardVerdict) -> int:
        return sum(1 for o in self.outcomes if o.verdict is verdict)

    @property
    def complete(self) -> bool:
        return not self.count(DiscardVerdict.DELETE_FAILED)


def log_line(
    record: FailureRecord, dlq_body: str, stack: str, now: datetime, key_field: str = DEFAULT_KEY_FIELD
) -> str:
    """The JSON line that keeps an abandoned message accounted for: everything the DLQ message held."""
    return json.dumps(
        {
            "schema": LOG_SCHEMA,
            "discardedAt": json_time(now),
            "stack": stack,
            "keyField": key_field,
            "dlqMessageId": record.message_id,
            "sourceMessageId": record.source_message_id,
            "key": record.key,
            "error": record.error,
            "failedState": record.failed_state,
            "manualRepair": record.manual_repair,
            "executionArn": record.execution_arn,
            "failureRecord": json.loads(dlq_body),  # parse() accepted it, so it is JSON
        },
        sort_keys=False,
    )


def discard_failures(
    sqs: SQSClient,
    dlq_url: str,
    stack: str,
    request: DiscardRequest,
    log: IO[str],
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
    pace: Callable[[], None] = lambda: None,
    done: Callable[[Discarded], None] = lambda outcome: None,
) -> DiscardReport:
    """Read the whole DLQ, then log and delete each selected record, each in its turn (`pace`); `done` is told of
    each record once its deletes were made."""
    report = DiscardReport(dry_run=request.dry_run, key_field=request.key_field)
    with HeldMessages(
        sqs, dlq_url, visibility_timeout=request.visibility_timeout, wait_seconds=request.wait_seconds
    ) as held:
        records: dict[str, FailureRecord] = {}
        bodies: dict[str, str] = {}
        while batch := held.receive(10):
            for message in batch:
                parsed = parse(message, request.key_field)
                if not isinstance(parsed, UnrecognizedMessage):
                    records[parsed.message_id] = parsed
                    bodies[parsed.message_id] = message.get("Body", "")
        report.read = held.read
        chosen = [r for r in one_per_execution(records.values()) if request.matches(r)]
        if request.dry_run:
            report.outcomes = [_outcome(r, DiscardVerdict.WOULD_DISCARD) for r in chosen]
            return report
        for record in chosen:
            pace()
            failed = []
            for message_id in record.message_ids:  # the record, then the other records of its execution
                write_line(log, log_line(records[message_id], bodies[message_id], stack, now(), request.key_field))
                try:
                    sqs.delete_message(QueueUrl=dlq_url, ReceiptHandle=held.receipt(message_id))
                except ClientError as error:
                    if error_code(error) in THROTTLING_CODES | ACCESS_CODES:
                        raise
                    failed.append(f"{message_id}: {error_code(error)}: {error}")
                    continue
                held.forget(message_id)
            outcome = (_outcome(record, DiscardVerdict.DELETE_FAILED, "; ".join(failed)) if failed
                       else _outcome(record, DiscardVerdict.DISCARDED))
            report.outcomes.append(outcome)
            done(outcome)
    return report


def _outcome(record: FailureRecord, verdict: DiscardVerdict, reason: str | None = None) -> Discarded:
    return Discarded(record.message_id, record.key, record.error, verdict, reason, record.copies,
                     first_message_id(record.record) or record.source_message_id)
