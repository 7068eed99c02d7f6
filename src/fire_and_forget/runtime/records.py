"""The failure DLQ's messages: HandleFailure's failure records, parsed, and how an operator selects them."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mypy_boto3_sqs.type_defs import MessageAttributeValueTypeDef, MessageTypeDef

# The `kind` HandleFailure writes (fire_and_forget/construct/asl/failure_tail.asl.json); anything else is not ours.
RECORD_KIND = "fire-and-forget.failure.v1"
PREVIEW_CHARS = 200
# The key field of a stack deployed before the MessageKeyField output existed (this repository's first example);
# deprecated with --key's alias (CHANGELOG.md).
DEFAULT_KEY_FIELD = "orderId"


@dataclass(frozen=True)
class FailureRecord:
    """One failed message as HandleFailure recorded it, with the DLQ message that carries it."""

    message_id: str  # of the DLQ message
    receipt_handle: str
    source_message_id: str | None  # of the original message on the source queue
    key: str | None  # the body's key field (the stack's MessageKeyField); None when the body has none
    error: str
    cause: str | None
    failed_state: str
    failed_at: datetime | None
    manual_repair: bool
    compensation: Any
    execution_arn: str | None
    state_machine_arn: str | None
    body: str  # the original message body, unchanged
    message_attributes: dict[str, Any]  # the original message attributes, as the pipe's record holds them
    record: dict[str, Any]  # the whole SQS record the execution started with
    # What the execution ended as: FAILED for the failure tail's records; the reconciler's records say TIMED_OUT,
    # ABORTED or FAILED, and `reconciliation` holds how it was reconciled (None for the tail's own records).
    status: str = "FAILED"
    reconciliation: dict[str, Any] | None = None
    # The DLQ message ids of the other records of the same execution this one stands for (one_per_execution).
    copies: tuple[str, ...] = ()

    @property
    def message_ids(self) -> tuple[str, ...]:
        """This record's DLQ message id, then its copies'."""
        return (self.message_id, *self.copies)

    def send_attributes(self) -> dict[str, MessageAttributeValueTypeDef]:
        """The original message attributes in SendMessage's shape (the record holds them in the event shape);
        raises UnsendableAttribute for one SendMessage would refuse."""
        return {name: _send_attribute(name, value) for name, value in self.message_attributes.items()
                if isinstance(value, dict)}


@dataclass(frozen=True)
class UnrecognizedMessage:
    """A DLQ message that is not a failure record: shown, never redriven, never deleted."""

    message_id: str
    receipt_handle: str
    reason: str
    body_preview: str


def parse(message: MessageTypeDef, key_field: str = DEFAULT_KEY_FIELD) -> FailureRecord | UnrecognizedMessage:
    """Parse one received DLQ message, its key read from the original body's `key_field`; anything unexpected
    becomes an UnrecognizedMessage with the reason."""
    message_id, receipt, body = message["MessageId"], message["ReceiptHandle"], message.get("Body", "")
    try:
        document = json.loads(body)
    except ValueError:
        return UnrecognizedMessage(message_id, receipt, "the body is not JSON", body[:PREVIEW_CHARS])
    problem = _problem(document)
    if problem is not None:
        return UnrecognizedMessage(message_id, receipt, problem, body[:PREVIEW_CHARS])
    record, failure = document["record"], document["failure"]
    reconciliation = document.get("reconciliation") if isinstance(document.get("reconciliation"), dict) else None
    return FailureRecord(
        message_id=message_id,
        receipt_handle=receipt,
        source_message_id=_str(record.get("messageId")),
        key=message_key(record["body"], key_field),
        error=failure["error"],
        cause=_str(failure.get("cause")),
        failed_state=failure["state"],
        failed_at=parse_time(document.get("failedAt")),
        manual_repair=document.get("manualRepair") is True,
        compensation=document.get("compensation"),
        execution_arn=_str(document.get("executionArn")),
        state_machine_arn=_str(document.get("stateMachineArn")),
        body=record["body"],
        message_attributes=record.get("messageAttributes") or {},
        record=record,
        status=_str((reconciliation or {}).get("status")) or "FAILED",
        reconciliation=reconciliation,
    )


def one_per_execution(records: Iterable[FailureRecord]) -> list[FailureRecord]:
    """The records of one execution (same executionArn) as one, ranked by where their first was met.

    SQS standard queues do not deduplicate, and two windows write a second record for one execution: the Reconciler
    crashing between its SendMessage and marking the row RECORDED, and an execution aborted while HandleFailure's
    SendMessage was in flight (docs/design.md, "Two records for one execution"). The one kept is the Reconciler's
    when there is one (it knows how the execution ended), else the lowest DLQ message id, so that every reader
    and every run picks the same; the others are its `copies`. A record without an executionArn stands alone.
    """
    groups: dict[str, list[FailureRecord]] = {}
    for record in records:
        groups.setdefault(record.execution_arn or f"message:{record.message_id}", []).append(record)
    kept = []
    for members in groups.values():
        one = min(members, key=lambda r: (r.reconciliation is None, r.message_id))
        copies = tuple(sorted(m.message_id for m in members if m is not one))
        kept.append(replace(one, copies=copies) if copies else one)
    return kept


def _problem(document: Any) -> str | None:
    if not isinstance(document, dict):
        return "the body is not a JSON object"
    if document.get("kind") != RECORD_KIND:
        return f"kind is {document.get('kind')!r}, not {RECORD_KIND!r}"
    record, failure = document.get("record"), document.get("failure")
    if not isinstance(record, dict) or not isinstance(record.get("body"), str):
        return "record.body (the original message) is missing"
    if not isinstance(failure, dict) or not isinstance(failure.get("error"), str) \
            or not isinstance(failure.get("state"), str):
        return "failure.error or failure.state is missing"
    attributes = record.get("messageAttributes")
    if attributes is not None and not isinstance(attributes, dict):
        return "record.messageAttributes is not an object"
    return None


def message_key(body: str | None, key_field: str) -> str | None:
    """The value of the body's top-level `key_field`: a string, or an integer as its decimal text; else None."""
    try:
        document = json.loads(body or "null")
    except (TypeError, ValueError):
        return None
    value = document.get(key_field) if isinstance(document, dict) else None
    if isinstance(value, bool):  # a bool is an int to Python, never a key to anyone
        return None
    return value if isinstance(value, str) else str(value) if isinstance(value, int) else None


