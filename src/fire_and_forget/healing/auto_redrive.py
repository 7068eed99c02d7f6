"""The automatic redrive: failure records of transient failures go back to the source queue once they are due.

Each run reads the whole failure DLQ (fire_and_forget/runtime/dlq.py holds what it read and makes it visible again),
classifies every record by the healing policy, and sends back the ones waiting for a retry whose cool-off has passed,
through the same send-then-delete as `ff-ops failures redrive` (fire_and_forget/runtime/redrive.py), adding the attempt
count and the first messageId. Nothing else is touched: business errors, manual repairs, aborted executions and records
whose automatic attempts are spent stay for a person (the failure tail or the reconciler announced those when it
recorded them), and so do records the redrive cannot resend (`cannot-redrive`: nobody announced those, so the Redriver
does, fire_and_forget/healing/announcements.py). The records of one execution count, and are sent back, as one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from fire_and_forget.runtime.healing_policy import (
    ATTEMPT_ATTRIBUTE,
    FIRST_MESSAGE_ATTRIBUTE,
    Classification,
    Disposition,
    HealingPolicy,
    attempt_of,
    first_message_id,
)
from fire_and_forget.runtime.records import FailureRecord, Selection
from fire_and_forget.runtime.redrive import Action, RedriveReport, RedriveRequest, redrive_failures

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import MessageAttributeValueTypeDef


@dataclass
class AutoRedriveReport:
    """What one run found in the failure DLQ, by disposition, and what it sent back."""

    dispositions: Counter[Disposition] = field(default_factory=Counter)
    due: int = 0
    redrive: RedriveReport | None = None
    # Waiting for a retry although due more than one Redriver period ago (before this run tried them).
    late: list[str] = field(default_factory=list)
    # What the redrive cannot resend, with why: announced by the Redriver (announcements.py).
    unsendable: list[tuple[FailureRecord, Classification]] = field(default_factory=list)

    @property
    def redriven(self) -> int:
        return self.redrive.count(Action.REDRIVEN) if self.redrive is not None else 0

    @property
    def waiting(self) -> int:
        """Waiting for an automatic retry after this run (not due yet, or due but not sent)."""
        return self.dispositions[Disposition.RETRY] - self.redriven

    @property
    def needing_a_person(self) -> int:
        return sum(count for disposition, count in self.dispositions.items() if disposition.needs_a_person)

    @property
    def overdue(self) -> int:
        """Waiting past their due time plus one Redriver period, and still in the failure DLQ after this run."""
        sent = {o.message_id for o in self.redrive.outcomes if o.action is Action.REDRIVEN} if self.redrive else set()
        return sum(1 for message_id in self.late if message_id not in sent)


def redrive_due(sqs: SQSClient, *, dlq_url: str, source_url: str, policy: HealingPolicy, now: datetime,
                key_field: str, period: timedelta = timedelta(0),
                sent: Callable[[FailureRecord, str], None] | None = None) -> AutoRedriveReport:
    """Send back what is due; `period` is the Redriver's schedule rate, past which a waiting record is overdue;
    `sent` is told of each message sent back (the status link: fire_and_forget.runtime.status.redrive_links)."""
    report = AutoRedriveReport()

    def choose(record: FailureRecord) -> bool:
        found = policy.classify(record)
        report.dispositions[found.disposition] += 1
        if found.overdue(now, period):
            report.late.append(record.message_id)
        if found.disposition is Disposition.UNSENDABLE:
            report.unsendable.append((record, found))
        due = found.due(now)
        report.due += int(due)
        return due

    def extra_attributes(record: FailureRecord) -> dict[str, MessageAttributeValueTypeDef]:
        first = first_message_id(record.record) or record.message_id
        return {
            ATTEMPT_ATTRIBUTE: {"DataType": "Number", "StringValue": str(attempt_of(record.record) + 1)},
            FIRST_MESSAGE_ATTRIBUTE: {"DataType": "String", "StringValue": first},
        }

    request = RedriveRequest(selection=Selection(), key_field=key_field, choose=choose,
                             extra_attributes=extra_attributes, wait_seconds=0, sent=sent)
    report.redrive = redrive_failures(sqs, dlq_url, source_url, request)
    return report
