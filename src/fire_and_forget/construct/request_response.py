"""The pipeline's two modes, and what REQUEST_RESPONSE needs: an Express workflow the pipe waits for, whose recovery is
the source queue's (visibility timeout, maxReceiveCount, source DLQ). The AWS rules: docs/design.md, "The pipe in
REQUEST_RESPONSE mode: an Express workflow, and the queue as the safety net"."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Any, Literal

from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_stepfunctions as sfn

from fire_and_forget.construct.longest_run import longest_run
from fire_and_forget.construct.settings import PipelineSettings

InvocationType = Literal["FIRE_AND_FORGET", "REQUEST_RESPONSE"]
FIRE_AND_FORGET: InvocationType = "FIRE_AND_FORGET"
REQUEST_RESPONSE: InvocationType = "REQUEST_RESPONSE"

# Express workflows run at most 5 minutes (Step Functions quotas, service-quotas.html).
EXPRESS_MAX_SECONDS = 300
# AWS's guidance for a queue a poller invokes a target from synchronously: a visibility timeout of at least six
# times the target's timeout, so that the poller can retry a throttled invocation before the message reappears
# (Lambda, services-sqs-configure.html; the Pipes SQS page gives no number of its own).
VISIBILITY_MULTIPLE = 6
# FIRE_AND_FORGET's hand-over takes well under a second (docs/design.md, "Source queue: sizes, visibility timeout").
FIRE_AND_FORGET_VISIBILITY_SECONDS = 300
# Lambda's default when a function sets none (API_CreateFunction.html).
DEFAULT_LAMBDA_TIMEOUT = 3
# Integration patterns Express workflows do not support: they run Request Response only (integrate-optimized.html).
EXPRESS_UNSUPPORTED_PATTERNS = (".sync", ".waitForTaskToken")

RETURNED_TAIL_FILE = Path(__file__).resolve().parent / "asl" / "returned_tail.asl.json"
FAILURE_RETURNED_TO_QUEUE = "FailureReturnedToQueue"
# Where every successful end of the workflow goes in this mode: the claim records that the message was processed.
DELIVERY_COMPLETED = "DeliveryCompleted"
# The tail states a workflow refers to by name (its Catch paths, its DuplicateDelivery Catch): the workflow must not
# define them itself.
ENTRY_STATES = ("ClaimFailure", "DuplicateDeliveryIgnored")


class ExpressWorkflowError(ValueError):
    """The workflow cannot run as an Express workflow the pipe waits for; says what to change."""


class TimeoutMismatch(ValueError):
    """Two timeouts disagree so that a message would be processed twice, or a task would outlive its workflow."""


def workflow_type(invocation_type: InvocationType) -> sfn.StateMachineType:
    """FIRE_AND_FORGET runs a Standard workflow; REQUEST_RESPONSE an Express one (the pipe waits only for Express)."""
    return sfn.StateMachineType.EXPRESS if invocation_type == REQUEST_RESPONSE else sfn.StateMachineType.STANDARD


def workflow_timeout_seconds(settings: PipelineSettings, invocation_type: InvocationType) -> int:
    """The workflow's TimeoutSeconds in this mode."""
    if invocation_type == REQUEST_RESPONSE:
        return settings.express_timeout_seconds
    return settings.execution_timeout_minutes * 60


def visibility_timeout_seconds(settings: PipelineSettings, invocation_type: InvocationType,
                               workflow_timeout: int) -> int:
    """The source queue's visibility timeout: the configured one, or the mode's.

    In REQUEST_RESPONSE the pipe holds a message as long as its execution runs: the default is six times the
    workflow's TimeoutSeconds, and a configured one shorter than the workflow can run is refused, since the message
    would reappear and start a second execution while the first still runs.
    """
    configured = settings.source_visibility_timeout_seconds
    if invocation_type != REQUEST_RESPONSE:
        return configured if configured is not None else FIRE_AND_FORGET_VISIBILITY_SECONDS
    if configured is None:
        return VISIBILITY_MULTIPLE * workflow_timeout
    if configured < workflow_timeout:
        raise TimeoutMismatch(
            f"sourceVisibilityTimeoutSeconds {configured} is shorter than the Express workflow can run "
            f"({workflow_timeout} s, expressTimeoutSeconds): in REQUEST_RESPONSE the message would become visible "
            "again and start a second execution while the first still runs. Leave it unset (six times the workflow's "
            f"timeout, {VISIBILITY_MULTIPLE * workflow_timeout} s) or set at least {workflow_timeout}."
        )
    return configured


def check_express_definition(definition: Mapping[str, Any], source: str = "the workflow") -> None:
    """Refuse a definition Step Functions would not run as an Express workflow, or that could outrun it."""
    timeout = definition.get("TimeoutSeconds")
    problems = []
    if not isinstance(timeout, int):
        problems.append("it has no TimeoutSeconds: an Express workflow the pipe waits for must say how long it may "
                        f"run, at most {EXPRESS_MAX_SECONDS} s")
    elif timeout > EXPRESS_MAX_SECONDS:
        problems.append(f"its TimeoutSeconds {timeout} is over Express's {EXPRESS_MAX_SECONDS} s")
    for name, state in _all_states(definition):
        resource = str(state.get("Resource", ""))
        if state.get("Type") == "Task" and resource.endswith(EXPRESS_UNSUPPORTED_PATTERNS):
            problems.append(f"Task {name!r} uses {resource}: Express workflows support Request Response integrations "
                            "only")
    if problems:
        raise ExpressWorkflowError(f"{source} cannot run as an Express workflow (REQUEST_RESPONSE): "
                                   + "; ".join(problems) + ".")


