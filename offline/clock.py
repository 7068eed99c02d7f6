"""Compressed time for the offline rehearsal: retry back-off waits are recorded, not slept."""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from moto.stepfunctions.parser.asl.component.common.retry import retrier_decl


@dataclass(frozen=True)
class RetryWait:
    """One back-off wait a Retry field asked for: which execution, which state, how long."""

    execution_arn: str
    state: str
    seconds: float


class RetryClock:
    """Stands in for the `time` module inside the interpreter's retrier, so Retry waits take no time."""

    def __init__(self) -> None:
        self.waits: list[RetryWait] = []
        self._lock = threading.Lock()
        self._original: ModuleType | None = None

    def sleep(self, seconds: float) -> None:
        # The caller is RetrierDecl._eval_body, whose `env` knows the execution and the state being retried.
        env: Any = sys._getframe(1).f_locals.get("env")
        context = getattr(getattr(getattr(env, "states", None), "context_object", None), "context_object_data", {})
        execution = (context.get("Execution") or {}).get("Id", "?")
        state = (context.get("State") or {}).get("Name", "?")
        with self._lock:
            self.waits.append(RetryWait(execution, state, float(seconds)))

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)

    def install(self) -> None:
        self._original = retrier_decl.time  # type: ignore[attr-defined]
        retrier_decl.time = self  # type: ignore[attr-defined,assignment]

    def uninstall(self) -> None:
        if self._original is not None:
            retrier_decl.time = self._original  # type: ignore[attr-defined]
            self._original = None

    def for_execution(self, execution_arn: str) -> list[RetryWait]:
        with self._lock:
            return [wait for wait in self.waits if wait.execution_arn == execution_arn]
