"""Which failure records heal by themselves, and when: the one rule the automatic redrive, the reconciler, the
workflow's failure tail (its announce-or-wait Choice, generated from the same inputs) and ff-ops all apply.

A failure is *transient by class* when the state that failed retries its error name (the workflow's own Retry
lists them: the construct reads them from the definition), or when the failure tail itself could not finish (the
failure DLQ or the alerts topic refusing), or when the execution timed out. Such a record goes back to the source
queue by itself after a cool-off, at most `max_attempts` times. Never: a business error (any error the failed
state does not retry), a record flagged for manual repair (a compensation failed), an aborted execution (a person
stopped it on purpose).

Imports nothing but the standard library: ff-ops imports it as `ops.healing_policy`, the
functions as `ops.healing_policy`.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, Protocol

# The message attributes an automatic redrive adds to the message it sends back (SQS allows 10 per message).
ATTEMPT_ATTRIBUTE = "ffRedriveAttempt"  # automatic redrives so far, "1" after the first
FIRST_MESSAGE_ATTRIBUTE = "ffFirstMessageId"  # the messageId the caller's message had before any redrive
HEALING_ATTRIBUTES = (ATTEMPT_ATTRIBUTE, FIRST_MESSAGE_ATTRIBUTE)
# The failure tail's task states: a failure there is the DLQ, the topic or the deliveries table refusing.
TAIL_TASK_STATES = frozenset({"ClaimFailure", "HandleFailure", "NotifyFailure"})
TIMEOUT_ERROR = "States.Timeout"
# The alert subject `[<env>] <title> <verb> in <state>`, bounded at synth (the construct) and at run time (the
# Reconciler). SNS: "Subjects must be ASCII text ... and must be less than 100 characters long" (API_Publish).
MAX_SUBJECT = 99
VERBS = {"FAILED": "failed", "TIMED_OUT": "timed out", "ABORTED": "aborted"}
LONGEST_VERB = max(VERBS.values(), key=len)


class Disposition(StrEnum):
    """What a failure record waits for."""

    RETRY = "waiting-for-retry"  # transient, automatic attempts left: the redriver sends it back when it is due
    EXHAUSTED = "retries-exhausted"  # transient, but the automatic attempts are spent: a person looks at it
    MANUAL_REPAIR = "manual-repair"  # a compensation failed: repair the work by hand first
    NEEDS_DECISION = "needs-decision"  # a business error or an abort: fix the data or discard, a person decides

    @property
    def needs_a_person(self) -> bool:
        return self is not Disposition.RETRY


class FailedRecord(Protocol):
    """What the policy reads of a failure-DLQ record (ops/records.py's FailureRecord)."""

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
    sends it back (None: it has no failure time, so at the Redriver's next run)."""

    disposition: Disposition
    attempt: int
    due_at: datetime | None

    def due(self, now: datetime) -> bool:
        return self.disposition is Disposition.RETRY and (self.due_at is None or self.due_at <= now)


@dataclass(frozen=True)
class HealingPolicy:
    """`transient_errors` maps each task state to the error names its Retry retries (States.ALL excluded)."""

    transient_errors: Mapping[str, frozenset[str]]
    max_attempts: int = 3
    cool_off_seconds: int = 300
    max_cool_off_seconds: int = 3600

    def is_transient(self, *, state: str | None, error: str | None, status: str = "FAILED") -> bool:
        if status == "ABORTED":
            return False
        if status == "TIMED_OUT" or error == TIMEOUT_ERROR or state in TAIL_TASK_STATES:
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
        due = None
        if disposition is Disposition.RETRY and failed.failed_at is not None:
            due = self.due_at(failed.failed_at, first_message_id(failed.record) or failed.message_id, attempt)
        return Classification(disposition, attempt, due)

    def to_environment(self) -> dict[str, str]:
        return {
            "HEALING_TRANSIENT_ERRORS": json.dumps({state: sorted(names)
                                                    for state, names in sorted(self.transient_errors.items())},
                                                   separators=(",", ":")),
            "HEALING_MAX_ATTEMPTS": str(self.max_attempts),
            "HEALING_COOL_OFF_SECONDS": str(self.cool_off_seconds),
            "HEALING_MAX_COOL_OFF_SECONDS": str(self.max_cool_off_seconds),
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


def _attribute(record: Any, name: str) -> str | None:
    """A String/Number message attribute of an SQS record in the pipe's shape (`messageAttributes.<n>.stringValue`)."""
    attributes = record.get("messageAttributes") if isinstance(record, dict) else None
    value = attributes.get(name) if isinstance(attributes, dict) else None
    text = value.get("stringValue") if isinstance(value, dict) else None
    return text if isinstance(text, str) else None
