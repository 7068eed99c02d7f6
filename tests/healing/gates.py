"""Actors as coroutines that stop before each AWS call: the atomic steps of the healing explorer.

Every actor (an execution, a Reconciler run, the Redriver, an operator's redrive, a late invocation) runs its real
code in its own greenlet. Each AWS call it makes goes through `gate`, which hands control back to the explorer with
the call it is about to make; the explorer resumes it with a decision: make the call, make it and crash, make it and
lose the response, or refuse it. Each decided call is one atomic step.

An actor is resumable after the explorer restored a snapshot of the services: its code is run again from the start
in a fresh greenlet, and every call it had already made is answered from its log instead of being made again (the
code is deterministic given the answers), up to the call it was about to make.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import greenlet  # type: ignore[import-untyped]  # it ships no stubs
from botocore.exceptions import ClientError


class Decision(StrEnum):
    """What the explorer lets happen to an actor's next call."""

    GO = "go"
    CRASH = "crash"  # the call takes effect, then the actor dies (no handler of its own runs)
    LOST = "lost"  # the call takes effect, then the caller gets an error (a lost response)
    REFUSED = "refused"  # the call fails before it takes effect (the caller gets an error)
    # An execution's own: timed out or aborted while this task was in flight; LATE: the invocation commits later.
    TIMEOUT = "timeout"
    TIMEOUT_LATE = "timeout+late"
    ABORT = "abort"
    ABORT_LATE = "abort+late"
    # An execution's task faults (as tests/handlers/explorer.py's): every retry throttled before the handler ran.
    EXHAUST = "exhaust"


STOPS = {Decision.TIMEOUT, Decision.TIMEOUT_LATE, Decision.ABORT, Decision.ABORT_LATE}
LATE = {Decision.TIMEOUT_LATE, Decision.ABORT_LATE}


class Crash(BaseException):
    """Unwinds a dead actor's greenlet: not an Exception, so the actor's own handlers never see it."""


@dataclass(frozen=True)
class Call:
    """The call an actor is about to make: service, operation and a short description of what it touches."""

    service: str
    operation: str
    target: str = ""

    def __str__(self) -> str:
        return f"{self.service}.{self.operation}{f'({self.target})' if self.target else ''}"


@dataclass
class Entry:
    """One made call in an actor's log: the call and what it answered (a value or an exception)."""

    call: Call
    value: Any = None
    error: BaseException | None = None

    def replay(self) -> Any:
        if self.error is not None:
            raise self.error.with_traceback(None)
        return copy.deepcopy(self.value)


@dataclass
class Actor:
    """One actor's state that the explorer snapshots: what it is, its log, the call it waits at, its clock."""

    key: int
    kind: str  # execution, reconciler, sweep, redriver, operator, late, arrival
    label: str
    spec: dict[str, Any]
    now: float  # the time its first step happens at (the clock moves there)
    deadline: float | None = None  # it must have ended by then (a function timeout)
    dies_at_deadline: bool = False  # a late invocation: the clock may pass its deadline, it simply dies
    explored: bool = True  # False: it runs after every explored actor, in one fixed order, without faults
    log: list[Entry] = field(default_factory=list)
    pending: Call | None = None
    state: str = "new"  # new, waiting, done, dead
    decisions: list[Decision] = field(default_factory=list)

    @property
    def live(self) -> bool:
        return self.state in ("new", "waiting")


def lost_response(call: Call) -> ClientError:
    return ClientError({"Error": {"Code": "RequestTimeout", "Message": f"response to {call} lost"}}, call.operation)


def refusal(call: Call) -> ClientError:
    return ClientError({"Error": {"Code": "ServiceUnavailable", "Message": f"{call} refused"}}, call.operation)


