"""A virtual clock and an emulator of the template's EventBridge Scheduler schedules with Lambda targets.

moto has no model for AWS::Scheduler::Schedule, so the deployment leaves schedules out and this module fires
them on a virtual clock that starts at the deployment and moves only when the rehearsal advances it:
- the clock is the rehearsal's VirtualClock (fire_and_forget/rehearsal/clock.py);
- `rate(N minute|minutes|hour|hours|day|days)` fires every N units; the first firing is one period after the
  schedule was created (the deployment). cron() and at() expressions are refused: nothing here uses them
  (https://docs.aws.amazon.com/scheduler/latest/UserGuide/schedule-types.html). A schedule whose State is DISABLED
  never fires; FlexibleTimeWindow is ignored (each firing happens at its nominal time);
- the target's Input is delivered with its context attributes filled in: <aws.scheduler.schedule-arn>,
  <aws.scheduler.scheduled-time> (ISO 8601 UTC, e.g. 2026-12-01T10:15:00Z), <aws.scheduler.execution-id> (one per
  firing) and <aws.scheduler.attempt-number> (1 for the first delivery attempt)
  (https://docs.aws.amazon.com/scheduler/latest/UserGuide/managing-schedule-context-attributes.html);
- a Lambda target is invoked asynchronously (async_invoke.py): a function error is then Lambda's to retry.
  When the Invoke call itself fails, the scheduler retries it up to the RetryPolicy's MaximumRetryAttempts (the waits
  compressed to nothing; MaximumEventAgeInSeconds is therefore never reached), then sends a dead-letter event to the
  target's DeadLetterConfig queue if it has one, else drops the event
  (https://docs.aws.amazon.com/scheduler/latest/APIReference/API_RetryPolicy.html,
  https://docs.aws.amazon.com/scheduler/latest/UserGuide/configuring-schedule-dlq.html).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.exceptions import ClientError

from fire_and_forget.rehearsal.async_invoke import AsyncLambda, AsyncOutcome
from fire_and_forget.rehearsal.clock import VirtualClock

SCHEDULE = "AWS::Scheduler::Schedule"
_RATE = re.compile(r"rate\((\d+) (minute|minutes|hour|hours|day|days)\)")
_UNIT_SECONDS = {"minute": 60, "hour": 3600, "day": 86400}
DEFAULT_RETRY_ATTEMPTS = 185  # the RetryPolicy defaults (API_RetryPolicy.html)


def rate_period(expression: str) -> timedelta:
    """The period of a rate() expression; anything else is refused."""
    match = _RATE.fullmatch(expression.strip())
    if match is None:
        raise ValueError(
            f"the offline scheduler supports rate(N minute|minutes|hour|hours|day|days) only, not {expression!r}"
        )
    count, unit = int(match.group(1)), match.group(2)
    if count < 1 or (count == 1) != (not unit.endswith("s")):
        raise ValueError(f"{expression!r}: use the singular unit for 1 and the plural for more, as AWS requires")
    return timedelta(seconds=count * _UNIT_SECONDS[unit.removesuffix("s")])


def scheduled_time(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class ScheduleDefinition:
    """An AWS::Scheduler::Schedule with a Lambda target, references resolved."""

    logical_id: str
    arn: str
    period: timedelta
    target_arn: str
    input: str | None
    retry_attempts: int = DEFAULT_RETRY_ATTEMPTS
    dead_letter_queue_url: str | None = None
    enabled: bool = True


@dataclass(frozen=True)
class Firing:
    """One firing of a schedule: when, its execution id, the scheduler's delivery attempts and what came of it."""

    schedule: str  # logical id
    scheduled_time: str
    execution_id: str
    attempts: int  # the scheduler's Invoke attempts
    delivered: bool  # Lambda accepted the event
    dead_lettered: bool  # the scheduler sent it to the target's DLQ
    outcome: AsyncOutcome | None  # what Lambda's asynchronous invocation did with it, once accepted


