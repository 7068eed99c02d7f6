"""Step Functions' answers where moto's differ from AWS's: the stopDate of a timed-out execution, listings that
never see an execution half created, and SendTaskFailure's cause.

DescribeExecution and ListExecutions give `stopDate` for every execution that is no longer running
(API_DescribeExecution.html: "If the execution ended, the date the execution stopped"; API_ExecutionListItem.html).
moto 5.2.5 leaves it out for TIMED_OUT, although its interpreter records the moment; the Reconciler's sweep selects
stopped executions by stopDate, so without it a lost event of a timed-out execution would never be swept offline.

moto registers a new execution before it sets its status, so a ListExecutions on another thread (the rehearsal's
pipe starts executions while the demo counts the running ones) can meet one whose status is not set yet and fail
with AttributeError. StartExecution and ListExecutions take one lock here: a listing sees an execution whole.

SendTaskFailure takes an error and a cause, and the failed task reports both (API_SendTaskFailure.html); moto 5.2.5's
request handler passes the error on and drops the cause, so a Catch downstream would see none.

And shortcuts that change no answer, for the rehearsal's speed: a stopped execution's history is serialized once
(install_history_cache), and the rehearsal's own probes read histories and descriptions from the emulator
(execution_history, described_execution): a DescribeExecution through the API costs milliseconds of botocore and moto,
and the rehearsal asks for one between every two steps of its loops.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from enum import Enum
from typing import Any

from moto.core.responses import EmptyResult
from moto.stepfunctions.parser.api import ExecutionStatus
from moto.stepfunctions.responses import StepFunctionResponse, get_backend

TIMED_OUT = "TIMED_OUT"
_EXECUTIONS = threading.Lock()


def install_stop_dates() -> Callable[[], None]:
    """Add the missing stopDate to both answers, the lock and the cause; returns the function that puts moto's
    back."""
    original_describe = StepFunctionResponse.describe_execution
    original_list = StepFunctionResponse.list_executions
    original_start = StepFunctionResponse.start_execution
    original_failure = StepFunctionResponse.send_task_failure

    def send_task_failure(self: StepFunctionResponse) -> Any:
        # The interpreter's backend (moto's stepfunctions.parser) takes the cause; the type moto declares does not.
        backend: Any = self.stepfunction_backend
        backend.send_task_failure(self._get_param("taskToken"), error=self._get_param("error"),
                                  cause=self._get_param("cause"))
        return EmptyResult()

    def start_execution(self: StepFunctionResponse) -> Any:
        with _EXECUTIONS:
            return original_start(self)

    def describe_execution(self: StepFunctionResponse) -> Any:
        answer = original_describe(self)
        response: dict[str, Any] = answer.result  # type: ignore[assignment]
        if response.get("status") == TIMED_OUT and "stopDate" not in response:
            execution = self.stepfunction_backend.describe_execution(response["executionArn"])
            response["stopDate"] = execution.stop_date
        return answer

    def list_executions(self: StepFunctionResponse) -> Any:
        with _EXECUTIONS:
            answer = original_list(self)
        response: dict[str, Any] = answer.result  # type: ignore[assignment]
        for item in response.get("executions", []):
            if item.get("status") == TIMED_OUT and "stopDate" not in item:
                item["stopDate"] = self.stepfunction_backend.describe_execution(item["executionArn"]).stop_date
        return answer

    StepFunctionResponse.describe_execution = describe_execution  # type: ignore[method-assign]
    StepFunctionResponse.list_executions = list_executions  # type: ignore[method-assign]
    StepFunctionResponse.start_execution = start_execution  # type: ignore[method-assign]
    StepFunctionResponse.send_task_failure = send_task_failure  # type: ignore[method-assign]

    def uninstall() -> None:
        StepFunctionResponse.describe_execution = original_describe  # type: ignore[method-assign]
        StepFunctionResponse.list_executions = original_list  # type: ignore[method-assign]
        StepFunctionResponse.start_execution = original_start  # type: ignore[method-assign]
        StepFunctionResponse.send_task_failure = original_failure  # type: ignore[method-assign]

    return uninstall


def is_running(execution: Any) -> bool:
    """Whether an execution of moto's interpreter is still running as a caller sees it: running, or not yet given a
    status by the StartExecution that is creating it."""
    return execution.exec_status in (None, ExecutionStatus.RUNNING)


def install_history_cache() -> Callable[[], None]:
    """GetExecutionHistory of a stopped execution answered, after the first time, with the bytes moto's serializer
    gave that first time; returns the function that puts moto's back.

    A stopped execution's history no longer changes (the emulator has no RedriveExecution), and moto's serializer is
    slower over one history than the execution was to run: the Reconciler reads the history of every execution it
    reconciles, on every sweep until it is settled, and ff-ops reads them to trace and report. The answer is keyed
    by the request's parameters and the history's length, and a running execution is always asked afresh."""
    original = StepFunctionResponse.get_execution_history
    answers: dict[tuple[Any, ...], tuple[str | bytes, dict[str, Any]]] = {}
    lock = threading.Lock()

    def get_execution_history(self: StepFunctionResponse) -> Any:
        arn = self._get_param("executionArn")
        execution: Any = self.stepfunction_backend.describe_execution(arn)
        if is_running(execution) or execution.exec_worker.env is None:
            return original(self)
        events = execution.exec_worker.env.event_manager.get_event_history()
        key = (arn, len(events), self.body)  # the request's parameters as sent
        with lock:
            cached = answers.get(key)
        if cached is None:
            code, headers, body = self.serialized(original(self))
            cached = (body, {**headers, "status": code})
            with lock:
                answers[key] = cached
        return cached[0], dict(cached[1])

    StepFunctionResponse.get_execution_history = get_execution_history  # type: ignore[method-assign]

    def uninstall() -> None:
        StepFunctionResponse.get_execution_history = original  # type: ignore[method-assign]

    return uninstall


def execution_history(account: str, region: str, execution_arn: str) -> list[dict[str, Any]]:
    """An execution's events as GetExecutionHistory gives them through botocore (event types as strings, timestamps
    as aware datetimes), read from the emulator's own records: moto's serializer takes longer over one history than
    the execution took to run, and the rehearsal reads every history it reports on."""
    # The interpreter's execution (moto's stepfunctions.parser), not the type get_backend declares.
    execution: Any = get_backend(account, region).describe_execution(execution_arn)
    events = execution.to_history_output()["events"]
    return [_as_parsed(event) for event in events]


class _Asking:
    """What StepFunctionResponse.describe_execution reads of its request: the ARN asked about, and the backend."""

    def __init__(self, backend: Any, execution_arn: str) -> None:
        self.stepfunction_backend = backend
        self._execution_arn = execution_arn

    def _get_param(self, name: str) -> str:
        assert name == "executionArn", name
        return self._execution_arn


def described_execution(account: str, region: str, execution_arn: str) -> dict[str, Any]:
    """DescribeExecution's answer as botocore gives it (timestamps as aware datetimes, no ResponseMetadata), made by
    moto's own handler for that action (with install_stop_dates' stopDate, when installed) from the emulator's records,
    without the request and response around it."""
    handler: Any = StepFunctionResponse.describe_execution
    answer = handler(_Asking(get_backend(account, region), execution_arn))
    response: dict[str, Any] = answer.result
    return {key: _as_timestamp(value) if key.endswith("Date") else value.value if isinstance(value, Enum) else value
            for key, value in response.items() if value is not None}


def _as_timestamp(value: datetime | str) -> datetime:
    return (value if isinstance(value, datetime) else datetime.fromisoformat(value)).astimezone(UTC)


def _as_parsed(event: dict[str, Any]) -> dict[str, Any]:
    parsed = copy.deepcopy({key: value for key, value in event.items() if value is not None})
    parsed["type"] = str(event["type"].value if isinstance(event["type"], Enum) else event["type"])
    parsed["timestamp"] = _as_timestamp(event["timestamp"])
    return parsed
