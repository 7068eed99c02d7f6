"""Fault injection at the emulator's edges (Lambda service, SQS, SNS, the pipe), never inside the handlers."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


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
    # Lambda: the invocation is held until the rehearsal releases it, then runs (to abort or time out an execution).
    HANG = "hang"
    # SQS SendMessage / SNS Publish: the service answers 5xx.
    UNAVAILABLE = "unavailable"
    # Pipes: StartExecution is refused (the customer's error, e.g. AccessDenied), so the message stays queued.
    START_REFUSED = "start_refused"


@dataclass
class Fault:
    """A fault on one target (a task name, "FailureDlq", "AlertsTopic" or "StartExecution").

    `times` None means every time. `order_id` restricts the fault to one order's invocations.
    """

    target: str
    kind: FaultKind
    times: int | None = None
    order_id: str | None = None
    fired: int = field(default=0, init=False)

    def applies(self, target: str, payload: Any) -> bool:
        if target != self.target or (self.times is not None and self.fired >= self.times):
            return False
        return self.order_id is None or self.order_id in _order_ids(payload)


class FaultPlan:
    """The faults of one rehearsal; thread-safe, because executions run concurrently."""

    def __init__(self) -> None:
        self._faults: list[Fault] = []
        self._lock = threading.Lock()
        self.released = threading.Event()

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


def _order_ids(payload: Any) -> set[str]:
    """Every orderId in a task payload, a pipe record or a message body (searched, not parsed by schema)."""
    found: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                if key == "orderId" and isinstance(item, str):
                    found.add(item)
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, str) and value.startswith("{"):
            try:
                walk(json.loads(value))
            except ValueError:
                return

    walk(payload)
    return found