class Scheduler:
    """Fires the schedules as the virtual clock passes their times."""

    def __init__(
        self, schedules: list[ScheduleDefinition], clock: VirtualClock, invoker: AsyncLambda, sqs: Any
    ) -> None:
        self.schedules = schedules
        self.clock = clock
        self._invoker = invoker
        self._sqs = sqs
        self._next = {s.logical_id: clock.now() + s.period for s in schedules}
        self.firings: list[Firing] = []

    def advance(self, seconds: float, settle: Callable[[], object] | None = None,
                wakeups: Callable[[], datetime | None] | None = None) -> list[Firing]:
        """Move the clock `seconds` on, stopping at every moment something is due, earliest first: each schedule
        whenever its period elapses, and each moment `wakeups` names (a timeout, a message becoming visible again).
        `settle` runs at each stop, before and after the firings (the rehearsal lets what the moment released run
        to quiet before the next one), and once before the clock first moves: a wait the interpreter is about to
        begin (an execution's TimeoutSeconds starts when its worker joins the program thread) must count from now,
        not from the moment the clock has been moved to."""
        if settle is not None:
            settle()
        until = self.clock.now() + timedelta(seconds=seconds)
        fired = []
        while True:
            due = self._earliest_due(until)
            woken = wakeups() if wakeups is not None else None
            moments = [m for m in (due[1] if due else None, woken) if m is not None and m <= until]
            if not moments:
                break
            moment = max(min(moments), self.clock.now())
            self.clock.set(moment)
            if settle is not None:
                settle()
            while (due := self._earliest_due(moment)) is not None:
                schedule, at = due
                self._next[schedule.logical_id] = at + schedule.period
                fired.append(self._fire(schedule, at))
                if settle is not None:
                    settle()
        self.clock.set(until)
        if settle is not None:
            settle()
        return fired

    def _earliest_due(self, until: datetime) -> tuple[ScheduleDefinition, datetime] | None:
        due = [
            (self._next[s.logical_id], index, s)
            for index, s in enumerate(self.schedules)
            if s.enabled and self._next[s.logical_id] <= until
        ]
        if not due:
            return None
        moment, _index, schedule = min(due, key=lambda item: (item[0], item[1]))
        return schedule, moment

    def _fire(self, schedule: ScheduleDefinition, moment: datetime) -> Firing:
        execution_id = uuid.uuid4().hex[:16]
        error: ClientError | None = None
        attempts = 0
        payload = ""
        for attempt in range(1, schedule.retry_attempts + 2):
            attempts = attempt
            payload = fill_context(schedule.input, schedule.arn, moment, execution_id, attempt)
            try:
                outcome = self._invoker.invoke(schedule.target_arn, payload)
            except ClientError as refused:
                error = refused
                continue
            return self._record(
                Firing(
                    schedule.logical_id,
                    scheduled_time(moment),
                    execution_id,
                    attempts,
                    delivered=True,
                    dead_lettered=False,
                    outcome=outcome,
                )
            )
        dead_lettered = schedule.dead_letter_queue_url is not None and error is not None
        if dead_lettered and error is not None:
            self._dead_letter(schedule, moment, execution_id, payload, error)
        return self._record(
            Firing(
                schedule.logical_id,
                scheduled_time(moment),
                execution_id,
                attempts,
                delivered=False,
                dead_lettered=dead_lettered,
                outcome=None,
            )
        )

    def _record(self, firing: Firing) -> Firing:
        self.firings.append(firing)
        return firing

    def _dead_letter(
        self, schedule: ScheduleDefinition, moment: datetime, execution_id: str, payload: str, error: ClientError
    ) -> None:
        """The dead-letter event: the target's input as the body, the invocation details as message attributes."""
        details = error.response.get("Error", {})
        attributes = {
            "ERROR_CODE": str(details.get("Code", "Unknown")),
            "ERROR_MESSAGE": str(details.get("Message", "")) or "-",
            "EXECUTION_ID": execution_id,
            "SCHEDULE_ARN": schedule.arn,
            "SCHEDULED_TIME": scheduled_time(moment),
            "TARGET_ARN": schedule.target_arn,
        }
        self._sqs.send_message(
            QueueUrl=schedule.dead_letter_queue_url,
            MessageBody=payload or "{}",
            MessageAttributes={k: {"DataType": "String", "StringValue": v} for k, v in attributes.items()},
        )


def fill_context(template: str | None, schedule_arn: str, moment: datetime, execution_id: str, attempt: int) -> str:
    """The target input with the scheduler's context attributes filled in (an absent input delivers {})."""
    values = {
        "<aws.scheduler.schedule-arn>": schedule_arn,
        "<aws.scheduler.scheduled-time>": scheduled_time(moment),
        "<aws.scheduler.execution-id>": execution_id,
        "<aws.scheduler.attempt-number>": str(attempt),
    }
    text = template if template is not None else "{}"
    for placeholder, value in values.items():
        text = text.replace(placeholder, value)
    return text


def read_schedules(
    assembly: Any, stack: Any, queue_urls: dict[str, str], account: str, region: str
) -> list[ScheduleDefinition]:
    """The template's schedules; only Lambda targets and rate() expressions are emulated, others are refused."""
    schedules = []
    for logical_id, resource in assembly.resources_of_type(SCHEDULE).items():
        props = resource["Properties"]
        target = props["Target"]
        target_arn = str(stack.resolve(target["Arn"]))
        if ":lambda:" not in target_arn or ":function:" not in target_arn:
            raise ValueError(f"{logical_id}: the offline scheduler emulates Lambda targets only, not {target_arn}")
        group = props.get("GroupName", "default")
        group = group if isinstance(group, str) else logical_id + "Group"  # a Ref to a group moto cannot create
        name = props.get("Name") or f"{stack.name}-{logical_id}"[:64]
        dlq = target.get("DeadLetterConfig", {}).get("Arn")
        schedules.append(
            ScheduleDefinition(
                logical_id=logical_id,
                arn=f"arn:aws:scheduler:{region}:{account}:schedule/{group}/{name}",
                period=rate_period(props["ScheduleExpression"]),
                target_arn=target_arn,
                input=str(stack.resolve(target["Input"])) if "Input" in target else None,
                retry_attempts=int(target.get("RetryPolicy", {}).get("MaximumRetryAttempts", DEFAULT_RETRY_ATTEMPTS)),
                dead_letter_queue_url=queue_urls[stack.resolve(dlq)] if dlq is not None else None,
                enabled=props.get("State", "ENABLED") == "ENABLED",
            )
        )
    return schedules
