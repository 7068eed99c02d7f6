"""The rehearsal's time: one virtual clock for the whole process, and Retry back-off waits recorded (not slept, or,
where a rehearsal models Lambda's concurrency, waited out on the clock).

`VirtualClock` starts at the real UTC time (whole seconds) and moves only when told to. Once installed, every wall-clock
read in the process returns it (time.time, datetime.now, through time-machine): moto's timestamps (startDate, stopDate,
history events, SQS SentTimestamp and visibility), the handlers' and the healing functions' "now", the metrics'
timestamps. Waits that AWS bounds by time are measured on it (`wait_for`): a Task's and an execution's TimeoutSeconds
(fire_and_forget/rehearsal/interpreter_time.py) and a held Lambda invocation's function timeout
(fire_and_forget/rehearsal/lambda_runtime.py). So work never makes time pass: a slow or loaded machine trips no timeout,
and a timeout happens exactly when the rehearsal moves the clock past it, deadline by deadline. Work is given a
duration only where a rehearsal asks (`Rehearsal(lambda_concurrency=..., invocation_seconds=...)`): an invocation
then ends that long after it started, on the clock, whatever the machine.
"""

from __future__ import annotations

import random
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from types import ModuleType
from typing import Any

import time_machine
from moto.stepfunctions.parser.asl.component.common.retry import jitter_strategy_decl, retrier_decl

# How often a clocked wait looks again on its own: a safety net under the notifications, never a time limit.
RECHECK_SECONDS = 1.0


@dataclass(frozen=True)
class RetryWait:
    """One back-off wait a Retry field asked for: which execution, which state, how long; `ceiling` is the interval
    before jitter (None without a JitterStrategy; FULL jitter draws `seconds` between 0 and it)."""

    execution_arn: str
    state: str
    seconds: float
    ceiling: float | None = None

    @property
    def expected_seconds(self) -> float:
        """The wait's mean over its jitter: what a million such waits average to (half the ceiling under FULL
        jitter's uniform draw), the same in every run."""
        return self.seconds if self.ceiling is None else self.ceiling / 2


class _JitterDraws:
    """Stands in for `random` inside the interpreter's jitter strategy: the same draw, with its range remembered per
    thread so that the wait that follows knows its ceiling."""

    def __init__(self) -> None:
        self.ceilings = threading.local()

    def uniform(self, low: float, high: float) -> float:
        self.ceilings.last = float(high)
        return random.uniform(low, high)

    def __getattr__(self, name: str) -> Any:
        return getattr(random, name)


class RetryClock:
    """Stands in for the `time` module inside the interpreter's retrier: a Retry wait is recorded and takes no time,
    or, with `on_clock` set, is waited out on that clock (where time decides what a retry finds: a concurrency slot
    freed, another transaction on the item ended)."""

    def __init__(self) -> None:
        self.on_clock: VirtualClock | None = None
        self.waits: list[RetryWait] = []
        self._lock = threading.Lock()
        self._original: ModuleType | None = None
        self._original_random: ModuleType | None = None
        self._draws = _JitterDraws()

    def sleep(self, seconds: float) -> None:
        # The caller is RetrierDecl._eval_body, whose `env` knows the execution and the state being retried.
        env: Any = sys._getframe(1).f_locals.get("env")
        context = getattr(getattr(getattr(env, "states", None), "context_object", None), "context_object_data", {})
        execution = (context.get("Execution") or {}).get("Id", "?")
        state = (context.get("State") or {}).get("Name", "?")
        ceiling = getattr(self._draws.ceilings, "last", None)
        self._draws.ceilings.last = None  # one draw per wait: a Retry without jitter must not inherit it
        with self._lock:
            self.waits.append(RetryWait(execution, state, float(seconds), ceiling))
        if self.on_clock is not None and seconds > 0:
            self.on_clock.wait_for(lambda: False, float(seconds))

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)

    def install(self) -> None:
        self._original = retrier_decl.time  # type: ignore[attr-defined]
        retrier_decl.time = self  # type: ignore[attr-defined,assignment]
        self._original_random = jitter_strategy_decl.random  # type: ignore[attr-defined]
        jitter_strategy_decl.random = self._draws  # type: ignore[attr-defined,assignment]

    def uninstall(self) -> None:
        if self._original is not None:
            retrier_decl.time = self._original  # type: ignore[attr-defined]
            self._original = None
        if self._original_random is not None:
            jitter_strategy_decl.random = self._original_random  # type: ignore[attr-defined]
            self._original_random = None

    def for_execution(self, execution_arn: str) -> list[RetryWait]:
        with self._lock:
            return [wait for wait in self.waits if wait.execution_arn == execution_arn]


