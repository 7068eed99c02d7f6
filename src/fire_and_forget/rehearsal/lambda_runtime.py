"""Runs each deployed function's real handler in-process, reporting errors the way the Lambda runtime does."""

from __future__ import annotations

import functools
import importlib
import io
import json
import os
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from moto.awslambda_simple.models import LambdaSimpleBackend
from moto.core.exceptions import JsonRESTError

from fire_and_forget.rehearsal import function_output
from fire_and_forget.rehearsal.clock import VirtualClock
from fire_and_forget.rehearsal.faults import FaultKind, FaultPlan
from fire_and_forget.rehearsal.quotas import Slots

PATTERN_PACKAGE = "fire_and_forget"
# The parts of the package that are function code (handlers with module state), not shared libraries.
PATTERN_FUNCTION_PARTS = frozenset({"healing", "callbacks"})
# What the Lambda runtime reports when an invocation reaches its function's timeout (invocation-retries.html);
# Step Functions' own documentation names the same case Lambda.Unknown, and the workflows retry both.
TIMED_OUT_ERROR = "Sandbox.Timedout"


@dataclass(frozen=True)
class Invocation:
    """One invocation as the function saw it: which task, the outcome, the error type if any, and when it started on
    the rehearsal's clock (None without one)."""

    task: str
    error_type: str | None
    duration_ms: float
    started_at: datetime | None = None


class _LambdaServiceError(JsonRESTError):
    def __init__(self, code: str, status: int, message: str) -> None:
        super().__init__(code, message)
        self.code = status


class _Context:
    """The LambdaContext fields Powertools reads."""

    def __init__(self, function: Any) -> None:
        self.function_name = function.function_name
        self.function_version = "$LATEST"
        self.invoked_function_arn = function.function_arn
        self.memory_limit_in_mb = int(function.memory_size)
        self.aws_request_id = str(uuid.uuid4())
        self.log_group_name = f"/aws/lambda/{function.function_name}"
        self.log_stream_name = "offline"
        self._deadline = time.monotonic() + float(function.timeout)

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


