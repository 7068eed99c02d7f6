"""`failures redrive`: failed messages back to the source queue, each deleted from the DLQ only once it was sent.

The whole DLQ is read first (held, fire_and_forget/runtime/dlq.py), so that the records of one execution are redriven as
one (fire_and_forget/runtime/records.py, one_per_execution). Per execution: SendMessage to the source queue (original
body and attributes), then DeleteMessage from the failure DLQ with the latest receipt handle, of the record and then of
each of its copies. An interruption before the send leaves the records in the DLQ; between the send and the deletes it
leaves them in both places: a duplicate, which the idempotent handlers absorb (a redriven message gets a new SQS
messageId, a new workflow attempt, and the domain guards find the work already done). Nothing is ever lost. Messages
read but not redriven are made visible again (fire_and_forget/runtime/dlq.py).

The automatic redrive (fire_and_forget/healing/auto_redrive.py) runs this same code inside the Redriver function: it
chooses the due records with `RedriveRequest.choose` and adds the attempt count with `RedriveRequest.extra_attributes`.
Like every module of the runtime, it imports only botocore and the standard library besides the runtime, which is
copied whole into the function's asset (fire_and_forget/construct/code.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

from botocore.exceptions import ClientError

from fire_and_forget.runtime.dlq import DEFAULT_VISIBILITY_TIMEOUT, HeldMessages
from fire_and_forget.runtime.errors import ACCESS_CODES, THROTTLING_CODES, error_code
from fire_and_forget.runtime.healing_policy import MAX_MESSAGE_ATTRIBUTES
from fire_and_forget.runtime.records import (
    DEFAULT_KEY_FIELD,
    FailureRecord,
    Selection,
    UnrecognizedMessage,
    UnsendableAttribute,
    one_per_execution,
    parse,
)

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import MessageAttributeValueTypeDef


class Action(StrEnum):
    """What became of one selected DLQ message."""

    REDRIVEN = "redriven"  # sent to the source queue and deleted from the DLQ
    WOULD_REDRIVE = "would-redrive"  # --dry-run
    REFUSED_MANUAL_REPAIR = "refused-manual-repair"  # manualRepair is true and --force was not given
    UNRECOGNIZED = "unrecognized"  # not a failure record: left in the DLQ
    SEND_FAILED = "send-failed"  # the source queue refused it: left in the DLQ
    SENT_NOT_DELETED = "sent-not-deleted"  # sent, but the delete failed: in both queues (a duplicate, absorbed)
    COPY_DELETED = "copy-deleted"  # another record of an execution just redriven: deleted once the one was sent
    DECLINED = "declined"  # ff-ops listed it and the operator answered no: left in the DLQ


LEFT_BEHIND = {Action.REFUSED_MANUAL_REPAIR, Action.UNRECOGNIZED, Action.SEND_FAILED, Action.SENT_NOT_DELETED}
# What counts against --max: an execution sent back (or, in a dry run, that would be), whether or not its record could
# then be deleted: it runs again either way.
SENT_BACK = {Action.REDRIVEN, Action.SENT_NOT_DELETED, Action.WOULD_REDRIVE}


@dataclass(frozen=True)
class Outcome:
    message_id: str
    key: str | None  # the original body's key field, None when it has none (or the message is not a record)
    error: str | None
    action: Action
    new_message_id: str | None = None
    reason: str | None = None


@dataclass
class RedriveReport:
    dry_run: bool
    key_field: str = DEFAULT_KEY_FIELD
    read: int = 0
    outcomes: list[Outcome] = field(default_factory=list)

    def count(self, action: Action) -> int:
        return sum(1 for outcome in self.outcomes if outcome.action is action)

    @property
    def complete(self) -> bool:
        """True when nothing selected was left behind."""
        return not any(outcome.action in LEFT_BEHIND for outcome in self.outcomes)


@dataclass(frozen=True)
class RedriveRequest:
    selection: Selection
    dry_run: bool = False
    max_messages: int | None = None
    force: bool = False
    visibility_timeout: int = DEFAULT_VISIBILITY_TIMEOUT
    wait_seconds: int | None = None
    batch_size: int = 10  # messages per receive (SQS's maximum)
    key_field: str = DEFAULT_KEY_FIELD  # the body field --key selects by (the stack's MessageKeyField)
    # The automatic path: which selected records to redrive now (the others are left untouched, unreported), and
    # the attributes to add to the message sent back (the attempt count).
    choose: Callable[[FailureRecord], bool] | None = None
    extra_attributes: Callable[[FailureRecord], dict[str, MessageAttributeValueTypeDef]] | None = None
    # Called just before each send, to wait for its turn (ff-ops' --rate).
    pace: Callable[[], None] | None = None
    # Called once a record's message is back in the source queue, with the MessageId it got there: the status link
    # (fire_and_forget.runtime.status.redrive_links), so that the caller's message id leads to the new attempt.
    sent: Callable[[FailureRecord, str], None] | None = None


def redrive_failures(sqs: SQSClient, dlq_url: str, source_url: str, request: RedriveRequest,
                     progress: Callable[[Outcome], None] | None = None) -> RedriveReport:
    """Read the DLQ, then redrive the selected records, one execution at a time; returns what became of each."""
    report = RedriveReport(dry_run=request.dry_run, key_field=request.key_field)
    quota = request.max_messages
    with HeldMessages(sqs, dlq_url, visibility_timeout=request.visibility_timeout,
                      wait_seconds=request.wait_seconds) as held:
        foreign: list[UnrecognizedMessage] = []
        records: list[FailureRecord] = []
        while batch := held.receive(request.batch_size):
            for message in batch:
                parsed = parse(message, request.key_field)
                if isinstance(parsed, UnrecognizedMessage):
                    foreign.append(parsed)
                else:
                    records.append(parsed)
        report.read = held.read
        items: list[FailureRecord | UnrecognizedMessage] = [*foreign, *one_per_execution(records)]
        for item in items:
            if quota is not None and quota <= 0:
                break  # the rest stays held, then released: untouched
            outcomes = _handle(sqs, held, item, source_url, request)
            report.outcomes.extend(outcomes)
            for outcome in outcomes:
                if progress is not None:
                    progress(outcome)
            if quota is not None and outcomes and outcomes[0].action in SENT_BACK:
                quota -= 1
    return report


def _handle(sqs: SQSClient, held: HeldMessages, parsed: FailureRecord | UnrecognizedMessage, source_url: str,
            request: RedriveRequest) -> list[Outcome]:
    if isinstance(parsed, UnrecognizedMessage):
        # Only reported when everything was asked for: a filter cannot say whether a foreign message matches.
        if not request.selection.is_everything:
            return []
        return [Outcome(parsed.message_id, None, None, Action.UNRECOGNIZED, reason=parsed.reason)]
    if not request.selection.matches(parsed) or (request.choose is not None and not request.choose(parsed)):
        return []
    if parsed.manual_repair and not request.force:
        return [_outcome(parsed, Action.REFUSED_MANUAL_REPAIR,
                         reason="a compensation failed: repair the work by hand, then redrive with --force")]
    if request.dry_run:
        more = f"with {len(parsed.copies)} more record(s) of its execution" if parsed.copies else None
        return [_outcome(parsed, Action.WOULD_REDRIVE, reason=more)]
    if request.pace is not None:
        request.pace()
    sent = _send_then_delete(sqs, held, parsed, source_url, request)
    if sent.action not in (Action.REDRIVEN, Action.SENT_NOT_DELETED):
        return [sent]
    if request.sent is not None and sent.new_message_id is not None:
        request.sent(parsed, sent.new_message_id)
    return [sent, *(_delete_copy(sqs, held, parsed, copy, sent.new_message_id) for copy in parsed.copies)]


def _delete_copy(sqs: SQSClient, held: HeldMessages, record: FailureRecord, copy: str,
                 new_id: str | None) -> Outcome:
    """Another record of the execution just sent back: deleted now, never before that send took effect."""
    try:
        sqs.delete_message(QueueUrl=held.queue_url, ReceiptHandle=held.receipt(copy))
    except ClientError as error:
        return Outcome(copy, record.key, record.error, Action.SENT_NOT_DELETED, new_id,
                       reason=f"a second record of {record.execution_arn}: {error_code(error)}: {error}")
    held.forget(copy)
    return Outcome(copy, record.key, record.error, Action.COPY_DELETED, new_id,
                   reason=f"a second record of {record.execution_arn}, sent back as {record.message_id}")


def _send_then_delete(sqs: SQSClient, held: HeldMessages, record: FailureRecord, source_url: str,
                      request: RedriveRequest) -> Outcome:
    try:
        attributes = record.send_attributes()
    except UnsendableAttribute as error:
        # Sending it without the attribute would change the message; SQS refuses it with an empty one.
        return _outcome(record, Action.SEND_FAILED, reason=f"UnsendableAttribute: {error}")
    if request.extra_attributes is not None:
        attributes = {**attributes, **request.extra_attributes(record)}
        if len(attributes) > MAX_MESSAGE_ATTRIBUTES:
            return _outcome(record, Action.SEND_FAILED,
                            reason=f"the message already has {len(record.message_attributes)} attributes: no room "
                                   f"for the redrive's own (SQS allows {MAX_MESSAGE_ATTRIBUTES})")
    try:
        if attributes:
            sent = sqs.send_message(QueueUrl=source_url, MessageBody=record.body, MessageAttributes=attributes)
        else:
            sent = sqs.send_message(QueueUrl=source_url, MessageBody=record.body)
    except ClientError as error:
        if error_code(error) in THROTTLING_CODES | ACCESS_CODES:
            raise  # every other message would fail the same way: stop; everything unsent stays in the DLQ
        return _outcome(record, Action.SEND_FAILED, reason=f"{error_code(error)}: {error}")
    new_id = sent["MessageId"]
    try:
        sqs.delete_message(QueueUrl=held.queue_url, ReceiptHandle=held.receipt(record.message_id))
    except ClientError as error:
        return _outcome(record, Action.SENT_NOT_DELETED, new_id, reason=f"{error_code(error)}: {error}")
    held.forget(record.message_id)
    return _outcome(record, Action.REDRIVEN, new_id)


def _outcome(record: FailureRecord, action: Action, new_message_id: str | None = None,
             reason: str | None = None) -> Outcome:
    return Outcome(record.message_id, record.key, record.error, action, new_message_id, reason)
