"""Executions of the order saga as actors: the ASL drives them (tests/handlers/explorer.py's World reads its Retry,
Catch, paths and Choice), each task's call is one gated step, and the history is written as Step Functions would.

Unlike the handlers' explorer, the failure tail's HandleFailure (SendMessage to the moto failure DLQ) and
NotifyFailure (Publish to the moto topic) are steps of their own: the Redriver, ff-ops and the Reconciler read what
they write, and an execution can be stopped while either is in flight.
"""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from tests.handlers.explorer import LOCAL, Execution, TaskError, World, _apply_result_path, _matches
from tests.healing.gates import Call, Decision, Runner
from tests.healing.services import STATE_MACHINE_ARN, Services, at

EXECUTION_PREFIX = "arn:aws:states:us-east-1:123456789012:execution:OrderSaga:"
THROTTLED = "Lambda.TooManyRequestsException"
SUCCEEDED_ENDS = {"ArrangeShipping", "DuplicateDeliveryIgnored", "DuplicateFailureIgnored"}
HANDLED_ERROR = "FailureRecorded"


@dataclass(frozen=True)
class Message:
    """One SQS message as the pipe hands it to an execution (World reads `.record`, `.label`, `.message_id`)."""

    label: str
    message_id: str
    body: dict[str, Any]
    attributes: tuple[tuple[str, str, str], ...] = ()  # (name, dataType, stringValue)
    after_failure_of: str | None = None

    @property
    def record(self) -> dict[str, Any]:
        return {
            "messageId": self.message_id,
            "body": json.dumps(self.body),
            "attributes": {},
            "messageAttributes": {name: {"stringValue": value, "stringListValues": [], "binaryListValues": [],
                                         "dataType": kind} for name, kind, value in self.attributes},
            "eventSource": "aws:sqs",
        }


class SagaWorld(World):
    """One execution, stepped by its actor: every Task state is a step (none is run eagerly)."""

    def __init__(self, services: Services, states: dict[str, Any], substitutions: dict[str, str],
                 handlers: dict[str, str], message: Message, arn: str) -> None:
        super().__init__(states, {}, substitutions, services.dynamodb, services.lambda_context, [message])  # type: ignore[list-item]
        self.services = services
        self.handler_paths = handlers
        self.execution.arn = arn
        self.events: list[dict[str, Any]] = []

    @property
    def execution(self) -> Execution:
        return self.executions[0]

    # -- the one I/O of a step: done inside the gate, never on replay ----------------------------------------------

    def call(self, name: str, parameters: dict[str, Any], decision: Decision) -> tuple[str, Any]:
        if decision is Decision.EXHAUST:
            return "exhaust", THROTTLED
        state = self.states[name]
        resource = state["Resource"]
        try:
            if resource.endswith(":lambda:invoke"):
                handler = self.services.handler(self.handler_paths[name])
                try:
                    with redirect_stdout(io.StringIO()):
                        result = handler(json.loads(json.dumps(parameters["Payload"])), self.context)
                except Exception as error:  # Lambda reports every exception as errorType
                    raise TaskError(type(error).__name__) from None
                return "ok", {"Payload": json.loads(json.dumps(result))}
            if resource.endswith(":dynamodb:updateItem"):
                self.services.dynamodb.update_item(**parameters)
            elif resource.endswith(":sqs:sendMessage"):
                self.services.sqs.send_message(QueueUrl=parameters["QueueUrl"],
                                               MessageBody=json.dumps(parameters["MessageBody"]),
                                               MessageAttributes=parameters["MessageAttributes"])
                self.services.model.recorded.append(parameters["MessageBody"])
            elif resource.endswith(":sns:publish"):
                # The alert names the execution, as both of the pipeline's alert formats do (what the books count).
                self.services.sns.publish(TopicArn=parameters["TopicArn"], Subject=f"failed in {name}",
                                          Message=f"NotifyFailure: the execution {self.execution.arn} failed")
            else:
                raise AssertionError(f"the explorer does not model {resource} in {name}")
        except TaskError as error:
            return "error", error.name
        except ClientError as error:
            service = "DynamoDB" if "dynamodb" in resource else "SQS" if "sqs" in resource else "SNS"
            return "error", f"{service}.{error.response['Error']['Code']}"
        return "ok", {}

    # -- the pure part: applied again on replay ------------------------------------------------------------------

    def apply(self, outcome: tuple[str, Any], when: float) -> None:
        execution = self.execution
        name = execution.state
        state = self.states[name]
        kind, value = outcome
        if kind == "ok":
            execution.tries = {}
            self._event(when, "TaskSucceeded", name)
            self._succeed(execution, state, value)
        elif kind == "exhaust":
            while execution.end is None and execution.state == name:
                self._event(when, "TaskFailed", name, error=value)
                if not self._fail(execution, state, value):
                    break
                self._started(when, name)
        else:
            self._event(when, "TaskFailed", name, error=value)
            if self._fail(execution, state, value):
                self._started(when, name)
        if execution.state != name or execution.end is not None:
            if execution.end is None or not execution.end.startswith("Uncaught"):
                self._event(when, "TaskStateExited", name)
            else:
                execution.error = value  # type: ignore[attr-defined]
        self._run_local(execution)
        if execution.end is None:
            self._entered(when, execution.state)

    def _fail(self, execution: Execution, state: dict[str, Any], error: str) -> bool:
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

    def _run_local(self, execution: Execution) -> None:
        """Pass, Choice, Succeed and Fail states at once (they touch nothing): every Task waits for its step."""
        while execution.end is None:
            name = execution.state
            state = self.states[name]
            kind = state["Type"]
            if kind == "Task":
                return
            if kind in ("Succeed", "Fail"):
                execution.end = name
            elif kind == "Choice":
                execution.state = self._choose(state, execution)
            else:
                assert kind in LOCAL
                if "Parameters" in state and state.get("ResultPath", "$") == "$":
                    execution.data = self._evaluate(state["Parameters"], execution)
                self._next(execution, state)

    def _resolve(self, expression: str, execution: Execution, source: Any) -> Any:
        if expression == "$$.StateMachine.Id":
            return STATE_MACHINE_ARN
        if expression == "$$.State.EnteredTime":
            entered = [e for e in self.events if e["type"] == "TaskStateEntered"]
            return at(entered[-1]["timestamp"].timestamp()).strftime("%Y-%m-%dT%H:%M:%S.000Z")
        return super()._resolve(expression, execution, source)

    # -- history --------------------------------------------------------------------------------------------------

    def begin(self, when: float) -> None:
        self.events.append({"type": "ExecutionStarted", "timestamp": at(when),
                            "executionStartedEventDetails": {"input": json.dumps([self.execution.attempt.record])}})
        self._entered(when, self.execution.state)

    def _entered(self, when: float, name: str) -> None:
        self._event(when, "TaskStateEntered", name, input=json.dumps(self.execution.data))
        self._started(when, name)

    def _started(self, when: float, name: str) -> None:
        resource = self.states[name]["Resource"].split(":::")[-1]
        self._event(when, "TaskScheduled", name, resource=resource)
        self._event(when, "TaskStarted", name, resource=resource)

    def _event(self, when: float, kind: str, name: str, **details: Any) -> None:
        event: dict[str, Any] = {"id": len(self.events) + 1, "type": kind, "timestamp": at(when)}
        if kind == "TaskStateEntered":
            event["stateEnteredEventDetails"] = {"name": name, "input": details.get("input")}
        elif kind == "TaskStateExited":
            event["stateExitedEventDetails"] = {"name": name, "output": json.dumps(self.execution.data)}
        elif kind in ("TaskScheduled", "TaskStarted"):
            resource_type, _, resource = details["resource"].partition(":")
            key = "taskScheduledEventDetails" if kind == "TaskScheduled" else "taskStartedEventDetails"
            event[key] = {"resourceType": resource_type, "resource": resource}
            if kind == "TaskScheduled":
                event[key]["timeoutInSeconds"] = self.states[name].get("TimeoutSeconds", 60)
        elif kind == "TaskFailed":
            event["taskFailedEventDetails"] = {"error": details["error"]}
        self.events.append(event)

    def parameters(self) -> dict[str, Any]:
        state = self.states[self.execution.state]
        if state["Resource"].endswith(":sns:publish"):  # its message is built by intrinsics the explorer skips
            return {"TopicArn": self._evaluate(state["Parameters"]["TopicArn"], self.execution)}
        parameters: dict[str, Any] = self._evaluate(state["Parameters"], self.execution)
        return parameters

    def pending(self) -> dict[str, Any]:
        """The call the execution is about to make: what a late invocation would do if it were stopped now."""
        name = self.execution.state
        return {"arn": self.execution.arn, "state": name, "resource": self.states[name]["Resource"],
                "parameters": self.parameters(), "handler": self.handler_paths.get(name),
                "started": self.events[-1]["timestamp"].timestamp()}


