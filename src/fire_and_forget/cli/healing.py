"""What each failure record waits for, by the HealingPolicy the stack's Redriver applies (its `HealingPolicy` output).

ff-ops classifies a record with the Redriver's own `HealingPolicy.classify` (same disposition, same attempt count,
same due time), so that `failures list` says what the Redriver will do with it. A stack deployed before self-healing
has no HealingPolicy output: every record then waits for "-" (unknown) and everything else works as before.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from fire_and_forget.cli.errors import OutputsMissing
from fire_and_forget.cli.stack import HEALING_POLICY_OUTPUT
from fire_and_forget.runtime.healing_policy import Disposition, HealingPolicy, attempt_of

if TYPE_CHECKING:
    from fire_and_forget.cli.stack import DeployedStack
    from fire_and_forget.runtime.records import FailureRecord


@dataclass(frozen=True)
class Waiting:
    """A record's disposition (None: the stack publishes no policy), its automatic redrives so far, and, for a
    record waiting for a retry, when the Redriver sends it back (None: it has no failure time, so at its next run);
    `reason` says why the Redriver cannot resend a cannot-redrive record."""

    disposition: Disposition | None
    attempt: int
    max_attempts: int | None
    due_at: datetime | None
    reason: str | None = None

    def parts(self, now: datetime) -> list[str]:
        """The disposition, then what it waits on: `["waiting-for-retry", "attempt 2 of 3", "due ..."]`; `["-"]`."""
        if self.disposition is None:
            return ["-"]
        if self.disposition is Disposition.RETRY:
            if self.due_at is None or self.due_at <= now:
                due = "due now (the Redriver's next run)"
            else:
                due = f"due {self.due_at.strftime('%Y-%m-%d %H:%M:%SZ')}"
            return [self.disposition.value, f"attempt {self.attempt + 1} of {self.max_attempts}", due]
        if self.disposition is Disposition.EXHAUSTED:
            return [self.disposition.value, f"{self.attempt} of {self.max_attempts} automatic redrives"]
        if self.disposition is Disposition.UNSENDABLE and self.reason:
            return [self.disposition.value, self.reason]
        return [self.disposition.value]

    def short(self, now: datetime) -> list[str]:
        """For a table cell: `["retry 2/3", "15:30:00Z"]`, `["a person", "3/3 tried"]`, `["a person", "repair"]`."""
        if self.disposition is None:
            return ["-"]
        if self.disposition is Disposition.RETRY:
            due = "now" if self.due_at is None or self.due_at <= now else self.due_at.strftime("%H:%M:%SZ")
            return [f"retry {self.attempt + 1}/{self.max_attempts}", due]
        if self.disposition is Disposition.EXHAUSTED:
            return ["a person", f"{self.attempt}/{self.max_attempts} tried"]
        if self.disposition is Disposition.MANUAL_REPAIR:
            return ["a person", "repair"]
        if self.disposition is Disposition.UNSENDABLE:
            return ["a person", "resend by hand"]
        return ["a person"]

    def describe(self, now: datetime) -> str:
        """One line: `waiting-for-retry: attempt 2 of 3, due 2026-12-01 15:30:00Z`, `needs-decision`, or `-`."""
        first, *rest = self.parts(now)
        return f"{first}: {', '.join(rest)}" if rest else first


def policy_of(stack: DeployedStack) -> HealingPolicy | None:
    """The stack's HealingPolicy (its output holds `HealingPolicy.to_environment()` as JSON); None when absent."""
    text = stack.optional(HEALING_POLICY_OUTPUT)
    if not text:
        return None
    try:
        return HealingPolicy.from_environment(json.loads(text))
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise OutputsMissing(
            f"stack {stack.name} has an output {HEALING_POLICY_OUTPUT} ff-ops cannot read: {error}",
            "deploy the current version of the app (`npx cdk deploy`)",
        ) from error


def waiting_for(record: FailureRecord, policy: HealingPolicy | None) -> Waiting:
    """What `record` waits for; the attempt count is read from the record even without a policy."""
    if policy is None:
        return Waiting(None, attempt_of(record.record), None, None)
    found = policy.classify(record)
    return Waiting(found.disposition, found.attempt, policy.max_attempts, found.due_at, found.reason)
