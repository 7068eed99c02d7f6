"""`report --html`: the failure-trend page of a deployed stack, read from AWS, changing nothing.

ListExecutions of the workflow (newest first, back to `since`, at most `max_executions`) gives each execution's status
and start. An execution HandleFailure recorded ends with `FailureRecorded`: its real error and the step that failed are
in its failure-DLQ record (read, then made visible again, as `failures list` does). Any other unsuccessful execution
(timed out, aborted, failed outside HandleFailure, or recorded and since redriven) has its history read once: the
first Task that failed names the error and the step, else DescribeExecution's error and the last state entered.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from fire_and_forget.cli.failures import list_failures
from fire_and_forget.cli.trace import RECORDED_ERROR, visits
from fire_and_forget.cli.trend_page import page
from fire_and_forget.runtime.outputs import Output

if TYPE_CHECKING:
    from mypy_boto3_stepfunctions import SFNClient

    from fire_and_forget.cli.aws import Clients
    from fire_and_forget.cli.stack import DeployedStack

DEFAULT_MAX_EXECUTIONS = 2_000


@dataclass(frozen=True)
class TrendReport:
    """What the page shows, and how much was read to draw it."""

    stack: str
    since: datetime
    timeline: list[dict[str, Any]]
    truncated: bool  # more executions started in the window than `max_executions`

    @property
    def outcomes(self) -> list[tuple[str, int]]:
        return Counter(e["status"] for e in self.timeline).most_common()

    @property
    def errors(self) -> list[tuple[str, int]]:
        failed = [e["error"] or e["status"] for e in self.timeline if e["status"] != "SUCCEEDED"]
        return Counter(failed).most_common()

    def html(self) -> str:
        summary = (f"Stack {self.stack}, executions started since {self.since.isoformat(timespec='seconds')}"
                   + (" (the newest only: more started than were read)." if self.truncated else "."))
        return page(f"Fire-and-forget failure trends: {self.stack}", summary, self.timeline, self.outcomes,
                    self.errors)


def collect(clients: Clients, stack: DeployedStack, since: datetime,
            max_executions: int = DEFAULT_MAX_EXECUTIONS) -> TrendReport:
    """Read the window's executions and the failure records that explain them."""
    machine = stack.output(Output.STATE_MACHINE_ARN)
    listed, truncated = _executions(clients.sfn, machine, since, max_executions)
    records = {r.execution_arn: r for r in list_failures(clients.sqs, stack.output(Output.FAILURE_DLQ_URL)).records
               if r.execution_arn}
    first = min((e["startDate"] for e in listed), default=since)
    timeline = []
    for execution in sorted(listed, key=lambda e: e["startDate"]):
        status = execution["status"]
        error = step = None
        if status not in ("SUCCEEDED", "RUNNING"):
            record = records.get(execution["executionArn"])
            if record is not None:
                error, step = record.error, record.failed_state
            else:
                error, step = _unrecorded(clients.sfn, execution["executionArn"])
        timeline.append({"t": (execution["startDate"] - first).total_seconds(), "status": status,
                         "error": error, "step": step})
    return TrendReport(stack.name, since, timeline, truncated)


def _executions(sfn: SFNClient, machine: str, since: datetime, limit: int) -> tuple[list[dict[str, Any]], bool]:
    found: list[dict[str, Any]] = []
    for page_ in sfn.get_paginator("list_executions").paginate(stateMachineArn=machine):
        for execution in page_["executions"]:
            if execution["startDate"] < since:
                return found, False
            if len(found) >= limit:
                return found, True
            found.append(dict(execution))
    return found, False


def _unrecorded(sfn: SFNClient, execution_arn: str) -> tuple[str | None, str | None]:
    """The error and the step of an unsuccessful execution without a failure record in the DLQ (timed out, aborted,
    failed outside HandleFailure, or recorded and since redriven or discarded): the first Task that failed, with its
    last error; else the execution's own error and the last state it entered."""
    events = [event for page_ in sfn.get_paginator("get_execution_history").paginate(executionArn=execution_arn)
              for event in page_["events"]]
    entered = visits(events)
    failed = next((visit for visit in entered if visit.outcome in ("failed", "timed-out")), None)
    if failed is not None and failed.errors:
        return failed.errors[-1], failed.name
    described = sfn.describe_execution(executionArn=execution_arn)
    error = described.get("error") or described["status"]
    return (None if error == RECORDED_ERROR else error), (entered[-1].name if entered else None)
