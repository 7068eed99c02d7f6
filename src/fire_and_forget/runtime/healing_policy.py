"""Which failure records heal by themselves, and when: the one rule the automatic redrive, the reconciler, the
workflow's failure tail (its announce-or-wait Choice, generated from the same inputs) and ff-ops all apply.

A failure is *transient by class* when the state that failed retries its error name (the workflow's own Retry
lists them: the construct reads them from the definition), or when the failure tail itself could not finish (the
failure DLQ or the alerts topic refusing), or when a task or the execution timed out (a missed heartbeat included).
Such a record goes back to the source queue by itself after a cool-off, at most `max_attempts` times. Never: a
business error (any error the failed state does not retry), a record flagged for manual repair (a compensation
failed), an aborted execution (a person stopped it on purpose). A transient record the redrive cannot send back (its
message would break an SQS limit once the redrive adds its two attributes) needs a person at once: `classify` reads
that from the record itself.

Imports nothing but the standard library and the runtime's own modules.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, Protocol

from fire_and_forget.runtime.tail import TAIL_TASK_STATES

# The message attributes an automatic redrive adds to the message it sends back (SQS allows 10 per message).
ATTEMPT_ATTRIBUTE = "ffRedriveAttempt"  # automatic redrives so far, "1" after the first
FIRST_MESSAGE_ATTRIBUTE = "ffFirstMessageId"  # the messageId the caller's message had before any redrive
HEALING_ATTRIBUTES = (ATTEMPT_ATTRIBUTE, FIRST_MESSAGE_ATTRIBUTE)
# SQS: "Each message can have up to 10 attributes", and "All components of a message attribute are included in the
# 1 MiB message size restriction" (sqs-message-metadata.html; quotas-messages.html: "up to 10 metadata attributes").
MAX_MESSAGE_ATTRIBUTES = 10
SQS_MAX_MESSAGE_BYTES = 1_048_576  # any queue's largest MaximumMessageSize
TIMEOUT_ERROR = "States.Timeout"
# A Task that went without a heartbeat for HeartbeatSeconds. Step Functions' error names list both for it
# (concepts-error-handling.html: States.Timeout "ran longer than the TimeoutSeconds value, or failed to send a
# heartbeat for a period longer than the HeartbeatSeconds value"; States.HeartbeatTimeout, the narrower name), and
# moto reports States.Timeout: whichever a task fails with, the policy reads it as a timeout.
HEARTBEAT_TIMEOUT_ERROR = "States.HeartbeatTimeout"
TIMEOUT_ERRORS = (TIMEOUT_ERROR, HEARTBEAT_TIMEOUT_ERROR)
# The alert subject `[<env>] <title> <verb> in <state>`, bounded at synth (the construct) and at run time (the
# Reconciler). SNS: "Subjects must be ASCII text ... and must be less than 100 characters long" (API_Publish).
MAX_SUBJECT = 99
VERBS = {"FAILED": "failed", "TIMED_OUT": "timed out", "ABORTED": "aborted"}
LONGEST_VERB = max(VERBS.values(), key=len)
SOURCE_RETURN_VARIABLE = "HEALING_SOURCE_RETURN_PER_SECOND"  # HealingPolicy.source_return_per_second's variable


class Disposition(StrEnum):
    """What a failure record waits for."""

    RETRY = "waiting-for-retry"  # transient, automatic attempts left: the redriver sends it back when it is due
    EXHAUSTED = "retries-exhausted"  # transient, but the automatic attempts are spent: a person looks at it
    MANUAL_REPAIR = "manual-repair"  # a compensation failed: repair the work by hand first
    NEEDS_DECISION = "needs-decision"  # a business error or an abort: fix the data or discard, a person decides
    # transient, but the redrive cannot send its message back (SQS's attribute count or size): a person resends it
    UNSENDABLE = "cannot-redrive"

    @property
    def needs_a_person(self) -> bool:
        return self is not Disposition.RETRY


class FailedRecord(Protocol):
    """What the policy reads of a failure-DLQ record (fire_and_forget/runtime/records.py's FailureRecord)."""

    @property
    def message_id(self) -> str: ...
    @property
    def failed_state(self) -> str: ...
    @property
    def error(self) -> str: ...
    @property
    def manual_repair(self) -> bool: ...
    @property
    def status(self) -> str: ...
    @property
    def failed_at(self) -> datetime | None: ...
    @property
    def record(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class Classification:
    """A record's disposition, its automatic redrives so far, and, when it waits for a retry, when the Redriver
    sends it back (None: it has no failure time, so at the Redriver's next run); `reason` says why a record the
    redrive cannot resend is UNSENDABLE."""

    disposition: Disposition
    attempt: int
    due_at: datetime | None
    reason: str | None = None

    def due(self, now: datetime) -> bool:
        return self.disposition is Disposition.RETRY and (self.due_at is None or self.due_at <= now)

    def overdue(self, now: datetime, grace: timedelta) -> bool:
        """Waiting for a retry although it was due more than `grace` (one Redriver period) before `now`."""
        return self.disposition is Disposition.RETRY and self.due_at is not None and self.due_at + grace <= now


@dataclass(frozen=True)
class HealingPolicy:
    """`transient_errors` maps each task state to the error names its Retry retries (States.ALL excluded);
    `max_message_bytes` is the source queue's MaximumMessageSize, which a resent message must fit."""

    transient_errors: Mapping[str, frozenset[str]]
    max_attempts: int = 3
    cool_off_seconds: int = 300
    max_cool_off_seconds: int = 3600
    max_message_bytes: int = SQS_MAX_MESSAGE_BYTES
    # The Redriver sends the source DLQ's messages back at this many a second (0: it leaves them for a person):
    # fire_and_forget.healing.source_return.
    source_return_per_second: float = 0.0

    @property
    def returns_source_dlq(self) -> bool:
        return self.source_return_per_second > 0 and self.max_attempts > 0

    def is_transient(self, *, state: str | None, error: str | None, status: str = "FAILED") -> bool:
        if status == "ABORTED":
            return False
        if status == "TIMED_OUT" or error in TIMEOUT_ERRORS or state in TAIL_TASK_STATES:
            return True
        return error is not None and state is not None and error in self.transient_errors.get(state, frozenset())

    def disposition(self, *, state: str | None, error: str | None, manual_repair: bool, attempt: int,
                    status: str = "FAILED") -> Disposition:
        if manual_repair:
            return Disposition.MANUAL_REPAIR
        if not self.is_transient(state=state, error=error, status=status):
            return Disposition.NEEDS_DECISION
        return Disposition.RETRY if attempt < self.max_attempts else Disposition.EXHAUSTED

    def cool_off(self, message_id: str, attempt: int) -> timedelta:
        """Exponential backoff with "equal jitter": half the capped backoff, plus up to the other half.

        The jitter is drawn from the message's id and attempt, so every run of the redriver computes the same due
        time for the same record (a random draw per run would make the wait a lottery over the runs).
        """
        capped = min(self.max_cool_off_seconds, self.cool_off_seconds * 2 ** attempt)
        digest = hashlib.sha256(f"{message_id}:{attempt}".encode()).digest()
        fraction = int.from_bytes(digest[:8], "big") / 2 ** 64
        return timedelta(seconds=capped / 2 + fraction * capped / 2)

    def due_at(self, failed_at: datetime, message_id: str, attempt: int) -> datetime:
        return failed_at + self.cool_off(message_id, attempt)

    def classify(self, failed: FailedRecord) -> Classification:
        """What a failure-DLQ record waits for and, waiting for a retry, when it is due: the one reading the Redriver
        acts on and ff-ops shows (the jitter is drawn from the caller's first messageId, so copies agree)."""
        attempt = attempt_of(failed.record)
        disposition = self.disposition(state=failed.failed_state, error=failed.error,
                                       manual_repair=failed.manual_repair, attempt=attempt, status=failed.status)
        if disposition is Disposition.RETRY:
            problem = self.resend_problem(failed.record, attempt)
            if problem is not None:
                return Classification(Disposition.UNSENDABLE, attempt, None, problem)
        due = None
        if disposition is Disposition.RETRY and failed.failed_at is not None:
            due = self.due_at(failed.failed_at, first_message_id(failed.record) or failed.message_id, attempt)
        return Classification(disposition, attempt, due)

    def resend_problem(self, record: Mapping[str, Any], attempt: int) -> str | None:
        """Why SQS would refuse the message the redrive sends back for `record` (the pipe's SQS record: its body and
        attributes plus the redrive's two), or None when it fits: at most 10 attributes, and body plus every
        attribute's name, data type and value within the source queue's MaximumMessageSize."""
        attributes = record.get("messageAttributes")
        original = attributes if isinstance(attributes, dict) else {}
        first = first_message_id(record) or ""
        resent: dict[str, tuple[str, bytes]] = {
            name: (str(value.get("dataType") or ""), _value_bytes(value))
            for name, value in original.items() if isinstance(value, dict)}
        resent[ATTEMPT_ATTRIBUTE] = ("Number", str(attempt + 1).encode())
        resent[FIRST_MESSAGE_ATTRIBUTE] = ("String", first.encode())
        if len(resent) > MAX_MESSAGE_ATTRIBUTES:
            return (f"the message has {len(original)} message attributes; with the redrive's {ATTEMPT_ATTRIBUTE} and "
                    f"{FIRST_MESSAGE_ATTRIBUTE} it would have {len(resent)}, and SQS allows {MAX_MESSAGE_ATTRIBUTES}")
        body = record.get("body")
        size = len(body.encode()) if isinstance(body, str) else 0
        size += sum(len(name.encode()) + len(kind.encode()) + len(value) for name, (kind, value) in resent.items())
        if size > self.max_message_bytes:
            return (f"resent with the redrive's attributes it would be {size} bytes (body and every attribute's name, "
                    f"type and value), over the source queue's maximum of {self.max_message_bytes}")
        return None

    def to_environment(self) -> dict[str, str]:
        return {
            "HEALING_TRANSIENT_ERRORS": json.dumps({state: sorted(names)
                                                    for state, names in sorted(self.transient_errors.items())},
                                                   separators=(",", ":")),
            "HEALING_MAX_ATTEMPTS": str(self.max_attempts),
            "HEALING_COOL_OFF_SECONDS": str(self.cool_off_seconds),
            "HEALING_MAX_COOL_OFF_SECONDS": str(self.max_cool_off_seconds),
            "HEALING_MAX_MESSAGE_BYTES": str(self.max_message_bytes),
            SOURCE_RETURN_VARIABLE: f"{self.source_return_per_second:g}",
        }

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> HealingPolicy:
        env = os.environ if environ is None else environ
        errors = json.loads(env["HEALING_TRANSIENT_ERRORS"])
        return cls(
            transient_errors={state: frozenset(names) for state, names in errors.items()},
            max_attempts=int(env["HEALING_MAX_ATTEMPTS"]),
            cool_off_seconds=int(env["HEALING_COOL_OFF_SECONDS"]),
            max_cool_off_seconds=int(env["HEALING_MAX_COOL_OFF_SECONDS"]),
            # A stack deployed before the size check published no maximum: SQS's own bounds every queue.
            max_message_bytes=int(env.get("HEALING_MAX_MESSAGE_BYTES", SQS_MAX_MESSAGE_BYTES)),
            # A stack deployed before the source DLQ's return published no rate: its Redriver does not return.
            source_return_per_second=float(env.get(SOURCE_RETURN_VARIABLE, "0")),
        )


def attempt_of(record: Any) -> int:
    """Automatic redrives the message has had, from the SQS record the failure record keeps (0 when none)."""
    value = _attribute(record, ATTEMPT_ATTRIBUTE)
    try:
        return max(0, int(value)) if value is not None else 0
    except ValueError:
        return 0


def first_message_id(record: Any) -> str | None:
    """The caller's original messageId: carried by redriven copies, else the record's own."""
    value = _attribute(record, FIRST_MESSAGE_ATTRIBUTE)
    if value:
        return value
    own = record.get("messageId") if isinstance(record, dict) else None
    return own if isinstance(own, str) else None


def _value_bytes(value: Mapping[str, Any]) -> bytes:
    """An attribute's value as SQS counts it, from the pipe's shape: a Binary's decoded bytes, a string's UTF-8."""
    if str(value.get("dataType") or "").startswith("Binary"):
        binary = value.get("binaryValue")
        try:
            return base64.b64decode(binary) if isinstance(binary, str) else b""
        except ValueError:
            return str(binary).encode()  # not base64: count what is there
    text = value.get("stringValue")
    return text.encode() if isinstance(text, str) else b""


def _attribute(record: Any, name: str) -> str | None:
    """A String/Number message attribute of an SQS record in the pipe's shape (`messageAttributes.<n>.stringValue`)."""
    attributes = record.get("messageAttributes") if isinstance(record, dict) else None
    value = attributes.get(name) if isinstance(attributes, dict) else None
    text = value.get("stringValue") if isinstance(value, dict) else None
    return text if isinstance(text, str) else None
