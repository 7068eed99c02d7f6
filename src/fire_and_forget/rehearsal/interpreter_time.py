"""moto's Step Functions interpreter on the rehearsal's virtual clock, and how to tell when it has nothing to do.

The interpreter (a vendored copy of LocalStack's) bounds a state's TimeoutSeconds with `threading.Event.wait(timeout)`
(ExecuteState._evaluate_with_timeout), a callback Task's HeartbeatSeconds with `Event.wait(timeout)` (callback.py's
HeartbeatEndpoint) and the execution's TimeoutSeconds with `Thread.join(timeout)` (Program.eval): all on the machine's
clock, so a slow machine times tasks out. Here the modules' `threading` (and `Thread`) names are
replaced by stand-ins whose waits run on the VirtualClock (fire_and_forget/rehearsal/clock.py): a timeout happens when
the clock is moved past it, never because the work was slow.

The same stand-ins count the interpreter's threads (an execution's worker thread, its program thread, one thread per
Task attempt). The interpreter is *quiet* when every one of them waits on the clock for something not yet due (a
held Lambda invocation, a timeout in the future): nothing more happens until the clock moves.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import ModuleType
from typing import Any

from moto.stepfunctions.parser.asl.component.program import program
from moto.stepfunctions.parser.asl.component.state.exec import execute_state
from moto.stepfunctions.parser.asl.eval.callback import callback
from moto.stepfunctions.parser.backend import execution_worker

from fire_and_forget.rehearsal.clock import VirtualClock


class _ThreadingOnClock(ModuleType):
    """`threading` as the interpreter's modules see it: Event and Thread on the clock, the rest unchanged."""

    def __init__(self, event: type[threading.Event], thread: type[threading.Thread]) -> None:
        super().__init__("threading")
        self.Event = event
        self.Thread = thread

    def __getattr__(self, name: str) -> Any:
        return getattr(threading, name)


class InterpreterTime:
    """Installs the interpreter's clocked waits and tracks its threads (`quiet`)."""

    def __init__(self, clock: VirtualClock) -> None:
        self.clock = clock
        self._threads: set[threading.Thread] = set()
        self._lock = threading.Lock()
        self._originals: list[tuple[ModuleType, str, Any]] = []

    def install(self) -> None:
        clock, threads, lock = self.clock, self._threads, self._lock

        class ClockedEvent(threading.Event):
            def set(self) -> None:
                super().set()
                clock.notify(self)

            def wait(self, timeout: float | None = None) -> bool:
                return clock.wait_for(self.is_set, timeout, about=self)

        class TrackedThread(threading.Thread):
            _finished = False

            def start(self) -> None:
                with lock:
                    threads.add(self)
                super().start()

            def run(self) -> None:
                try:
                    super().run()
                finally:
                    self._finished = True
                    with lock:
                        threads.discard(self)
                    clock.notify(self)

            def join(self, timeout: float | None = None) -> None:
                if clock.wait_for(lambda: self._finished, timeout, about=self):
                    super().join()  # it has left run(): this returns at once

        shim = _ThreadingOnClock(ClockedEvent, TrackedThread)
        self._replace(execute_state, "threading", shim)
        self._replace(execute_state, "Thread", TrackedThread)
        self._replace(program, "threading", shim)
        self._replace(execution_worker, "Thread", TrackedThread)
        # A `.waitForTaskToken` Task waits for its answer, and for each heartbeat, on a callback Event.
        self._replace(callback, "Event", ClockedEvent)

    def uninstall(self) -> None:
        for module, name, original in reversed(self._originals):
            setattr(module, name, original)
        self._originals.clear()

    def owns(self, thread: threading.Thread) -> bool:
        """True for a thread of the interpreter's (an execution's or a Task attempt's), which may wait on the clock."""
        with self._lock:
            return thread in self._threads

    def quiet(self) -> bool:
        """True when every live interpreter thread waits on the clock for something not yet due."""
        with self._lock:
            live = [thread for thread in self._threads if thread.is_alive() or thread.ident is None]
        return all(self.clock.blocked(thread.ident) for thread in live)

    def wait_until_quiet(self, timeout_seconds: float, poll: Callable[[], None] | None = None) -> None:
        """Until `quiet()` (checked with the machine's clock as a guard against waiting forever, not a time limit)."""
        import time

        deadline = time.monotonic() + timeout_seconds
        while not self.quiet():
            if poll is not None:
                poll()
            if time.monotonic() > deadline:
                raise TimeoutError(f"the interpreter was still busy after {timeout_seconds} s")
            time.sleep(0.005)

    def _replace(self, module: ModuleType, name: str, value: Any) -> None:
        self._originals.append((module, name, getattr(module, name)))
        setattr(module, name, value)
