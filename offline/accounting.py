"""Where every message ended up, and how often its failure was announced: the pipeline's conservation law."""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from offline.rehearsal import Execution, Rehearsal
from stacks.contract import DUPLICATE_ENDS, HANDLED_FAILURE_ERROR

_EXECUTION_ARN = re.compile(r"arn:aws:states:[^:\s]+:\d+:execution:[^:\s]+:[A-Za-z0-9_-]+")
HANDLED_FAILURE = HANDLED_FAILURE_ERROR


class Place(StrEnum):
    """The durable places a message can end in."""

    SUCCEEDED = "succeeded"
    FAILURE_DLQ = "failure DLQ"
    SOURCE_DLQ = "source DLQ"
    EXECUTION = "failed execution (input kept)"
    # Another attempt of the same order (a resend or a redrive copy under its own messageId) owns the order: this
    # message ended quietly as DuplicateOrder, and its outcome is the owner's (docs/handlers.md, ownership).
    ABSORBED = "absorbed by its order's owning attempt"
    NOWHERE = "nowhere"


@dataclass
class MessageFate:
    message_id: str
    places: list[Place] = field(default_factory=list)
    announcements: int = 0
    manual_repair: bool = False
    error: str | None = None

    @property
    def place(self) -> Place:
        return self.places[0] if len(self.places) == 1 else Place.NOWHERE


@dataclass
class Ledger:
    fates: dict[str, MessageFate]

    @property
    def lost(self) -> list[str]:
        return [m for m, fate in self.fates.items() if not fate.places]

    @property
    def in_two_places(self) -> list[str]:
        return [m for m, fate in self.fates.items() if len(fate.places) > 1]

    @property
    def announced_twice(self) -> list[str]:
        return [m for m, fate in self.fates.items() if fate.announcements > 1]

    @property
    def unannounced_failures(self) -> list[str]:
        return [m for m, fate in self.fates.items()
                if fate.places and fate.place not in {Place.SUCCEEDED, Place.ABSORBED} and fate.announcements == 0]

    @property
    def announced_successes(self) -> list[str]:
        return [m for m, fate in self.fates.items()
                if fate.place in {Place.SUCCEEDED, Place.ABSORBED} and fate.announcements]

    def counts(self) -> Counter[str]:
        return Counter(fate.place.value for fate in self.fates.values())

    @property
    def balanced(self) -> bool:
        """Every message in exactly one place; every failure announced once; no success announced."""
        return not (self.lost or self.in_two_places or self.announced_twice or self.unannounced_failures
                    or self.announced_successes)


def account(aws: Rehearsal, message_ids: list[str]) -> Ledger:
    """Find each sent message in the executions, the two DLQs and the alerts topic."""
    fates = {message_id: MessageFate(message_id) for message_id in message_ids}
    executions = aws.executions()
    by_arn: dict[str, Execution] = {execution.arn: execution for execution in executions}
    recorded = _failure_records(aws)
    for record in recorded:
        fate = fates.get(record["record"]["messageId"])
        if fate is not None:
            fate.places.append(Place.FAILURE_DLQ)
            fate.manual_repair = bool(record.get("manualRepair"))
            fate.error = record["failure"]["error"]
    in_dlq = {record["record"]["messageId"] for record in recorded}
    for message in aws.messages("SourceDlqUrl"):
        if message["MessageId"] in fates:
            fate = fates[message["MessageId"]]
            fate.places.append(Place.SOURCE_DLQ)
            # No execution ever started, so no state announces it: the SourceDlqNotEmpty alarm does, once for
            # everything in the queue (tests/infra/test_monitoring.py). The rehearsal does not evaluate alarms.
            fate.announcements = 1
            fate.error = "not handed over by the pipe"
    for execution in executions:
        fate = fates.get(execution.message_id or "")
        if fate is not None:
            _place_execution(execution, fate, in_dlq)
    _count_announcements(aws, by_arn, fates)
    return Ledger(fates)


def _place_execution(execution: Execution, fate: MessageFate, in_dlq: set[str]) -> None:
    if execution.states and execution.states[-1] in DUPLICATE_ENDS:
        if _ended_as(execution, "DuplicateOrder"):
            fate.places.append(Place.ABSORBED)
        return
    if execution.status == "SUCCEEDED":
        fate.places.append(Place.SUCCEEDED)
    elif execution.message_id not in in_dlq:
        fate.places.append(Place.EXECUTION)
        fate.error = execution.error or execution.status
        # A timed-out or aborted execution stopped wherever it was: no compensation ran, and a task still
        # in flight may have finished its write. Someone must redrive or repair it.
        stopped = execution.status in {"TIMED_OUT", "ABORTED"}
        fate.manual_repair = stopped or "CompensationFailed" in execution.states


def _count_announcements(aws: Rehearsal, by_arn: dict[str, Execution], fates: dict[str, MessageFate]) -> None:
    """An announcement names its execution; the execution's input names the message.

    An alert the rule could not hand to its announcer lands in the rule's target DLQ (alarm RuleTargetDlqNotEmpty);
    one the announcer could not publish fails its execution (alarm AnnouncementsFailed), its event kept in the
    failure-events queue. Those alarms announce it instead; the rehearsal does not evaluate alarms, so it counts them.
    """
    undelivered = [d.payload for d in aws.bus.deliveries if d.alert_lost]
    for text in [text for _subject, text in aws.notifications()] + undelivered:
        for arn in set(_EXECUTION_ARN.findall(text)):
            found = by_arn.get(arn)
            fate = fates.get(found.message_id or "") if found is not None else None
            if fate is not None:
                fate.announcements += 1


def _failure_records(aws: Rehearsal) -> list[dict[str, Any]]:
    records = []
    for message in aws.messages("FailureDlqUrl"):
        body = json.loads(message["Body"])
        if isinstance(body, dict) and "record" in body:
            records.append(body)
    return records


def _ended_as(execution: Execution, error: str) -> bool:
    """Whether the Catch that ended the execution quietly caught `error` (its output is the caught error)."""
    output = execution.output
    if isinstance(output, str):
        try:
            output = json.loads(output)
        except ValueError:
            return False
    return isinstance(output, dict) and output.get("Error") == error