class Runner:
    """Runs actors' greenlets: starts, resumes (replaying their log), decides their calls, kills them."""

    def __init__(self) -> None:
        self.main = greenlet.getcurrent()
        self.current: Actor | None = None
        self.performing = 0  # > 0 inside a call being made: the calls it makes itself are part of it
        self._greenlets: dict[int, greenlet.greenlet] = {}
        self._replay: dict[int, int] = {}
        self._bodies: dict[str, Callable[[Actor], Any]] = {}
        self.finished: Callable[[Actor, Any], None] = lambda _actor, _result: None

    def register(self, kind: str, body: Callable[[Actor], Any]) -> None:
        self._bodies[kind] = body

    # -- inside an actor ----------------------------------------------------------------------------------------

    def gate(self, call: Call, perform: Callable[[Decision], Any]) -> Any:
        """Called by an actor before an AWS call; `perform(decision)` makes it and returns its answer."""
        actor = self.current
        if actor is None or self.performing:  # set-up code, or a handler running inside a gated Invoke
            return perform(Decision.GO)
        if actor.state == "dead":
            raise Crash
        position = self._replay.get(actor.key, 0)
        if position < len(actor.log):
            entry = actor.log[position]
            self._replay[actor.key] = position + 1
            assert entry.call == call, f"{actor.label} is not deterministic: {entry.call} then {call} on replay"
            return entry.replay()
        actor.pending = call
        decision = self.main.switch(call)
        self.current = actor
        actor.pending = None
        entry = Entry(call)
        actor.log.append(entry)
        self._replay[actor.key] = len(actor.log)
        self.performing += 1
        try:
            entry.value = perform(decision)
        except Exception as error:
            entry.error = error
            raise
        finally:
            self.performing -= 1
        if decision is Decision.CRASH:
            actor.state = "dead"
            raise Crash
        return copy.deepcopy(entry.value)

    # -- from the explorer ----------------------------------------------------------------------------------------

    def step(self, actor: Actor, decision: Decision) -> None:
        """Let `actor` make its pending call under `decision` and run on to its next call (or its end)."""
        if actor.state == "new":
            self._start(actor)
            if not actor.live:
                return
        self._ensure(actor)
        actor.decisions.append(decision)
        self._switch(actor, decision)

    def start(self, actor: Actor) -> None:
        """Run a new actor up to its first call (its reads before it touch nothing another actor writes)."""
        self._start(actor)

    def kill(self, actor: Actor) -> None:
        """The actor dies before its pending call (a function timeout, or the execution was stopped)."""
        if not actor.live:
            return
        actor.state = "dead"
        actor.pending = None
        running = self._greenlets.pop(actor.key, None)
        if running is not None and not running.dead:
            self.current = actor
            running.throw(Crash)
            self.current = None

    def forget_all(self) -> None:
        """A snapshot was restored: every greenlet belongs to the other branch. Each is unwound as a dead actor's,
        so that no `finally` of its code can reach a service."""
        ghost = Actor(-1, "ghost", "ghost", {}, 0.0, state="dead")
        for running in self._greenlets.values():
            if not running.dead:
                self.current = ghost
                running.throw(Crash)
        self._greenlets.clear()
        self._replay.clear()
        self.current = None

    def _start(self, actor: Actor) -> None:
        actor.state = "waiting"
        self._spawn(actor)
        self._switch(actor, None)

    def _ensure(self, actor: Actor) -> None:
        running = self._greenlets.get(actor.key)
        if running is not None and not running.dead:
            return
        expected = actor.pending
        self._spawn(actor)
        self._replay[actor.key] = 0
        self._switch(actor, None)
        assert actor.pending == expected, f"{actor.label} resumed at {actor.pending}, not at {expected}"

    def _spawn(self, actor: Actor) -> None:
        body = self._bodies[actor.kind]

        def run() -> Any:
            try:
                return ("done", body(actor))
            except Crash:
                return ("dead", None)

        self._greenlets[actor.key] = greenlet.greenlet(run, parent=self.main)
        self._replay[actor.key] = 0

    def _switch(self, actor: Actor, decision: Decision | None) -> None:
        running = self._greenlets[actor.key]
        self.current = actor
        outcome = running.switch(decision) if decision is not None else running.switch()
        self.current = None
        if running.dead:
            self._greenlets.pop(actor.key, None)
            state, result = outcome
            actor.pending = None
            if actor.state != "dead":
                actor.state = state
            self.finished(actor, result if state == "done" else None)