def run_execution(runner: Runner, services: Services, world: SagaWorld, actor_now: float) -> str:
    """The execution actor's body: one gated call per task attempt, the pure ASL in between; returns its end."""
    execution = world.execution
    view = services.model.executions[execution.arn]
    world.begin(actor_now)
    view.history = list(world.events)
    while execution.end is None:
        name = execution.state
        parameters = world.parameters()
        view.pending = world.pending()

        def perform(decision: Decision, name: str = name, parameters: dict[str, Any] = parameters) -> Any:
            return world.call(name, parameters, decision), services.model.clock

        outcome, when = runner.gate(Call("states", name, execution.attempt.label), perform)
        world.apply((outcome[0], outcome[1]), when)
        view.history = list(world.events)
    end = execution.end
    if end in SUCCEEDED_ENDS:
        view.status = "SUCCEEDED"
    else:
        view.status = "FAILED"
        view.error = HANDLED_ERROR if end == HANDLED_ERROR else getattr(execution, "error", "States.Runtime")
    view.stopped = services.model.clock
    return end


def late_call(services: Services, world_state: dict[str, Any], handler_path: str | None, context: Any) -> Any:
    """What a stopped execution's in-flight task does when it lands late: the same call, with the same input."""
    resource, parameters = world_state["resource"], world_state["parameters"]
    if resource.endswith(":lambda:invoke"):
        assert handler_path is not None
        handler = services.handler(handler_path)
        try:
            with redirect_stdout(io.StringIO()):
                return handler(json.loads(json.dumps(parameters["Payload"])), context)
        except Exception as error:
            return {"raised": type(error).__name__}
    if resource.endswith(":dynamodb:updateItem"):
        try:
            services.dynamodb.update_item(**parameters)
        except ClientError as error:
            return {"raised": error.response["Error"]["Code"]}
        return {}
    if resource.endswith(":sqs:sendMessage"):
        services.sqs.send_message(QueueUrl=parameters["QueueUrl"], MessageBody=json.dumps(parameters["MessageBody"]),
                                  MessageAttributes=parameters["MessageAttributes"])
        services.model.recorded.append(parameters["MessageBody"])
        return {}
    assert resource.endswith(":sns:publish"), resource
    services.sns.publish(TopicArn=parameters["TopicArn"], Subject="late publish",
                         Message=f"NotifyFailure: the execution {world_state['arn']} failed")
    return {}
