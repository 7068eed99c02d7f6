"""Step Functions' answers where moto's differ from AWS's: the stopDate of a timed-out execution.

DescribeExecution and ListExecutions give `stopDate` for every execution that is no longer running
(API_DescribeExecution.html: "If the execution ended, the date the execution stopped"; API_ExecutionListItem.html).
moto 5.2.5 leaves it out for TIMED_OUT, although its interpreter records the moment; the Reconciler's sweep selects
stopped executions by stopDate, so without it a lost event of a timed-out execution would never be swept offline.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from moto.stepfunctions.responses import StepFunctionResponse

TIMED_OUT = "TIMED_OUT"


def install_stop_dates() -> Callable[[], None]:
    """Add the missing stopDate to both answers; returns the function that puts moto's back."""
    original_describe = StepFunctionResponse.describe_execution
    original_list = StepFunctionResponse.list_executions

    def describe_execution(self: StepFunctionResponse) -> Any:
        answer = original_describe(self)
        response: dict[str, Any] = answer.result  # type: ignore[assignment]
        if response.get("status") == TIMED_OUT and "stopDate" not in response:
            execution = self.stepfunction_backend.describe_execution(response["executionArn"])
            response["stopDate"] = execution.stop_date
        return answer

    def list_executions(self: StepFunctionResponse) -> Any:
        answer = original_list(self)
        response: dict[str, Any] = answer.result  # type: ignore[assignment]
        for item in response.get("executions", []):
            if item.get("status") == TIMED_OUT and "stopDate" not in item:
                item["stopDate"] = self.stepfunction_backend.describe_execution(item["executionArn"]).stop_date
        return answer

    StepFunctionResponse.describe_execution = describe_execution  # type: ignore[method-assign]
    StepFunctionResponse.list_executions = list_executions  # type: ignore[method-assign]

    def uninstall() -> None:
        StepFunctionResponse.describe_execution = original_describe  # type: ignore[method-assign]
        StepFunctionResponse.list_executions = original_list  # type: ignore[method-assign]

    return uninstall
