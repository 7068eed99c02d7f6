"""`executions redrive`: RedriveExecution for the workflow's FAILED, TIMED_OUT and ABORTED executions of 14 days.

RedriveExecution restarts an execution from its unsuccessful state with the same input and ARN (StartExecution
with an execution ARN, as a public sample does, is wrong). Its IAM permission is `states:RedriveExecution` on the
execution ARN pattern `arn:aws:states:<region>:<account>:execution:<stateMachineName>:*`, not on the state machine.
Executions that ended in FailureRecorded are skipped by default: HandleFailure put their message in the failure DLQ and
announced it, and `failures redrive` is the way back for them. Every other unsuccessful execution is redriven:
one that failed in HandleFailure (the failure DLQ refused it) or in NotifyFailure (SNS refused it) resumes in that
state; one that timed out or was aborted resumes where it stopped.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import TYPE_CHECKING

from botocore.exceptions import ClientError

from fire_and_forget.cli.errors import UsageError
from fire_and_forget.runtime.errors import ACCESS_CODES, THROTTLING_CODES, error_code
from fire_and_forget.runtime.tail import HANDLED_FAILURE_ERROR

if TYPE_CHECKING:
    from mypy_boto3_stepfunctions import SFNClient

REDRIVE_WINDOW = timedelta(days=14)
# Our executions time out after an hour; this margin lets listing stop at executions started long before the window.
_LISTING_MARGIN = timedelta(days=1)
UNSUCCESSFUL = ("FAILED", "TIMED_OUT", "ABORTED")
RECORDED_ERRORS = frozenset({HANDLED_FAILURE_ERROR})


class RedriveVerdict(StrEnum):
    REDRIVEN = "redriven"
    WOULD_REDRIVE = "would-redrive"
    IN_FAILURE_DLQ = "in-failure-dlq"  # skipped: use `failures redrive` (or --include-recorded)
    NOT_REDRIVABLE = "not-redrivable"  # Step Functions says no (reason given)
    REDRIVE_FAILED = "redrive-failed"


LEFT_BEHIND = {RedriveVerdict.NOT_REDRIVABLE, RedriveVerdict.REDRIVE_FAILED}


@dataclass(frozen=True)
class ExecutionOutcome:
    execution_arn: str
    status: str
    stop_date: datetime | None
    error: str | None
    verdict: RedriveVerdict
    reason: str | None = None
    redrive_date: datetime | None = None


@dataclass(frozen=True)
class ExecutionRedriveRequest:
    state_machine_arn: str
    now: datetime
    statuses: tuple[str, ...] = UNSUCCESSFUL
    execution_arns: tuple[str, ...] = ()
    include_recorded: bool = False
    dry_run: bool = False


def redrive_executions(sfn: SFNClient, request: ExecutionRedriveRequest) -> list[ExecutionOutcome]:
    """Find the unsuccessful executions in the window and redrive each one Step Functions calls REDRIVABLE."""
    arns = request.execution_arns or tuple(_unsuccessful(sfn, request))
    return [_decide_and_redrive(sfn, arn, request) for arn in arns]


def _unsuccessful(sfn: SFNClient, request: ExecutionRedriveRequest) -> Iterable[str]:
    cutoff = request.now - REDRIVE_WINDOW
    for status in request.statuses:
        for page in sfn.get_paginator("list_executions").paginate(
                stateMachineArn=request.state_machine_arn, statusFilter=status,  # type: ignore[arg-type]
                PaginationConfig={"PageSize": 100}):
            for item in page["executions"]:
                stop = item.get("stopDate")
                if stop is not None and stop >= cutoff:
                    yield item["executionArn"]
            if page["executions"] and page["executions"][-1]["startDate"] < cutoff - _LISTING_MARGIN:
                break  # newest first: the rest started before the window


def _decide_and_redrive(sfn: SFNClient, arn: str, request: ExecutionRedriveRequest) -> ExecutionOutcome:
    described = sfn.describe_execution(executionArn=arn)
    if described["stateMachineArn"] != request.state_machine_arn:
        raise UsageError(f"{arn} is not an execution of {request.state_machine_arn}")
    status, error, stop = described["status"], described.get("error"), described.get("stopDate")

    def outcome(verdict: RedriveVerdict, reason: str | None = None,
                redrive_date: datetime | None = None) -> ExecutionOutcome:
        return ExecutionOutcome(arn, status, stop, error, verdict, reason, redrive_date)

    if error in RECORDED_ERRORS and not request.include_recorded:
        return outcome(RedriveVerdict.IN_FAILURE_DLQ,
                       "the message is in the failure DLQ: use `ff-ops failures redrive`")
    if status not in UNSUCCESSFUL or stop is None or stop < request.now - REDRIVE_WINDOW:
        return outcome(RedriveVerdict.NOT_REDRIVABLE, f"{status}, stopped {stop}: only FAILED, TIMED_OUT or "
                       "ABORTED executions of the last 14 days can be redriven")
    if described.get("redriveStatus", "REDRIVABLE") != "REDRIVABLE":
        return outcome(RedriveVerdict.NOT_REDRIVABLE,
                       described.get("redriveStatusReason") or described.get("redriveStatus"))
    if request.dry_run:
        return outcome(RedriveVerdict.WOULD_REDRIVE)
    try:
        response = sfn.redrive_execution(executionArn=arn)
    except ClientError as failure:
        code = error_code(failure)
        if code in THROTTLING_CODES | ACCESS_CODES:
            raise
        verdict = RedriveVerdict.NOT_REDRIVABLE if code == "ExecutionNotRedrivable" else RedriveVerdict.REDRIVE_FAILED
        return outcome(verdict, f"{code}: {failure.response.get('Error', {}).get('Message', '')}")
    return outcome(RedriveVerdict.REDRIVEN, redrive_date=response["redriveDate"])
