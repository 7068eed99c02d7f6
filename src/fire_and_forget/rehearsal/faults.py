"""Fault injection at the emulator's edges (Lambda service, SQS, SNS, the pipe), never inside the handlers."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fire_and_forget.rehearsal.clock import VirtualClock


class FaultKind(StrEnum):
    """What the emulated AWS service does instead of its job."""

    # Lambda: the service fails before the handler runs (500, retried by the Lambda.* retrier).
    SERVICE_ERROR = "service_error"
    # Lambda: 429, reported to Step Functions as Lambda.TooManyRequestsException.
    THROTTLE = "throttle"
    # Lambda: the function runs past its timeout. Step Functions reports unhandled errors such as timeouts
    # and out-of-memory as Lambda.Unknown (docs: "Handle Lambda service exceptions").
    TIMEOUT = "timeout"
    # Lambda: the function crashes with an error no retrier lists, so Catch takes over at once.
    CRASH = "crash"
    # Lambda, SQS SendMessage, SNS Publish: the call is held until the rehearsal releases it, then runs (to abort or
    # time out an execution while it waits, in a Lambda task or in HandleFailure's SendMessage / NotifyFailure).
    HANG = "hang"
    # SQS SendMessage / DeleteMessage, SNS Publish: the service answers 5xx and does nothing.
    UNAVAILABLE = "unavailable"
    # SQS SendMessage / DeleteMessage, SNS Publish, Pipes' StartExecution: the call took effect, but its response was
    # lost (a 5xx after the work, a dropped connection). The caller cannot tell it from UNAVAILABLE and retries, so a
    # retried send or publish duplicates, and a pipe that sees its StartExecution fail leaves the message queued.
    RESPONSE_LOST = "response_lost"
    # Pipes: StartExecution is refused (the customer's error, e.g. AccessDenied), so the message stays queued.
    START_REFUSED = "start_refused"


@dataclass
class Fault:
    """A fault on one target: a task name, "FailureDlq" or "SourceQueue" (SendMessage to it; to the source queue, a
    resend by the Redriver or ff-ops, or a caller's), "AlertsTopic" (Publish to it, from NotifyFailure or the rule),
    "StartExecution" (the pipe's), "FailureDlqDelete" / "SourceDlqDelete" (DeleteMessage on that queue, what the
    operator tools do), or a table the stack names in an output `XTableName` as "XTable" (its single-item DynamoDB
    calls, fire_and_forget/rehearsal/services.py; e.g. "SearchIndexTable").

    `times` None means every time. `key` restricts the fault to the calls about one piece of work (one business key):
    calls whose task payload, pipe records, message body or, for a publish, the input of the execution the alert names
    hold `key` as a string value (at any depth, JSON in strings included).
    """

    target: str
    kind: FaultKind
    times: int | None = None
    key: str | None = None
    fired: int = field(default=0, init=False)

    def applies(self, target: str, payload: Any) -> bool:
        if target != self.target or (self.times is not None and self.fired >= self.times):
            return False
        return self.key is None or self.key in _string_values(payload)


class FaultPlan:
    """The faults of one rehearsal; thread-safe, because executions run concurrently."""

    def __init__(self, clock: VirtualClock | None = None) -> None:
        self._faults: list[Fault] = []
        self._lock = threading.Lock()
        self.clock = clock  # a held call waits on it, so the interpreter counts its thread as waiting
        self.released = threading.Event()
        self.holding = threading.Event()  # set once a service call (not a Lambda task) is held by a HANG fault
        self.held: list[str] = []  # the targets of the service calls held so far
        self.completed_holds: list[str] = []  # the held service calls that have since run to their end

    def hold(self, target: str) -> None:
        """Hold a service call until `released` is set (a HANG fault outside Lambda, see
        fire_and_forget/rehearsal/services.py)."""
        with self._lock:
            self.held.append(target)
        self.holding.set()
        if self.clock is None:
            self.released.wait()
        else:
            self.clock.wait_for(self.released.is_set, None, about=self.released)

    def release(self) -> None:
        """Let every held call (a service call or a Lambda invocation) go on."""
        self.released.set()
        if self.clock is not None:
            self.clock.notify(self.released)

    def hold_completed(self, target: str) -> None:
        with self._lock:
            self.completed_holds.append(target)

    def add(self, fault: Fault) -> Fault:
        with self._lock:
            self._faults.append(fault)
        return fault

    def clear(self) -> None:
        with self._lock:
            self._faults.clear()

    def take(self, target: str, payload: Any = None) -> FaultKind | None:
        """The fault to inject now for `target`, counting it as fired; None when the call should succeed."""
        with self._lock:
            for fault in self._faults:
                if fault.applies(target, payload):
                    fault.fired += 1
                    return fault.kind
        return None

    def fired(self, target: str) -> int:
        with self._lock:
            return sum(fault.fired for fault in self._faults if fault.target == target)


def _string_values(payload: Any) -> set[str]:
    """Every string value in a task payload, a pipe record, a message body or an execution input (searched, not parsed
    by schema; JSON held in strings is searched too)."""
    found: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, dict | list):
            for item in value.values() if isinstance(value, dict) else value:
                walk(item)
        elif isinstance(value, str):
            found.add(value)
            if value.startswith(("{", "[")):
                try:
                    walk(json.loads(value))
                except ValueError:
                    return

    walk(payload)
    return found
