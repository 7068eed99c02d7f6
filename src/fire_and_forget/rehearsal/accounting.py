"""Where every message ended up, and how often its failure was announced: the pipeline's conservation law.

A caller's message may live on in copies: the automatic redrive sends a transient failure back to the source queue as a
new message carrying `ffFirstMessageId` (the caller's messageId) and `ffRedriveAttempt`. A copy is not another caller
message: the caller's message ends where its last copy ends, and the announcements of all its copies add up. The failure
records of one execution are one place, as ff-ops and the Redriver read them (fire_and_forget/runtime/records.py,
one_per_execution): a second record of the same execution is a known duplicate, not a message in two places.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from fire_and_forget.rehearsal.rehearsal import Execution, Rehearsal
from fire_and_forget.runtime.healing_policy import (
    Disposition,
    HealingPolicy,
    attempt_of,
    first_message_id,
)
from fire_and_forget.runtime.outputs import Output
from fire_and_forget.runtime.records import FailureRecord, one_per_execution, parse, pipe_record
from fire_and_forget.runtime.tail import DUPLICATE_DELIVERY_ERROR, DUPLICATE_ENDS, HANDLED_FAILURE_ERROR

_EXECUTION_ARN = re.compile(r"arn:aws:states:[^:\s\"\\]+:\d+:execution:[^:\s\"\\]+:[A-Za-z0-9_-]+")
HANDLED_FAILURE = HANDLED_FAILURE_ERROR


class Place(StrEnum):
    """The durable places a message can end in."""

    SUCCEEDED = "succeeded"
    FAILURE_DLQ = "failure DLQ"
    # A transient failure recorded, not announced, that the Redriver sends back once its cool-off has passed: a
    # legitimate end of a run only while that cool-off (plus one Redriver period) has not elapsed on the clock.
    WAITING = "failure DLQ, waiting for an automatic retry"
    SOURCE_DLQ = "source DLQ"
    EXECUTION = "failed execution (input kept)"
    # Another attempt of the same work (a resend or a redrive copy under its own messageId) owns it: this message ended
    # quietly at a duplicate end on the workflow's own duplicate error (not the delivery claim's), and its outcome is
    # the owner's.
    ABSORBED = "absorbed by its work's owning attempt"
    NOWHERE = "nowhere"


QUIET_PLACES = frozenset({Place.SUCCEEDED, Place.ABSORBED, Place.WAITING})


@dataclass
class MessageFate:
    message_id: str
    places: list[Place] = field(default_factory=list)
    announcements: int = 0
    manual_repair: bool = False
    error: str | None = None
    redrives: int = 0  # automatic redrives: the attempt number of the last copy
    copies: list[str] = field(default_factory=list)  # messageIds of the redriven copies, attempt by attempt
    due_at: datetime | None = None  # when waiting: when the Redriver sends it back
    overdue: bool = False  # waiting although the clock passed its due time and a Redriver run after it

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
                if fate.places and fate.place not in QUIET_PLACES and fate.announcements == 0]

    @property
    def announced_successes(self) -> list[str]:
        """Announced although it succeeded, was absorbed, or is still to be retried (a failure that may heal)."""
        return [m for m, fate in self.fates.items() if fate.place in QUIET_PLACES and fate.announcements]

    @property
    def overdue_retries(self) -> list[str]:
        """Waiting for an automatic retry that the Redriver should already have sent."""
        return [m for m, fate in self.fates.items() if fate.place is Place.WAITING and fate.overdue]

    @property
    def waiting(self) -> list[str]:
        return [m for m, fate in self.fates.items() if fate.place is Place.WAITING]

    def counts(self) -> Counter[str]:
        return Counter(fate.place.value for fate in self.fates.values())

    @property
    def balanced(self) -> bool:
        """Every message in exactly one place; every failure announced once; no success announced; nothing left
        waiting for a retry that is overdue."""
        return not (self.lost or self.in_two_places or self.announced_twice or self.unannounced_failures
                    or self.announced_successes or self.overdue_retries)


def account(aws: Rehearsal, message_ids: list[str]) -> Ledger:
    """Find each sent message, through its redriven copies, in the executions, the DLQs and the alerts topic."""
    fates = {message_id: MessageFate(message_id) for message_id in message_ids}
    executions = aws.executions()
    by_arn: dict[str, Execution] = {execution.arn: execution for execution in executions}
    recorded = _failure_records(aws)
    source_dlq = aws.messages(Output.SOURCE_DLQ_URL)
    _follow_copies(fates, [e.input[0] for e in executions if _record_of(e) is not None]
                   + [r.record for r in recorded] + [pipe_record(m) for m in source_dlq])
    policy = _policy(aws)
    grace = _redrive_period(aws)
    for record in recorded:
        fate = fates.get(first_message_id(record.record) or "")
        if fate is None:
            continue
        waiting = policy.classify(record) if policy is not None else None
        if waiting is not None and waiting.disposition is Disposition.RETRY:
            fate.places.append(Place.WAITING)
            fate.due_at = waiting.due_at
            fate.overdue = waiting.due_at is None or waiting.due_at + grace <= aws.now()
        else:
            fate.places.append(Place.FAILURE_DLQ)
        fate.manual_repair = record.manual_repair
        fate.error = record.error
    in_dlq = {record.source_message_id for record in recorded}
    for message in source_dlq:
        shaped = pipe_record(message)
        fate = fates.get(first_message_id(shaped) or "")
        if fate is None:
            continue
        fate.error = "not handed over by the pipe"
        if _returnable(policy, shaped):
            # The Redriver's next run sends it back (fire_and_forget.healing.source_return): nobody is told.
            fate.places.append(Place.WAITING)
            continue
        fate.places.append(Place.SOURCE_DLQ)
        # No execution ever started, so no state announces it: an alarm does, once for everything in the queue
        # (SourceDlqNeedsAPerson once the Redriver has spent its attempts on it, SourceDlqNotEmpty where it does
        # not send the source DLQ back: tests/workflow/test_alarm_metrics.py evaluates both).
        fate.announcements += 1
    for execution in executions:
        started_with = _record_of(execution)
        fate = fates.get(first_message_id(started_with) or "") if started_with is not None else None
        # An earlier copy's execution handed its outcome on to the next copy (its record was redriven).
        if fate is not None and attempt_of(started_with) == fate.redrives:
            _place_execution(execution, fate, in_dlq)
    _count_announcements(aws, by_arn, fates)
    return Ledger(fates)


# The Redriver's schedule fires every few minutes: advance in steps of one default period.
RETRY_STEP_SECONDS = 300
# Bound on the clock's travel: the default cool-offs add up to at most 35 min (5, 10, 20; cap 60 min each).
MAX_RETRY_TRAVEL_SECONDS = 6 * 3600


def advance_past_retries(aws: Rehearsal, step_seconds: int = RETRY_STEP_SECONDS,
                         limit_seconds: int = MAX_RETRY_TRAVEL_SECONDS) -> int:
    """Move the rehearsal's clock on, one step at a time, until nothing is left to happen by itself: no execution
    running, no event waiting to be received again (the Reconciler waits out a stopped execution's task), and no
    record in the failure DLQ waiting for an automatic retry nor message in the source DLQ the Redriver will send back
    (each copy runs to its end on the way); the
    seconds travelled. Raises if that is not so after `limit_seconds`: the healing is not doing its work."""
    policy = _policy(aws)
    travelled = 0
    while aws.settling() or (policy is not None and (
        any(policy.classify(record).disposition is Disposition.RETRY for record in _failure_records(aws))
        or any(_returnable(policy, pipe_record(message)) for message in aws.messages(Output.SOURCE_DLQ_URL))
    )):
        if travelled >= limit_seconds:
            raise RuntimeError(f"not quiet after {travelled} s of virtual time: records wait for a retry, or events "
                               "for their redelivery")
        aws.advance(step_seconds)
        travelled += step_seconds
    return travelled


def _returnable(policy: HealingPolicy | None, record: dict[str, Any]) -> bool:
    """A source-DLQ message (in the pipe's record shape) the Redriver will send back: the policy returns them, and it
    has automatic attempts left and fits the source queue with the healing attributes."""
    if policy is None or not policy.returns_source_dlq:
        return False
    attempt = attempt_of(record)
    return attempt < policy.max_attempts and policy.resend_problem(record, attempt) is None


def caller_of(execution: Execution) -> str | None:
    """The caller's messageId an execution works for: its own record's, or the one a redriven copy carries."""
    record = _record_of(execution)
    return first_message_id(record) if record is not None else None


def _follow_copies(fates: dict[str, MessageFate], records: list[dict[str, Any]]) -> None:
    """Note each caller message's redriven copies and the attempt of its last one."""
    copies: dict[str, dict[str, int]] = {}
    for record in records:
        caller, attempt, copy = first_message_id(record) or "", attempt_of(record), record.get("messageId")
        if caller in fates and attempt and isinstance(copy, str):
            copies.setdefault(caller, {})[copy] = attempt
    for caller, attempts in copies.items():
        fates[caller].redrives = max(attempts.values())
        fates[caller].copies = sorted(attempts, key=attempts.__getitem__)


def _place_execution(execution: Execution, fate: MessageFate, in_dlq: set[str | None]) -> None:
    if execution.states and execution.states[-1] in DUPLICATE_ENDS:
        caught = _caught_error(execution)
        if caught is not None and caught != DUPLICATE_DELIVERY_ERROR:
            fate.places.append(Place.ABSORBED)
        return
    if execution.status == "SUCCEEDED":
        fate.places.append(Place.SUCCEEDED)
    elif execution.message_id not in in_dlq:
        fate.places.append(Place.EXECUTION)
        fate.error = execution.error or execution.status
        # Neither the tail nor the Reconciler recorded it: a timed-out or aborted execution stopped wherever it
        # was, and a task still in flight may have finished its write. Someone must redrive or repair it.
        stopped = execution.status in {"TIMED_OUT", "ABORTED"}
        fate.manual_repair = stopped or "CompensationFailed" in execution.states


def _count_announcements(aws: Rehearsal, by_arn: dict[str, Execution], fates: dict[str, MessageFate]) -> None:
    """An announcement names its execution (NotifyFailure's and the Reconciler's alike); the execution's input
    names the message, or, for a redriven copy, the caller's message through ffFirstMessageId.

    A status-change event the Reconciler failed on for good lands in the ReconcilerDlq: the alarm
    ReconcilerDlqNotEmpty announces it instead. The rehearsal does not evaluate alarms, so it counts it.
    """
    texts = [text for _subject, text in aws.notifications()]
    if Output.RECONCILER_DLQ_URL in aws.outputs:
        texts += [message["Body"] for message in aws.messages(Output.RECONCILER_DLQ_URL)]
    for text in texts:
        for arn in set(_EXECUTION_ARN.findall(text)):
            found = by_arn.get(arn)
            record = _record_of(found) if found is not None else None
            fate = fates.get(first_message_id(record) or "") if record is not None else None
            if fate is not None:
                fate.announcements += 1


def _failure_records(aws: Rehearsal) -> list[FailureRecord]:
    """The failure DLQ's records, those of one execution as one."""
    records = []
    for message in aws.messages(Output.FAILURE_DLQ_URL):
        parsed = parse(message)  # type: ignore[arg-type]
        if isinstance(parsed, FailureRecord):
            records.append(parsed)
    return one_per_execution(records)


def _record_of(execution: Execution) -> dict[str, Any] | None:
    record = execution.input[0] if isinstance(execution.input, list) and execution.input else None
    return record if isinstance(record, dict) else None


def _policy(aws: Rehearsal) -> HealingPolicy | None:
    """The Redriver's policy, from the stack's HealingPolicy output (None for a stack without self-healing)."""
    text = aws.outputs.get(Output.HEALING_POLICY)
    return HealingPolicy.from_environment(json.loads(text)) if text else None


def _redrive_period(aws: Rehearsal) -> timedelta:
    """How long after its due time a waiting record may still be waiting: one period of the Redriver's schedule."""
    periods = [s.period for s in aws.scheduler.schedules if "Redriver" in s.target_arn]
    return max(periods or [s.period for s in aws.scheduler.schedules] or [timedelta(0)])


def _caught_error(execution: Execution) -> str | None:
    """The error the Catch that ended the execution quietly caught (its output is the caught error), if any."""
    output = execution.output
    if isinstance(output, str):
        try:
            output = json.loads(output)
        except ValueError:
            return None
    error = output.get("Error") if isinstance(output, dict) else None
    return error if isinstance(error, str) else None