@dataclass
class _Wait:
    done: Callable[[], bool]
    deadline: datetime | None
    about: object  # what the waiter waits for: `notify(about)` wakes it
    wake: threading.Event = field(default_factory=threading.Event)


class VirtualClock:
    """The rehearsal's "now": it stands still while work runs and moves only in `advance` or `set`."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = (start or datetime.now(UTC)).replace(microsecond=0)
        self._lock = threading.Lock()
        self._waits: dict[int, _Wait] = {}  # thread ident -> what that thread waits for
        self._travel: Any = None
        self._coordinates: Any = None

    # -- the process's wall clock ----------------------------------------------------------------------------

    def install(self) -> None:
        """From now on every wall-clock read in the process returns this clock (until `uninstall`)."""
        self._travel = time_machine.travel(self._now, tick=False)
        self._coordinates = self._travel.start()

    def uninstall(self) -> None:
        if self._travel is not None:
            self._travel.stop()
            self._travel = self._coordinates = None

    # -- reading and moving ----------------------------------------------------------------------------------

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> datetime:
        if seconds < 0:
            raise ValueError("the clock does not go back")
        self.set(self.now() + timedelta(seconds=seconds))
        return self.now()

    def set(self, moment: datetime) -> None:
        with self._lock:
            if moment < self._now:
                raise ValueError("the clock does not go back")
            self._now = moment
            if self._coordinates is not None:
                self._coordinates.move_to(moment)
            due = [w for w in self._waits.values() if w.deadline is not None and w.deadline <= moment]
        for wait in due:  # only the waits the move ended: no herd of waiters woken for nothing
            wait.wake.set()

    # -- waiting on it ---------------------------------------------------------------------------------------

    def wait_for(self, done: Callable[[], bool], seconds: float | None, about: object = None) -> bool:
        """Block until `done()` or until the clock has moved `seconds` on (None: no deadline); returns `done()`.

        Whoever makes `done()` true calls `notify(about)` with the same `about`; a move of the clock past the
        deadline wakes the waiter by itself.
        """
        me = threading.get_ident()
        with self._lock:
            deadline = None if seconds is None else self._now + timedelta(seconds=seconds)
            wait = self._waits[me] = _Wait(done, deadline, about)
        try:
            while not done():
                if deadline is not None and self.now() >= deadline:
                    break
                wait.wake.wait(RECHECK_SECONDS)
                wait.wake.clear()
            return done()
        finally:
            with self._lock:
                del self._waits[me]

    def notify(self, about: object = None) -> None:
        """Wake the waits for `about` (None: every wait)."""
        with self._lock:
            waits = [w for w in self._waits.values() if about is None or w.about is about]
        for wait in waits:
            wait.wake.set()

    def blocked(self, thread_ident: int | None) -> bool:
        """True while that thread waits on this clock for something that has not happened and is not yet due."""
        with self._lock:
            wait = self._waits.get(thread_ident) if thread_ident is not None else None
            now = self._now
        return wait is not None and not wait.done() and (wait.deadline is None or now < wait.deadline)

    def next_deadline(self) -> datetime | None:
        """The earliest moment after now at which a waiting thread's wait ends by itself."""
        with self._lock:
            waits, now = list(self._waits.values()), self._now
        return min((w.deadline for w in waits if w.deadline is not None and w.deadline > now and not w.done()),
                   default=None)
