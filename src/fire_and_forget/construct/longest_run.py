"""How long a workflow can run at most, read from its definition: the bound an Express workflow must stay under.

An Express execution the pipe waits for (REQUEST_RESPONSE) that reaches its TimeoutSeconds is stopped, and nothing
catches that: a Catch sees a state's errors, not the execution's own timeout, and Express workflows send no
status-change events, so no rule and no Reconciler hears of it (docs/design.md, "The pipe in REQUEST_RESPONSE mode").
Whatever its steps had done stays as it was, uncompensated. The construct therefore refuses, at synth, a workflow
whose longest run can exceed its TimeoutSeconds.

The bound follows every path from StartAt to an end and takes the longest, counting per state:
- a Task: every attempt running to its limit, and every Retry wait at its longest. An attempt's limit is the state's
  TimeoutSeconds, or, for a Lambda task without one, the function's own timeout (Lambda stops the invocation); a
  Task with neither is unbounded (Step Functions' default Task timeout is 99,999,999 s: state-task.html,
  sfn-stuck-execution.html). Each retrier keeps its own count, so errors that alternate between retriers can spend
  all of them: 1 + the sum of every retrier's MaxAttempts attempts. The exception is a retrier that names only
  refusals (REFUSED_BEFORE_RUNNING: Lambda's throttle, 429, returned at once without running the function:
  lambda-concurrency.html): an attempt it retries ended at once, so its attempts add their waits, not their limit.
  A retrier's n-th wait is IntervalSeconds x BackoffRate^(n-1), capped by MaxDelaySeconds; FULL jitter only
  shortens it (defaults 1 s, 3 attempts, rate 2.0: concepts-error-handling.html);
- a Parallel state: its longest branch, per attempt, with its own Retry; a Wait state: its Seconds;
- a Map state, a Wait on a path or a timestamp, a TimeoutSecondsPath, and a cycle: unbounded (nothing in the
  definition bounds them);
- Pass, Choice, Succeed, Fail: nothing. From a Task or a Parallel state every Catch target is a way on, as is Next;
  from a Choice every rule's Next and its Default.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# A retrier's fields when it leaves them out (concepts-error-handling.html).
DEFAULT_INTERVAL_SECONDS = 1
DEFAULT_MAX_ATTEMPTS = 3
DEFAULT_BACKOFF_RATE = 2.0
# Errors of a call refused before the work ran, at once: an attempt that ends in one takes no time to speak of.
REFUSED_BEFORE_RUNNING = frozenset({"Lambda.TooManyRequestsException"})


@dataclass(frozen=True)
class LongestRun:
    """The longest a definition can run, in seconds, and the states of that run; `seconds` is None when nothing
    bounds it, and `unbounded_by` then says what."""

    seconds: float | None
    path: tuple[str, ...]
    unbounded_by: str | None = None


class _Unbounded(Exception):  # noqa: N818 - a signal inside this module, never raised out of it
    def __init__(self, path: tuple[str, ...], why: str) -> None:
        super().__init__(why)
        self.path, self.why = path, why


def retry_waits_seconds(retriers: list[dict[str, Any]]) -> float:
    """Every wait of every retrier, each at its longest."""
    total = 0.0
    for retrier in retriers:
        interval = float(retrier.get("IntervalSeconds", DEFAULT_INTERVAL_SECONDS))
        rate = float(retrier.get("BackoffRate", DEFAULT_BACKOFF_RATE))
        cap = retrier.get("MaxDelaySeconds")
        for attempt in range(int(retrier.get("MaxAttempts", DEFAULT_MAX_ATTEMPTS))):
            wait = interval * rate ** attempt
            total += min(wait, float(cap)) if cap is not None else wait
    return total


def attempts(retriers: list[dict[str, Any]]) -> int:
    """The first attempt and every retry of every retrier that can follow an attempt that ran to its limit (a
    retrier of refusals only retries attempts that ended at once)."""
    return 1 + sum(int(retrier.get("MaxAttempts", DEFAULT_MAX_ATTEMPTS)) for retrier in retriers
                   if not set(retrier.get("ErrorEquals", [])) <= REFUSED_BEFORE_RUNNING)


def longest_run(definition: Mapping[str, Any], function_timeouts: Mapping[str, int]) -> LongestRun:
    """The longest run of `definition`; `function_timeouts` gives the timeout of each Lambda task's function, by
    state name, for the tasks that set no TimeoutSeconds of their own."""
    try:
        seconds, path = _Walk(definition, function_timeouts).longest(str(definition["StartAt"]), ())
    except _Unbounded as unbounded:
        return LongestRun(None, unbounded.path, unbounded.why)
    return LongestRun(seconds, path)


class _Walk:
    def __init__(self, definition: Mapping[str, Any], function_timeouts: Mapping[str, int]) -> None:
        self.states: Mapping[str, dict[str, Any]] = definition["States"]
        self.function_timeouts = function_timeouts
        self.memo: dict[str, tuple[float, tuple[str, ...]]] = {}

    def longest(self, name: str, before: tuple[str, ...]) -> tuple[float, tuple[str, ...]]:
        if name in before:
            raise _Unbounded((*before, name), f"the states {' -> '.join((*before[before.index(name):], name))} "
                                              "form a loop")
        if name in self.memo:
            return self.memo[name]
        state = self.states[name]
        here = (*before, name)
        own = self._own_seconds(name, state, here)
        best: tuple[float, tuple[str, ...]] = (0.0, ())
        for following in _following(state):
            seconds, path = self.longest(following, here)
            if seconds > best[0] or not best[1]:
                best = (seconds, path)
        result = (own + best[0], (name, *best[1]))
        self.memo[name] = result
        return result

    def _own_seconds(self, name: str, state: dict[str, Any], here: tuple[str, ...]) -> float:
        kind = state.get("Type")
        retriers = list(state.get("Retry", []))
        if kind == "Task":
            if "TimeoutSecondsPath" in state:
                raise _Unbounded(here, f"Task {name!r} takes its timeout from its input (TimeoutSecondsPath)")
            limit = state.get("TimeoutSeconds", self.function_timeouts.get(name))
            if limit is None:
                raise _Unbounded(here, f"Task {name!r} has no TimeoutSeconds and no function timeout bounds it")
            return attempts(retriers) * float(limit) + retry_waits_seconds(retriers)
        if kind == "Parallel":
            branches = [longest_run(branch, self.function_timeouts) for branch in state.get("Branches", [])]
            for branch in branches:
                if branch.seconds is None:
                    raise _Unbounded((*here, *branch.path), f"in Parallel {name!r}: {branch.unbounded_by}")
            slowest = max((branch.seconds or 0.0 for branch in branches), default=0.0)
            return attempts(retriers) * slowest + retry_waits_seconds(retriers)
        if kind == "Map":
            raise _Unbounded(here, f"Map {name!r}: the number of its iterations is not in the definition")
        if kind == "Wait":
            if "Seconds" not in state:
                raise _Unbounded(here, f"Wait {name!r} waits for a time taken from its input or a timestamp")
            return float(state["Seconds"])
        return 0.0


def _following(state: dict[str, Any]) -> list[str]:
    """The states a run can go to next from `state`."""
    ways = [str(state["Next"])] if "Next" in state else []
    ways += [str(catcher["Next"]) for catcher in state.get("Catch", [])]
    if state.get("Type") == "Choice":
        ways += [str(rule["Next"]) for rule in state.get("Choices", [])]
        if "Default" in state:
            ways.append(str(state["Default"]))
    return list(dict.fromkeys(ways))
