"""An explorer of interleavings: several attempts of ONE order run step by step through the real handlers and tables.

Every execution is driven by the ASL itself (Retry, Catch, ResultPath, the compensation chain and ClaimFailure's
conditional update are read from statemachines/order_saga.asl.json). Each Lambda invocation and ClaimFailure's DynamoDB
call is one atomic step; the states that touch nothing another execution reads (Pass, HandleFailure, the alert,
Succeed, Fail) run eagerly after it. At every step the explorer may choose any execution that can move, and may inject
one fault into that step. Every schedule is explored once, depth first, restarting each alternative from a
snapshot of the tables. After each run, `tests.handlers.books` checks the books from the raw tables.
"""

from __future__ import annotations

import copy
import io
import json
import logging
from collections.abc import Callable, Iterator
from contextlib import redirect_stdout
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from botocore.exceptions import ClientError


def order_states() -> dict[str, Any]:
    """The order saga's states as deployed with the default config: its own and the pipeline's failure tail."""
    from stacks.config import AppConfig
    from stacks.orders.stack import render_definition

    states: dict[str, Any] = render_definition(AppConfig())["States"]
    return states
LOCAL = {"Pass", "Succeed", "Fail"}
# Task states whose effects no other execution reads: run eagerly, never an interleaving point.
EAGER_TASKS = {"HandleFailure", "NotifyFailure"}


class Fault(StrEnum):
    """What can strike one step."""

    THROTTLE = "throttle"  # fails before the handler ran; retried
    CRASH = "crash"  # fails before the handler ran with an error no retrier lists; caught at once
    LOST = "lost"  # the handler ran (its writes committed), the response was lost (Lambda.Unknown); retried
    LOST_CRASH = "lost-crash"  # the handler ran, then the function crashed; caught at once
    EXHAUST = "exhaust"  # every remaining retry throttled before the handler ran; caught


FAULT_ERRORS = {
    Fault.THROTTLE: "Lambda.TooManyRequestsException",
    Fault.CRASH: "Runtime.ExitError",
    Fault.LOST: "Lambda.Unknown",
    Fault.LOST_CRASH: "Runtime.ExitError",
    Fault.EXHAUST: "Lambda.TooManyRequestsException",
}
DYNAMODB_FAULT_ERRORS = {
    Fault.THROTTLE: "DynamoDB.ProvisionedThroughputExceededException",
    Fault.LOST: "States.Timeout",
    Fault.EXHAUST: "DynamoDB.ProvisionedThroughputExceededException",
}


@dataclass(frozen=True)
class Attempt:
    """One execution of one SQS message. `after_failure_of`: a redrive copy, sent once that message is in the DLQ."""

    label: str
    message_id: str
    body: dict[str, Any]
    after_failure_of: str | None = None

    @property
    def record(self) -> dict[str, Any]:
        return {
            "messageId": self.message_id,
            "body": json.dumps(self.body),
            "attributes": {},
            "messageAttributes": {},
            "eventSource": "aws:sqs",
        }


@dataclass
class Execution:
    attempt: Attempt
    arn: str
    state: str
    data: Any = None
    tries: dict[int, int] = field(default_factory=dict)
    end: str | None = None  # the terminal state (or "Uncaught:<state>")
    started: bool = False


@dataclass
class Run:
    """What one schedule produced, for the books."""

    executions: list[Execution]
    dlq: list[dict[str, Any]]
    announcements: list[str]  # execution ARNs announced
    faults: list[tuple[str, str, Fault]]
    schedule: list[tuple[int, Fault | None]]


class TaskError(Exception):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