def check_timeouts(definition: Mapping[str, Any], functions: Mapping[str, lambda_.Function],
                   source: str = "the workflow") -> None:
    """Refuse a Task timeout or a Lambda timeout longer than the whole workflow's: the workflow would end first,
    uncaught, while the task or the invocation still runs (and may still commit)."""
    workflow_timeout = definition.get("TimeoutSeconds")
    if not isinstance(workflow_timeout, int):
        return
    problems = [f"Task {name!r} TimeoutSeconds {state['TimeoutSeconds']}"
                for name, state in _all_states(definition)
                if state.get("Type") == "Task" and isinstance(state.get("TimeoutSeconds"), int)
                and state["TimeoutSeconds"] > workflow_timeout]
    problems += [f"the Lambda function of {state!r} ({seconds} s)"
                 for state, function in functions.items()
                 if function is not None and (seconds := lambda_timeout_seconds(function)) > workflow_timeout]
    if problems:
        raise TimeoutMismatch(f"{source}: {', '.join(problems)} longer than the workflow's TimeoutSeconds "
                              f"{workflow_timeout}: the execution would time out, uncaught, while it still runs. "
                              "Shorten the task or raise the workflow's timeout.")


def check_longest_run(definition: Mapping[str, Any], functions: Mapping[str, lambda_.Function | None],
                      source: str = "the workflow") -> None:
    """Refuse an Express workflow whose longest run (longest_run.py: every attempt of every task to its limit, every
    Retry wait at its longest) can outlast its TimeoutSeconds: the execution would be stopped, caught by nothing,
    with its steps' work left as it was."""
    workflow_timeout = definition.get("TimeoutSeconds")
    if not isinstance(workflow_timeout, int):
        return  # check_express_definition refuses it
    timeouts = {state: lambda_timeout_seconds(function) for state, function in functions.items()
                if function is not None}
    run = longest_run(definition, timeouts)
    if run.seconds is not None and run.seconds <= workflow_timeout:
        return
    how_long = f"runs without bound ({run.unbounded_by})" if run.seconds is None else \
        f"can run {run.seconds:.0f} s ({' -> '.join(run.path)}: every attempt of each task to its timeout, every " \
        "Retry wait at its longest)"
    raise TimeoutMismatch(
        f"{source}: in REQUEST_RESPONSE its Express workflow {how_long}, longer than its TimeoutSeconds "
        f"{workflow_timeout} (expressTimeoutSeconds): an execution stopped at its timeout is caught by nothing (no "
        "Catch, no status-change event), and what its steps did stays undone. Shorten the tasks' timeouts "
        "(taskTimeoutSeconds) or their retries (retry), or raise expressTimeoutSeconds up to "
        f"{EXPRESS_MAX_SECONDS}; a workflow that needs longer runs in FIRE_AND_FORGET.")


def lambda_timeout_seconds(function: lambda_.Function) -> int:
    """How long one invocation of the function may run."""
    return int(function.timeout.to_seconds()) if function.timeout is not None else DEFAULT_LAMBDA_TIMEOUT


@cache
def _returned_tail_text() -> str:
    return RETURNED_TAIL_FILE.read_text(encoding="utf-8")


def returned_tail() -> dict[str, Any]:
    """The REQUEST_RESPONSE tail's states (a fresh copy each call)."""
    tail: dict[str, Any] = json.loads(_returned_tail_text())
    return dict(tail["States"])


def with_returned_tail(definition: dict[str, Any], source: str = "the workflow") -> dict[str, Any]:
    """The workflow's states followed by the REQUEST_RESPONSE tail's: ClaimFailure releases the delivery claim and
    the execution fails with the failed state's error, so that the message goes back to the queue; every successful
    end of the workflow goes through DeliveryCompleted, which marks the claim, so that a later receive of the same
    message is absorbed as a duplicate of a completed delivery."""
    tail = returned_tail()
    taken = sorted(set(definition["States"]) & (set(tail) - set(ENTRY_STATES)))
    if taken:
        raise ExpressWorkflowError(f"{source}: states {', '.join(taken)} bear names of the REQUEST_RESPONSE tail: "
                                   "rename them")
    merged = dict(definition)
    merged["States"] = {**{name: _completing(state) for name, state in definition["States"].items()}, **tail}
    return merged


def _completing(state: dict[str, Any]) -> dict[str, Any]:
    """A top-level state that would end the execution successfully, sent to DeliveryCompleted instead: an `End`
    becomes `Next`, a Succeed state a Pass with the same paths (a Fail state, and states inside Parallel branches or
    Map processors, end only their own branch, and stay)."""
    if state.get("Type") == "Succeed":
        return {**state, "Type": "Pass", "Next": DELIVERY_COMPLETED}
    if state.get("End") is True:
        completing = {key: value for key, value in state.items() if key != "End"}
        return {**completing, "Next": DELIVERY_COMPLETED}
    return state


def _all_states(definition: Mapping[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every state, inside Parallel branches and Map item processors too."""
    for name, state in definition.get("States", {}).items():
        yield name, state
        for machine in [*state.get("Branches", []), *(state[key] for key in ("ItemProcessor", "Iterator")
                                                      if isinstance(state.get(key), dict))]:
            yield from _all_states(machine)
