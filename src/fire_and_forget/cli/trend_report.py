"""`report --html`: the failure-trend page of a deployed stack, read from AWS, changing nothing.

ListExecutions of the workflow (newest first, back to `since`, at most `max_executions`) gives each execution's status
and start; DescribeExecution of each gives its input, the pipe's SQS record, whose body's key field (the stack's
MessageKeyField) groups the executions of one piece of work (the message id where the body has none). An execution
HandleFailure recorded ends with `FailureRecorded`: its real error and the step that failed are in its failure-DLQ
record (read, then made visible again, as `failures list` does). Any other unsuccessful execution (timed out, aborted,
failed outside HandleFailure, or recorded and since redriven) has its history read once: the first Task that failed
names the error and the step, else DescribeExecution's error and the last state entered. A SUCCEEDED execution of a
key that ran more than once has its history read too: one that ended as a duplicate delivery decides nothing.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from fire_and_forget.cli.failures import list_failures
from fire_and_forget.cli.trace import RECORDED_ERROR, visits
from fire_and_forget.cli.trend_page import KeyOutcomes, Run, final_outcomes, page
from fire_and_forget.runtime.outputs import Output
from fire_and_forget.runtime.records import DEFAULT_KEY_FIELD, input_keys
from fire_and_forget.runtime.tail import DUPLICATE_ENDS

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
    until: datetime  # when the report was made: the window's end
    runs: list[Run]
    truncated: bool  # more executions started in the window than `max_executions`
    key_field: str = DEFAULT_KEY_FIELD

    @property
    def outcomes(self) -> list[tuple[str, int]]:
        """Executions by final status."""
        return Counter(r.status for r in self.runs).most_common()

    @property
    def errors(self) -> list[tuple[str, int]]:
        """Unsuccessful executions by error."""
        return Counter(r.error or r.status for r in self.runs if r.unsuccessful).most_common()

    @property
    def keys(self) -> KeyOutcomes:
        return final_outcomes(self.runs)

    def html(self) -> str:
        summary = (f"Stack {self.stack}, executions started since {self.since.isoformat(timespec='seconds')}"
                   + (" (the newest only: more started than were read)." if self.truncated else "."))
        return page(f"Fire-and-forget failure trends: {self.stack}", summary, self.runs, (self.since, self.until),
                    key_field=self.key_field)


def collect(clients: Clients, stack: DeployedStack, since: datetime, until: datetime,
            max_executions: int = DEFAULT_MAX_EXECUTIONS) -> TrendReport:
    """Read the window's executions, their inputs and the failure records that explain them."""
    machine = stack.output(Output.STATE_MACHINE_ARN)
    key_field = stack.key_field
    listed, truncated = _executions(clients.sfn, machine, since, max_executions)
    records = {r.execution_arn: r for r in list_failures(clients.sqs, stack.output(Output.FAILURE_DLQ_URL)).records
               if r.execution_arn}
    rows = []
    for execution in sorted(listed, key=lambda e: e["startDate"]):
        arn, status = execution["executionArn"], execution["status"]
        message_id, key = input_keys(clients.sfn.describe_execution(executionArn=arn).get("input"), key_field)
        error = step = None
        if status not in ("SUCCEEDED", "RUNNING"):
            record = records.get(arn)
            error, step = (record.error, record.failed_state) if record is not None else _unrecorded(clients.sfn, arn)
        rows.append((arn, Run(execution["startDate"], status, error, step, key if key is not None else message_id)))
    per_key = Counter(run.key for _, run in rows if run.key is not None)
    runs = [
        Run(run.started, run.status, run.error, run.step, run.key, duplicate=True)
        if run.status == "SUCCEEDED" and run.key is not None and per_key[run.key] > 1
        and _ended_as_duplicate(clients.sfn, arn) else run
        for arn, run in rows
    ]
    return TrendReport(stack.name, since, until, runs, truncated, key_field)


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


def _history(sfn: SFNClient, execution_arn: str) -> list[Any]:
    return [event for page_ in sfn.get_paginator("get_execution_history").paginate(executionArn=execution_arn)
            for event in page_["events"]]


def _ended_as_duplicate(sfn: SFNClient, execution_arn: str) -> bool:
    entered = visits(_history(sfn, execution_arn))
    return bool(entered) and entered[-1].name in DUPLICATE_ENDS


def _unrecorded(sfn: SFNClient, execution_arn: str) -> tuple[str | None, str | None]:
    """The error and the step of an unsuccessful execution without a failure record in the DLQ (timed out, aborted,
    failed outside HandleFailure, or recorded and since redriven or discarded): the first Task that failed, with its
    last error; else the execution's own error and the last state it entered."""
    entered = visits(_history(sfn, execution_arn))
    failed = next((visit for visit in entered if visit.outcome in ("failed", "timed-out")), None)
    if failed is not None and failed.errors:
        return failed.errors[-1], failed.name
    described = sfn.describe_execution(executionArn=execution_arn)
    error = described.get("error") or described["status"]
    return (None if error == RECORDED_ERROR else error), (entered[-1].name if entered else None)