class World:
    """One run: the executions of a scenario, over the account's tables (emptied and stocked by `reset`)."""

    def __init__(
        self,
        states: dict[str, Any],
        handlers: dict[str, Callable[..., Any]],
        substitutions: dict[str, str],
        client: Any,
        lambda_context: Any,
        attempts: list[Attempt],
    ) -> None:
        self.states = states
        self.handlers = handlers
        self.substitutions = substitutions
        self.client = client
        self.context = lambda_context
        start = "ReserveInventory"
        self.executions = [
            Execution(a, f"arn:aws:states:us-east-1:123456789012:execution:OrderSaga:{a.label}", start)
            for a in attempts
        ]
        self.dlq: list[dict[str, Any]] = []
        self.announcements: list[str] = []
        self.faults: list[tuple[str, str, Fault]] = []

    # -- choices -----------------------------------------------------------------------------------------------

    def movable(self) -> list[int]:
        failed = {entry["record"]["messageId"] for entry in self.dlq}
        return [
            index
            for index, execution in enumerate(self.executions)
            if execution.end is None
            and (execution.attempt.after_failure_of is None or execution.attempt.after_failure_of in failed)
        ]

    def faults_for(self, index: int) -> list[Fault]:
        state = self.states[self.executions[index].state]
        if state["Resource"].endswith(":lambda:invoke"):
            return list(Fault)
        return [Fault.THROTTLE, Fault.LOST, Fault.EXHAUST]

    # -- one step ----------------------------------------------------------------------------------------------

    def step(self, index: int, fault: Fault | None) -> None:
        execution = self.executions[index]
        execution.started = True
        if fault is not None:
            self.faults.append((execution.attempt.label, execution.state, fault))
        name = execution.state
        state = self.states[name]
        try:
            if fault is Fault.EXHAUST:
                self._exhaust(execution, state, fault)
                return
            result = self._invoke(execution, name, state, fault)
        except TaskError as error:
            self._fail(execution, state, error.name)
        else:
            execution.tries = {}
            self._succeed(execution, state, result)
        self._run_local(execution)

    def _exhaust(self, execution: Execution, state: dict[str, Any], fault: Fault) -> None:
        error = self._fault_error(state, fault)
        while execution.state is not None and self.states[execution.state] is state and execution.end is None:
            if not self._fail(execution, state, error):
                break
        self._run_local(execution)

    def _fault_error(self, state: dict[str, Any], fault: Fault) -> str:
        lambda_task = state["Resource"].endswith(":lambda:invoke")
        return FAULT_ERRORS[fault] if lambda_task else DYNAMODB_FAULT_ERRORS[fault]

    def _invoke(self, execution: Execution, name: str, state: dict[str, Any], fault: Fault | None) -> Any:
        if fault in (Fault.THROTTLE, Fault.CRASH):
            raise TaskError(self._fault_error(state, fault))
        parameters = self._evaluate(state["Parameters"], execution)
        if state["Resource"].endswith(":lambda:invoke"):
            result = self._lambda(name, parameters["Payload"])
        elif state["Resource"].endswith(":dynamodb:updateItem"):
            result = self._update_item(parameters)
        else:
            raise AssertionError(f"the explorer does not model {state['Resource']} in {name}")
        if fault in (Fault.LOST, Fault.LOST_CRASH):
            raise TaskError(self._fault_error(state, fault))
        return result

    def _lambda(self, name: str, payload: Any) -> Any:
        handler = self.handlers[name]
        try:
            with redirect_stdout(io.StringIO()):
                result = handler(json.loads(json.dumps(payload)), self.context)
        except Exception as error:  # Lambda reports every exception as errorType
            raise TaskError(type(error).__name__) from None
        return {"Payload": json.loads(json.dumps(result))}

    def _update_item(self, parameters: dict[str, Any]) -> Any:
        try:
            self.client.update_item(**parameters)
        except ClientError as error:
            raise TaskError(f"DynamoDB.{error.response['Error']['Code']}") from None
        return {}

    # -- retry, catch, paths ---------------------------------------------------------------------------------

    def _fail(self, execution: Execution, state: dict[str, Any], error: str) -> bool:
        """Apply Retry then Catch; True when the state will be retried."""
        for position, retrier in enumerate(state.get("Retry", [])):
            if _matches(retrier["ErrorEquals"], error):
                used = execution.tries.get(position, 0)
                if used < retrier.get("MaxAttempts", 3):
                    execution.tries[position] = used + 1
                    return True
                break
        execution.tries = {}
        for catcher in state.get("Catch", []):
            if _matches(catcher["ErrorEquals"], error):
                output = {"Error": error, "Cause": f"injected or raised: {error}"}
                execution.data = _apply_result_path(execution.data, catcher.get("ResultPath", "$"), output)
                execution.state = catcher["Next"]
                return False
        execution.end = f"Uncaught:{execution.state}"
        return False

    def _succeed(self, execution: Execution, state: dict[str, Any], result: Any) -> None:
        if "ResultSelector" in state:
            result = self._evaluate(state["ResultSelector"], execution, result)
        if "OutputPath" in state:
            result = _path(result, state["OutputPath"])
            execution.data = result
        else:
            execution.data = _apply_result_path(execution.data, state.get("ResultPath", "$"), result)
        self._next(execution, state)

    def _next(self, execution: Execution, state: dict[str, Any]) -> None:
        if state.get("End"):
            execution.end = execution.state
        else:
            execution.state = state["Next"]

    def _run_local(self, execution: Execution) -> None:
        while execution.end is None:
            name = execution.state
            state = self.states[name]
            kind = state["Type"]
            if kind in ("Succeed", "Fail"):
                execution.end = name
            elif kind == "Choice":
                execution.state = self._choose(state, execution)
            elif kind == "Pass":
                if "Parameters" in state and state.get("ResultPath", "$") == "$":
                    execution.data = self._evaluate(state["Parameters"], execution)
                self._next(execution, state)
            elif name in EAGER_TASKS:
                self._eager(execution, name)
                self._next(execution, state)
            else:
                return

    def _choose(self, state: dict[str, Any], execution: Execution) -> str:
        """The Next of the first Choice rule that matches (the tail's AnnounceUnlessRetried), else the Default."""
        for rule in state.get("Choices", []):
            if self._holds(rule, execution):
                return str(rule["Next"])
        return str(state["Default"])

    def _holds(self, rule: dict[str, Any], execution: Execution) -> bool:
        """The Choice operators the failure tail uses: And, Or, Not, IsPresent, StringEquals, BooleanEquals."""
        if "And" in rule:
            return all(self._holds(r, execution) for r in rule["And"])
        if "Or" in rule:
            return any(self._holds(r, execution) for r in rule["Or"])
        if "Not" in rule:
            return not self._holds(rule["Not"], execution)
        try:
            value = self._resolve(rule["Variable"], execution, execution.data)
        except KeyError:  # a path that is absent: only IsPresent may test it (AWS: States.Runtime otherwise)
            value = None
        if "IsPresent" in rule:
            return (value is not None) is rule["IsPresent"]
        if "StringEquals" in rule:
            return isinstance(value, str) and value == rule["StringEquals"]
        if "BooleanEquals" in rule:
            return isinstance(value, bool) and value is rule["BooleanEquals"]
        raise AssertionError(f"the explorer does not model the Choice rule {rule}")

    def _eager(self, execution: Execution, name: str) -> None:
        data = execution.data
        if name == "HandleFailure":
            self.dlq.append(
                {
                    "record": execution.attempt.record,
                    "failure": data["failure"],
                    "manualRepair": data["manualRepair"],
                    "executionArn": execution.arn,
                }
            )
        else:
            self.announcements.append(execution.arn)

    def _evaluate(self, template: Any, execution: Execution, data: Any = None) -> Any:
        source = execution.data if data is None else data
        if isinstance(template, dict):
            evaluated = {}
            for key, value in template.items():
                if key.endswith(".$"):
                    evaluated[key[:-2]] = self._resolve(value, execution, source)
                else:
                    evaluated[key] = self._evaluate(value, execution, data)
            return evaluated
        if isinstance(template, list):
            return [self._evaluate(item, execution, data) for item in template]
        if isinstance(template, str) and "${" in template:
            for placeholder, value in self.substitutions.items():
                template = template.replace("${" + placeholder + "}", value)
        return template

    def _resolve(self, expression: str, execution: Execution, source: Any) -> Any:
        if expression == "$$.Execution.Id":
            return execution.arn
        if expression.startswith("States.ArrayGetItem($$.Execution.Input[*]."):
            field_name = expression.removeprefix("States.ArrayGetItem($$.Execution.Input[*].").removesuffix(", 0)")
            return execution.attempt.record[field_name]
        if expression.startswith("$$.Execution.Input[0]"):
            return _path(execution.attempt.record, "$" + expression.removeprefix("$$.Execution.Input[0]"))
        if expression.startswith("$"):
            return _path(source, expression)
        return None  # an intrinsic function: only the alert's text uses them, and the books do not read it