class LambdaRuntime:
    """Replaces moto's echoing Lambda backend with one that runs the handler named by `Handler`."""

    def __init__(self, assets: dict[str, Path], task_names: dict[str, str], faults: FaultPlan,
                 clock: VirtualClock | None = None, slots: Slots | None = None,
                 waits_here: Callable[[], bool] = lambda: False) -> None:
        # S3 object key of a code asset -> its directory in cdk.out, absolute: a function's modules are told apart by
        # the directory their (absolute) __file__ is in, and a relative one would make every invocation a cold start.
        self._assets = {key: directory.resolve() for key, directory in assets.items()}
        self._task_names = task_names  # physical function name -> task name (the state that calls it)
        self._faults = faults
        # The clock a held invocation's function timeout runs on; without one, it is held until released.
        self._clock = clock
        # The account's concurrency (quotas.py; None: unlimited, and an invocation takes no time on the clock). With
        # it, each invocation holds a slot for `slots.seconds` of the clock, and a caller that `waits_here` (an
        # execution's Task, on an interpreter thread) gets its answer at the end of that time; the rehearsal's own
        # callers (event source mappings, schedules) go on at once while the slot stays held.
        self.slots = slots
        self._waits_here = waits_here
        self._serial = 0  # counts invocations, so that a handler's calls can tell which invocation made them
        self._lock = threading.RLock()  # one invocation at a time: handlers read their settings from os.environ
        self._original_invoke: Any = None
        self.invocations: list[Invocation] = []
        self._invoking: tuple[str, int, int] | None = None  # the task whose handler runs now, its thread, its serial
        self.hanging = threading.Event()  # set while an invocation is held by a HANG fault
        self.hung = 0  # how many invocations a HANG fault has held so far
        self.held_finished = 0  # how many of them have ended: run after their release, or timed out
        self.held_timed_out = 0  # how many of them reached their function's timeout while held
        self._hang_lock = threading.Condition()
        self.log_lines: list[dict[str, Any]] = []
        self.metric_documents: list[dict[str, Any]] = []
        # the asset each of the pattern's own function parts (healing, callbacks) was last imported for
        self._pattern_assets: dict[str, Path] = {}

    @property
    def task_names(self) -> dict[str, str]:
        """Physical function name -> the task (state) that invokes it."""
        return dict(self._task_names)

    def install(self) -> None:
        os.environ["POWERTOOLS_TRACE_DISABLED"] = "true"  # no X-Ray daemon offline
        self._original_invoke = LambdaSimpleBackend.invoke
        runtime = self

        def invoke(backend: Any, function_name: str, qualifier: str | None, body: Any, headers: Any,
                   response_headers: dict[str, str]) -> bytes:
            return runtime.invoke(backend, function_name, qualifier, body, response_headers)

        LambdaSimpleBackend.invoke = invoke  # type: ignore[method-assign,assignment]

    def uninstall(self) -> None:
        if self._original_invoke is not None:
            LambdaSimpleBackend.invoke = self._original_invoke  # type: ignore[method-assign]
            self._original_invoke = None

    def invoke(self, backend: Any, function_name: str, qualifier: str | None, body: Any,
               response_headers: dict[str, str]) -> bytes:
        function = backend.get_function(function_name, qualifier)
        task = self._task_of(function)
        event = json.loads(body) if body else {}
        fault = self._faults.take(task, event)
        if fault is FaultKind.SERVICE_ERROR:
            raise _LambdaServiceError("ServiceException", 500, "Lambda encountered an internal error (injected)")
        if fault is FaultKind.THROTTLE:
            raise _LambdaServiceError("TooManyRequestsException", 429, "Rate exceeded (injected)")
        if fault is FaultKind.HANG:
            return self._held(function, task, event, response_headers)
        clock, slots = self._clock, self.slots
        if clock is None:
            return self._run(function, task, event, fault, response_headers)
        started_at = clock.now()
        if slots is None:
            return self._run(function, task, event, fault, response_headers, started_at)
        if not slots.take(started_at):  # counted in slots.refused
            raise _LambdaServiceError("TooManyRequestsException", 429,
                                      "Rate Exceeded. Reason: ConcurrentInvocationLimitExceeded")
        try:
            return self._run(function, task, event, fault, response_headers, started_at)
        finally:
            if self._waits_here():  # the answer comes at the end of the invocation's duration
                clock.wait_for(lambda: False, slots.seconds)

    def _held(self, function: Any, task: str, event: Any, response_headers: dict[str, str]) -> bytes:
        """A slow invocation: held until released, then it runs (and commits) normally, like a function the
        workflow stopped waiting for. Lambda ends an invocation at its function's timeout whatever its caller does
        (an execution that timed out or was stopped does not stop it): held past that on the clock, it ends
        there with the runtime's timeout error, its handler never having run."""
        with self._hang_lock:
            self.hung += 1
        self.hanging.set()
        timeout = float(function.timeout)
        if self._clock is None:
            released = self._faults.released.wait()
        else:
            released = self._clock.wait_for(self._faults.released.is_set, timeout, about=self._faults.released)
        try:
            if not released:
                with self._hang_lock:
                    self.held_timed_out += 1
                self.invocations.append(Invocation(task, TIMED_OUT_ERROR, timeout * 1000))
                return self._error(response_headers, TIMED_OUT_ERROR,
                                   f"Task timed out after {timeout:.2f} seconds", [])
            return self._run(function, task, event, FaultKind.HANG, response_headers)
        finally:
            with self._hang_lock:
                self.held_finished += 1
                self._hang_lock.notify_all()

    def wait_for_held(self, timeout_seconds: float) -> None:
        """Until every invocation a HANG fault held has run to its end (call after releasing them)."""
        with self._hang_lock:
            if not self._hang_lock.wait_for(lambda: self.held_finished >= self.hung, timeout_seconds):
                raise TimeoutError(f"{self.hung - self.held_finished} held invocations still running")

    def _run(self, function: Any, task: str, event: Any, fault: FaultKind | None,
             response_headers: dict[str, str], started_at: datetime | None = None) -> bytes:
        if fault in (FaultKind.TIMEOUT, FaultKind.CRASH):
            error_type = "Lambda.Unknown" if fault is FaultKind.TIMEOUT else "Runtime.ExitError"
            message = (f"Task timed out after {float(function.timeout):.2f} seconds (injected)"
                       if fault is not FaultKind.CRASH else "Runtime exited with error: exit status 1 (injected)")
            self.invocations.append(Invocation(task, error_type, 0.0, started_at))
            return self._error(response_headers, error_type, message, [])
        with self._in_function(function, task):
            started = time.perf_counter()
            try:
                result = self._handler(function)(event, _Context(function))
            except Exception as error:  # the runtime reports every exception as an unhandled function error
                elapsed = (time.perf_counter() - started) * 1000
                self.invocations.append(Invocation(task, type(error).__name__, elapsed, started_at))
                frames = traceback.format_exception(error)
                return self._error(response_headers, type(error).__name__, str(error), frames)
            self.invocations.append(Invocation(task, None, (time.perf_counter() - started) * 1000, started_at))
        return json.dumps(result).encode("utf-8")

    def call(self, function: Any, event: Any) -> Any:
        """A function's handler run in-process as an invocation runs it (its environment, its context, its logs and
        metrics collected), with nothing of the Lambda API around it: no fault, no record, no service response. What
        an invocation costs this machine at the least (bench/overhead.py); `function` is moto's LambdaFunction."""
        with self._in_function(function, self._task_of(function)):
            return self._handler(function)(event, _Context(function))

    def _task_of(self, function: Any) -> str:
        return self._task_names.get(function.function_name) or str(function.function_name)

    @contextmanager
    def _in_function(self, function: Any, task: str) -> Iterator[None]:
        """One handler at a time, in its function's environment, known as `task`'s; its printed logs and EMF
        metrics collected when it ends, however it ends."""
        with self._lock, self._invocation_environment(function) as output, self._running(task):
            try:
                yield
            finally:
                self._collect(output.getvalue())

    @staticmethod
    def _error(response_headers: dict[str, str], error_type: str, message: str, trace: list[str]) -> bytes:
        # What the Lambda runtime returns for an unhandled exception; Step Functions reads errorType as the error.
        response_headers["x-amz-function-error"] = "Unhandled"
        return json.dumps({"errorType": error_type, "errorMessage": message, "stackTrace": trace}).encode("utf-8")

    def invoking(self) -> str | None:
        """The task whose handler is making the calling thread's request, if a handler is: tells the functions'
        own requests from the emulators' (bench/idle.py counts what the functions ask of SQS)."""
        running = self._invoking
        return running[0] if running and running[1] == threading.get_ident() else None

    def invocation(self) -> int | None:
        """Which invocation (a serial number) is making the calling thread's request, if a handler is: tells apart
        the calls of two invocations (fire_and_forget/rehearsal/transactions.py, ItemContention)."""
        running = self._invoking
        return running[2] if running and running[1] == threading.get_ident() else None

    @contextmanager
    def _running(self, task: str) -> Iterator[None]:
        self._serial += 1
        self._invoking = (task, threading.get_ident(), self._serial)
        try:
            yield
        finally:
            self._invoking = None

    @contextmanager
    def _invocation_environment(self, function: Any) -> Iterator[io.StringIO]:
        # What the Lambda runtime adds to every function's environment.
        wanted = {**(function.environment_vars or {}), "AWS_LAMBDA_FUNCTION_NAME": function.function_name,
                  "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(function.memory_size), "AWS_REGION": function.region,
                  "AWS_DEFAULT_REGION": function.region}
        # Only these keys are set and put back: other threads (the pipe, other executions) keep reading a whole
        # environment, never an emptied one (os.environ.clear() would leave them without credentials or region).
        saved = {key: os.environ.get(key) for key in wanted}
        os.environ.update(wanted)
        # Its EMF metrics (print()ed) and its logs go to this invocation's buffer, without swapping the process's
        # stdout under the other threads (fire_and_forget/rehearsal/function_output.py).
        function_output.route_log_handlers()
        try:
            with function_output.capture() as output:
                yield output
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value

    def _handler(self, function: Any) -> Any:
        asset = self._assets[function.code["S3Key"]]
        module_name, attribute = function.handler.rsplit(".", 1)
        _use_asset(asset, module_name.split(".")[0])
        part = module_name.split(".")[1] if module_name.startswith(f"{PATTERN_PACKAGE}.") else None
        if part in PATTERN_FUNCTION_PARTS and self._pattern_assets.get(part) != asset:
            # A cold start: the pattern's functions (the Reconciler, the Redriver, a callback entry point) read their
            # Logger's and Metrics' names from the environment at import, which differs from one function to
            # another's, and from whatever imported the module before this rehearsal (a test).
            _forget_pattern_functions(part)
            self._pattern_assets[part] = asset
        handler = getattr(importlib.import_module(module_name), attribute)
        function_output.route_log_handlers()  # the loggers its import created write to its invocations' output too
        return handler

    def _collect(self, output: str) -> None:
        for line in output.splitlines():
            try:
                document = json.loads(line)
            except ValueError:
                continue
            if isinstance(document, dict) and "_aws" in document:
                self.metric_documents.append(document)
            elif isinstance(document, dict):
                self.log_lines.append(document)


