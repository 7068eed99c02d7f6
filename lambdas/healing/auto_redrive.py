"""The automatic redrive: failure records of transient failures go back to the source queue once they are due.

Each run reads the whole failure DLQ (ops/dlq.py holds what it read and makes it visible again), classifies every
record by the healing policy, and sends back the ones waiting for a retry whose cool-off has passed, through the
same send-then-delete as `ff-ops failures redrive` (ops/redrive.py), adding the attempt count and the first
messageId. Nothing else is touched: business errors, manual repairs, aborted executions and records whose automatic
attempts are spent stay for a person (the failure tail or the reconciler announced those when it recorded them).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from ops.healing_policy import (
    ATTEMPT_ATTRIBUTE,
    FIRST_MESSAGE_ATTRIBUTE,
    Disposition,
    HealingPolicy,
    attempt_of,
    first_message_id,
)
from ops.records import FailureRecord, Selection
from ops.redrive import Action, RedriveReport, RedriveRequest, redrive_failures

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import MessageAttributeValueTypeDef


@dataclass
class AutoRedriveReport:
    """What one run found in the failure DLQ, by disposition, and what it sent back."""

    dispositions: Counter[Disposition] = field(default_factory=Counter)
    due: int = 0
    redrive: RedriveReport | None = None

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


def redrive_due(sqs: SQSClient, *, dlq_url: str, source_url: str, policy: HealingPolicy, now: datetime,
                key_field: str) -> AutoRedriveReport:
    report = AutoRedriveReport()

    def choose(record: FailureRecord) -> bool:
        found = policy.classify(record)
        report.dispositions[found.disposition] += 1
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
                             extra_attributes=extra_attributes, wait_seconds=0)
    report.redrive = redrive_failures(sqs, dlq_url, source_url, request)
    return report