def input_keys(text: str | None, key_field: str) -> tuple[str | None, str | None]:
    """(messageId, key) of the SQS record an execution started from: its input is the pipe's batch, a JSON array of
    one record (or the record itself); None where the input is not what the pipe sends."""
    try:
        document = json.loads(text or "null")
    except ValueError:
        return None, None
    record = document[0] if isinstance(document, list) and document else document
    if not isinstance(record, dict):
        return None, None
    body = record.get("body")
    return _str(record.get("messageId")), message_key(body if isinstance(body, str) else None, key_field)


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def pipe_attribute(value: Mapping[str, Any]) -> dict[str, Any]:
    """A message attribute as ReceiveMessage answers it ({DataType, StringValue | BinaryValue (bytes)}) in the shape
    Pipes and Lambda deliver it ({stringValue | binaryValue (base64), stringListValues, binaryListValues, dataType}:
    https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-pipes-sqs.html)."""
    attribute: dict[str, Any] = {"stringListValues": [], "binaryListValues": [], "dataType": value.get("DataType")}
    if "BinaryValue" in value:
        attribute["binaryValue"] = base64.b64encode(value["BinaryValue"]).decode("ascii")
    else:
        attribute["stringValue"] = value.get("StringValue")
    return attribute


def pipe_record(message: Mapping[str, Any]) -> dict[str, Any]:
    """The parts of a received message the healing policy reads, in the pipe's record shape: `messageId`, `body`,
    `messageAttributes`."""
    return {"messageId": message.get("MessageId"), "body": message.get("Body"),
            "messageAttributes": {name: pipe_attribute(value)
                                  for name, value in (message.get("MessageAttributes") or {}).items()}}


class UnsendableAttribute(ValueError):
    """A recorded message attribute SendMessage would refuse: it has no value of its data type."""


def _send_attribute(name: str, value: dict[str, Any]) -> MessageAttributeValueTypeDef:
    """Pipes and Lambda deliver {stringValue, binaryValue (base64), dataType}; SendMessage wants
    {StringValue, BinaryValue (bytes), DataType}, never empty: "The Name, Type, Value, and the message body must
    not be empty or null" (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-message-metadata.html).
    An attribute without its value raises UnsendableAttribute rather than being sent empty."""
    data_type = str(value.get("dataType") or value.get("DataType") or "String")
    if data_type.startswith("Binary"):
        binary = value.get("binaryValue") or value.get("BinaryValue")
        raw = (base64.b64decode(binary) if isinstance(binary, str) else bytes(binary)) if binary else b""
        if not raw:
            raise UnsendableAttribute(f"message attribute {name!r} ({data_type}) has no binaryValue")
        return {"DataType": data_type, "BinaryValue": raw}
    text = value.get("stringValue") if value.get("stringValue") is not None else value.get("StringValue")
    if not isinstance(text, str) or not text:
        raise UnsendableAttribute(f"message attribute {name!r} ({data_type}) has no stringValue")
    return {"DataType": data_type, "StringValue": text}


def parse_time(value: Any) -> datetime | None:
    """An ISO 8601 time (Step Functions writes `2026-11-29T16:43:55.123Z`), as an aware datetime; one without an
    offset is UTC."""
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value)  # reads a "Z" suffix as UTC (Python 3.11 and later)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


@dataclass(frozen=True)
class Selection:
    """Which failure records a command acts on: every given criterion must match (each list is an OR)."""

    keys: frozenset[str] = frozenset()  # values of the stack's key field (MessageKeyField)
    errors: frozenset[str] = frozenset()
    since: datetime | None = None
    until: datetime | None = None
    states: frozenset[str] = frozenset()  # the state each record failed in

    @property
    def is_everything(self) -> bool:
        return not (self.keys or self.errors or self.since or self.until or self.states)

    def matches(self, record: FailureRecord) -> bool:
        if self.keys and record.key not in self.keys:
            return False
        if self.errors and record.error not in self.errors:
            return False
        if self.states and record.failed_state not in self.states:
            return False
        if self.since and (record.failed_at is None or record.failed_at < self.since):
            return False
        return not (self.until and (record.failed_at is None or record.failed_at > self.until))