def _use_asset(asset: Path, top_package: str) -> None:
    """Import the handler from the function's own asset directory, as the Lambda runtime does.

    Modules of the same name imported from elsewhere (the tests import `lambdas/` directly) are dropped first,
    so the code that runs is the code that was packaged. The pattern's own package is the exception: the rehearsal
    itself runs from it, and one process holds one `fire_and_forget`, so a handler's `fire_and_forget.runtime` (and
    the healing functions' `fire_and_forget.healing`) come from the installed package the asset was copied from at
    synth. That each asset holds all it imports is proven apart (tests/infra/test_lambda_assets.py).
    """
    root = str(asset)
    if sys.path[:1] != [root]:
        if root in sys.path:
            sys.path.remove(root)
        sys.path.insert(0, root)
    packages = (_packages_of(asset) | {top_package}) - {PATTERN_PACKAGE}
    if _ASSET_MODULES.unchanged(root, packages):
        return
    kept = {}
    for name, module in list(sys.modules.items()):
        if name.partition(".")[0] in packages:
            if (getattr(module, "__file__", None) or "").startswith(root):
                kept[name] = module
            else:
                del sys.modules[name]
    _ASSET_MODULES.record(root, packages, kept)


class _AssetModules:
    """What the last sweep of `sys.modules` left for one asset, so that the next invocation of the same asset skips
    the sweep (a pass over every module of the process, thousands in a test worker) when nothing was imported,
    removed or replaced since: a name added or removed changes the dictionary's length or its last entry (a name
    inserted again goes to the end), and a kept module replaced under its name is seen by its identity."""

    def __init__(self) -> None:
        self._swept: tuple[str, frozenset[str]] | None = None
        self._kept: dict[str, Any] = {}
        self._fingerprint: tuple[int, str, int] | None = None

    @staticmethod
    def _now() -> tuple[int, str, int]:
        last = next(reversed(sys.modules))
        return len(sys.modules), last, id(sys.modules.get(last))

    def unchanged(self, root: str, packages: frozenset[str]) -> bool:
        return (self._swept == (root, packages) and self._fingerprint == self._now()
                and all(sys.modules.get(name) is module for name, module in self._kept.items()))

    def record(self, root: str, packages: frozenset[str], kept: dict[str, Any]) -> None:
        self._swept, self._kept, self._fingerprint = (root, packages), kept, self._now()


_ASSET_MODULES = _AssetModules()


@functools.cache
def _packages_of(asset: Path) -> frozenset[str]:
    """The packages an asset directory holds: read once, as a synthesized asset never changes (its name is its
    hash)."""
    return frozenset(path.name for path in asset.iterdir() if path.is_dir())


def _forget_pattern_functions(part: str) -> None:
    """Drop the modules of one of the pattern's function parts (never `runtime`, which the rehearsal shares with the
    handlers), so that the next import runs their module code again, as a new execution environment does."""
    for name in list(sys.modules):
        parts = name.split(".")
        if parts[0] == PATTERN_PACKAGE and len(parts) > 1 and parts[1] == part:
            del sys.modules[name]