def _matches(names: list[str], error: str) -> bool:
    return error in names or ("States.ALL" in names and error != "States.Runtime")


def _path(data: Any, path: str) -> Any:
    value = data
    for part in [p for p in path.removeprefix("$").split(".") if p]:
        value = value[part] if isinstance(value, dict) else None
    return copy.deepcopy(value)


def _apply_result_path(data: Any, path: str | None, result: Any) -> Any:
    if path is None:
        return data
    if path == "$":
        return result
    updated = copy.deepcopy(data) if isinstance(data, dict) else {}
    target = updated
    parts = path.removeprefix("$.").split(".")
    for part in parts[:-1]:
        target = target.setdefault(part, {})
    target[parts[-1]] = result
    return updated


# THROTTLE only delays a step, which another schedule already explores, and CRASH routes exactly like EXHAUST (caught
# by States.ALL before the handler ran): the suite explores the three faults that lead somewhere new.
DISTINCT_FAULTS = (Fault.EXHAUST, Fault.LOST_CRASH, Fault.LOST)


class Explorer:
    """Runs every schedule of a world with at most `max_faults` faults; calls `check(run)` after each.

    Depth first; at a branching point the tables (moto's items) and the executions are snapshotted, and each
    alternative restarts from the snapshot, so no prefix is run twice.
    """

    def __init__(
        self,
        make_world: Callable[[], World],
        reset: Callable[[], None],
        max_faults: int,
        check: Callable[[Run], None],
        tables: Callable[[], dict[str, Any]],
        kinds: tuple[Fault, ...] = DISTINCT_FAULTS,
    ) -> None:
        self._make_world = make_world
        self._reset = reset
        self._max_faults = max_faults
        self._check = check
        self._tables = tables
        self._kinds = kinds
        self.runs = 0
        self.steps = 0

    def explore(self) -> int:
        self._reset()
        self._visit(self._make_world(), [])
        return self.runs

    def _visit(self, world: World, taken: list[tuple[int, Fault | None]]) -> None:
        choices = list(self._choices(world))
        if not choices:
            self.runs += 1
            self._check(Run(world.executions, world.dlq, world.announcements, world.faults, taken))
            return
        snapshot = self._snapshot(world) if len(choices) > 1 else None
        for position, choice in enumerate(choices):
            if position and snapshot is not None:
                self._restore(world, snapshot)
            world.step(*choice)
            self.steps += 1
            self._visit(world, [*taken, choice])

    def _snapshot(self, world: World) -> tuple[Any, ...]:
        items = {name: copy.deepcopy(table.items) for name, table in self._tables().items()}
        return items, copy.deepcopy((world.executions, world.dlq, world.announcements, world.faults))

    def _restore(self, world: World, snapshot: tuple[Any, ...]) -> None:
        items, state = snapshot
        for name, table in self._tables().items():
            table.items = copy.deepcopy(items[name])
        world.executions, world.dlq, world.announcements, world.faults = copy.deepcopy(state)

    def _choices(self, world: World) -> Iterator[tuple[int, Fault | None]]:
        faults_left = self._max_faults - len(world.faults)
        for index in world.movable():
            yield index, None
            if faults_left > 0:
                for fault in world.faults_for(index):
                    if fault in self._kinds:
                        yield index, fault


def quiet_handlers() -> None:
    """The handlers log every step; the explorer runs tens of thousands of them."""
    logging.getLogger("order-saga").setLevel(logging.CRITICAL)
    for name in ("aws_lambda_powertools", "order-saga"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
