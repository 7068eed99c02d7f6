"""Load on the rehearsal's clock: messages sent at a rate for a while, then the clock run on until every one ended.

A phase sends `rate_per_second` messages for `seconds`, spread over steps of the clock (one second by default: each
step sends what the rate owes it, then moves the clock on and lets what is due run, the pipe's starts under their
quota among it). After the last phase the clock moves on until the account is quiet: no execution running, nothing
in the source queue (visible, in flight or delayed), and nothing waiting for an automatic redrive (a failure record,
or a message in the source DLQ the Redriver will send back), or until `settle` gives up. What came of each message
is then read where it ended (fire_and_forget.rehearsal.accounting) and each one's time from its SendMessage to the
end of its last execution is measured on the clock.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from fire_and_forget.rehearsal.accounting import Ledger, account, advance_past_retries, caller_of
from fire_and_forget.rehearsal.cost import Usage, add, per_million, usage_of_execution

if TYPE_CHECKING:
    from fire_and_forget.rehearsal.rehearsal import Rehearsal


@dataclass(frozen=True)
class Phase:
    """`rate_per_second` messages a second for `seconds`."""

    rate_per_second: float
    seconds: float


@dataclass
class LoadResult:
    """Where every message ended and what the load cost."""

    sent_at: dict[str, datetime]  # message id -> when it was sent, on the clock
    ledger: Ledger
    quiet: bool  # the account was quiet when `settle` stopped
    settled_at: datetime
    latency_seconds: dict[str, float]  # message id -> SendMessage to the end of its last execution
    executions: int
    started_at: list[datetime]  # every execution's start, earliest first: what the StartExecution quota let through
    usage: Usage
    throttled: int  # StartExecution calls the quota refused
    places: Counter[str] = field(default_factory=Counter)

    @property
    def messages(self) -> int:
        return len(self.sent_at)

    @property
    def slowest_seconds(self) -> float:
        return max(self.latency_seconds.values(), default=0.0)

    @property
    def cost_per_million(self) -> float:
        return per_million(self.usage, self.messages)


def send_at_rate(aws: Rehearsal, phases: Sequence[Phase], body_of: Callable[[int], str],
                 step_seconds: float = 1.0) -> dict[str, datetime]:
    """Send each phase's messages evenly over its seconds (`body_of(n)`: the n-th message's body, from 0); returns
    each message's id and when it was sent."""
    sent: dict[str, datetime] = {}
    owed = 0.0
    for phase in phases:
        for _ in range(math.ceil(phase.seconds / step_seconds)):
            owed += phase.rate_per_second * step_seconds
            while owed >= 1 - 1e-9:
                sent[aws.send(body_of(len(sent)))] = aws.now()
                owed -= 1
            aws.advance(step_seconds)
    return sent


def settle(aws: Rehearsal, sent_at: dict[str, datetime], *, step_seconds: int = 300,
           max_hours: float = 24.0) -> LoadResult:
    """Move the clock on a step at a time until the account is quiet (accounting.advance_past_retries: nothing
    running, nothing hidden or delayed in the queues, nothing waiting for an automatic redrive), at most `max_hours`,
    then account for every message sent."""
    try:
        advance_past_retries(aws, step_seconds=step_seconds, limit_seconds=int(max_hours * 3600))
        calm = True
    except RuntimeError:  # not quiet by then: reported, not raised
        calm = False
    ledger = account(aws, list(sent_at))
    ended: dict[str, datetime] = {}
    usage = Usage()
    executions = 0
    started: list[datetime] = []
    for execution in aws.executions():
        caller = caller_of(execution)
        if caller not in sent_at or not execution.history:
            continue
        executions += 1
        started.append(execution.history[0]["timestamp"])
        add(usage, usage_of_execution(execution.history, len(aws.clock.for_execution(execution.arn))))
        end = execution.history[-1]["timestamp"]
        ended[caller] = max(end, ended.get(caller, end))
    return LoadResult(
        sent_at=sent_at, ledger=ledger, quiet=calm, settled_at=aws.now(),
        latency_seconds={m: (ended[m] - at).total_seconds() for m, at in sent_at.items() if m in ended},
        executions=executions, started_at=sorted(started), usage=usage, throttled=aws.pipe.stats.throttled,
        places=Counter(fate.place.value for fate in ledger.fates.values()))
