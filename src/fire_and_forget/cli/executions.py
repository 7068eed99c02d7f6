"""`executions redrive`: RedriveExecution for selected FAILED, TIMED_OUT and ABORTED executions of the last 14 days.

RedriveExecution restarts an execution from its unsuccessful state with the same input and ARN (StartExecution
with an execution ARN, as a public sample does, is wrong). Its IAM permission is `states:RedriveExecution` on the
execution ARN pattern `arn:aws:states:<region>:<account>:execution:<stateMachineName>:*`, not on the state machine.

Three kinds of execution are never redriven:
- one that ended in FailureRecorded (unless --include-recorded): HandleFailure put its message in the failure DLQ and
  announced it, and `failures redrive` (or the Redriver) is the way back for it;
- one the Reconciler has claimed (fire_and_forget/healing/reconciliation.py): it compensates the steps the
  execution entered, records the message in the failure DLQ and announces it, and the Redriver or `failures
  redrive` resends that message as a new one. Resuming the execution as well would run its remaining steps after
  their compensations (what was just undone would be built upon) and next to the resent message. The claim is
  the `reconciliation` attribute (CLAIMED, RECORDED, ANNOUNCED) of the message's row in the deliveries table, the row
  whose `executionArn` names this execution. The row outlives the redrive window (its expiry is the idempotency
  expiry, 14 days at least) and stays after the Redriver deleted the failure record, so it is what is read; the
  failure-DLQ record may be gone by then;
- one a person aborted, unless --force: no part of the pattern calls StopExecution (the Reconciler's role and the
  operator policy are denied it: tests/permissions/), an execution that runs too long ends TIMED_OUT and a task that
  runs too long fails with States.Timeout, so every ABORTED execution was stopped from outside the pattern, on
  purpose. ff-ops tells them apart by the status alone, and shows the StopExecution's error and cause as it reads them.
Every other unsuccessful execution is redriven when Step Functions calls it REDRIVABLE: one that failed in
HandleFailure (the failure DLQ refused it) or in NotifyFailure (SNS refused it) resumes in that state; one that timed
out resumes where it stopped.

The command first decides for every selected execution (the list the operator confirms), then, just before each
RedriveExecution, describes it and reads its claim again: the Reconciler may have claimed it while the prompt waited.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from fire_and_forget.cli.errors import UsageError
from fire_and_forget.cli.stack import RECONCILER_FUNCTION_OUTPUT, DeployedStack
from fire_and_forget.runtime.errors import ACCESS_CODES, THROTTLING_CODES, error_code
from fire_and_forget.runtime.outputs import Output
from fire_and_forget.runtime.tail import HANDLED_FAILURE_ERROR

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_stepfunctions import SFNClient

REDRIVE_WINDOW = timedelta(days=14)
# Our executions time out after an hour; this margin lets listing stop at executions started long before the window.
_LISTING_MARGIN = timedelta(days=1)
UNSUCCESSFUL = ("FAILED", "TIMED_OUT", "ABORTED")
RECORDED_ERRORS = frozenset({HANDLED_FAILURE_ERROR})
# The deliveries table's row of a message, as the delivery claim (fire_and_forget/runtime/deliveries.py) and the
# Reconciler (fire_and_forget/healing/reconciliation.py, Reconciler._claim) write it.
ROW_KEY, OWNER, RECONCILIATION = "messageId", "executionArn", "reconciliation"
_STAGES = {
    "CLAIMED": "the Reconciler has claimed it and compensates the steps it entered",
    "RECORDED": "the Reconciler compensated it and recorded its message in the failure DLQ",
    "ANNOUNCED": "the Reconciler compensated it, recorded its message in the failure DLQ and announced it",
}


class RedriveVerdict(StrEnum):
    REDRIVEN = "redriven"
    WOULD_REDRIVE = "would-redrive"
    IN_FAILURE_DLQ = "in-failure-dlq"  # skipped: use `failures redrive` (or --include-recorded)
    RECONCILED = "reconciled"  # refused, always: the Reconciler owns it, and its message goes back as a new one
    ABORTED_BY_PERSON = "aborted-by-person"  # refused unless --force: stopped from outside the pattern, on purpose
    NOT_REDRIVABLE = "not-redrivable"  # Step Functions says no (reason given)
    REDRIVE_FAILED = "redrive-failed"
    DECLINED = "declined"  # the operator answered no: not redriven


# What makes the command incomplete (exit code 8): an execution it could not redrive, or refused without --force.
LEFT_BEHIND = frozenset({RedriveVerdict.NOT_REDRIVABLE, RedriveVerdict.REDRIVE_FAILED,
                         RedriveVerdict.ABORTED_BY_PERSON})


@dataclass(frozen=True)
class ExecutionOutcome:
    execution_arn: str
    status: str
    stop_date: datetime | None
    error: str | None
    verdict: RedriveVerdict
    reason: str | None = None
    redrive_date: datetime | None = None
    forced: bool = False  # an aborted execution --force let through


@dataclass(frozen=True)
class ExecutionRedriveRequest:
    state_machine_arn: str
    now: datetime
    statuses: tuple[str, ...] = UNSUCCESSFUL
    execution_arns: tuple[str, ...] = ()
    include_recorded: bool = False
    dry_run: bool = False
    force: bool = False  # redrive executions a person aborted (never one the Reconciler claimed)


@dataclass(frozen=True)
class Claims:
    """The deliveries table, read for the Reconciler's claim on an execution's message."""

    dynamodb: DynamoDBClient
    table: str

    def stage(self, message_id: str, execution_arn: str) -> str | None:
        """CLAIMED, RECORDED or ANNOUNCED when the Reconciler holds the message for this execution; else None."""
        item = self.dynamodb.get_item(TableName=self.table, Key={ROW_KEY: {"S": message_id}}, ConsistentRead=True,
                                      ProjectionExpression=f"{OWNER}, {RECONCILIATION}").get("Item", {})
        if item.get(OWNER, {}).get("S") != execution_arn:
            return None  # no row, or another execution's: the Reconciler holds nothing of this one
        return item.get(RECONCILIATION, {}).get("S")


def claims_of(dynamodb: DynamoDBClient, stack: DeployedStack) -> Claims | None:
    """The deliveries table the stack's Reconciler claims in; None for a stack deployed before self-healing, which has
    no Reconciler (and whose operator policy may not read the table)."""
    if stack.optional(RECONCILER_FUNCTION_OUTPUT) is None:
        return None
    return Claims(dynamodb, stack.output(Output.DELIVERIES_TABLE_NAME))


def plan_executions(sfn: SFNClient, claims: Claims | None, request: ExecutionRedriveRequest) -> list[ExecutionOutcome]:
    """What would become of each selected execution: WOULD_REDRIVE, or the reason it is left alone."""
    arns = request.execution_arns or tuple(_unsuccessful(sfn, request))
    return [_decide(sfn, claims, arn, request) for arn in arns]


def redrive_planned(sfn: SFNClient, claims: Claims | None, request: ExecutionRedriveRequest,
                    planned: Iterable[ExecutionOutcome], pace: Callable[[], None],
                    done: Callable[[ExecutionOutcome], None]) -> list[ExecutionOutcome]:
    """Redrive the planned WOULD_REDRIVE executions that still are, each in its turn (`pace`); `done` is told of
    every RedriveExecution made, whatever its result."""
    outcomes = []
    for before in planned:
        if before.verdict is not RedriveVerdict.WOULD_REDRIVE:
            outcomes.append(before)
            continue
        now = _decide(sfn, claims, before.execution_arn, request)
        if now.verdict is RedriveVerdict.WOULD_REDRIVE:
            pace()
            now = _redrive(sfn, now)
            done(now)
        outcomes.append(now)
    return outcomes


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


def _decide(sfn: SFNClient, claims: Claims | None, arn: str, request: ExecutionRedriveRequest) -> ExecutionOutcome:
    described = sfn.describe_execution(executionArn=arn)
    if described["stateMachineArn"] != request.state_machine_arn:
        raise UsageError(f"{arn} is not an execution of {request.state_machine_arn}")
    status, error, stop = described["status"], described.get("error"), described.get("stopDate")

    def outcome(verdict: RedriveVerdict, reason: str | None = None, forced: bool = False) -> ExecutionOutcome:
        return ExecutionOutcome(arn, status, stop, error, verdict, reason, forced=forced)

    if status == "FAILED" and error in RECORDED_ERRORS and not request.include_recorded:
        return outcome(RedriveVerdict.IN_FAILURE_DLQ,
                       "the message is in the failure DLQ: use `ff-ops failures redrive`")
    if status not in UNSUCCESSFUL or stop is None or stop < request.now - REDRIVE_WINDOW:
        return outcome(RedriveVerdict.NOT_REDRIVABLE, f"{status}, stopped {stop}: only FAILED, TIMED_OUT or "
                       "ABORTED executions of the last 14 days can be redriven")
    message_id = _message_id(described.get("input"))
    stage = claims.stage(message_id, arn) if claims is not None and message_id is not None else None
    if stage is not None:
        return outcome(RedriveVerdict.RECONCILED,
                       f"{_STAGES.get(stage, f'the Reconciler holds it ({stage})')}: its message goes back as a new "
                       "one (`ff-ops failures list`), never by resuming this execution")
    if described.get("redriveStatus", "REDRIVABLE") != "REDRIVABLE":
        return outcome(RedriveVerdict.NOT_REDRIVABLE,
                       described.get("redriveStatusReason") or described.get("redriveStatus"))
    if status == "ABORTED":
        stopped = f"StopExecution ({': '.join(p for p in (error, described.get('cause')) if p) or 'no error given'})"
        if not request.force:
            return outcome(RedriveVerdict.ABORTED_BY_PERSON,
                           f"stopped from outside the pattern by {stopped}: --force redrives it if that was a mistake")
        return outcome(RedriveVerdict.WOULD_REDRIVE, f"aborted by {stopped}; redriven with --force", forced=True)
    return outcome(RedriveVerdict.WOULD_REDRIVE)


def _redrive(sfn: SFNClient, planned: ExecutionOutcome) -> ExecutionOutcome:
    try:
        response = sfn.redrive_execution(executionArn=planned.execution_arn)
    except ClientError as failure:
        code = error_code(failure)
        if code in THROTTLING_CODES | ACCESS_CODES:
            raise
        verdict = RedriveVerdict.NOT_REDRIVABLE if code == "ExecutionNotRedrivable" else RedriveVerdict.REDRIVE_FAILED
        return replace(planned, verdict=verdict,
                       reason=f"{code}: {failure.response.get('Error', {}).get('Message', '')}")
    return replace(planned, verdict=RedriveVerdict.REDRIVEN, redrive_date=response["redriveDate"])


def _message_id(execution_input: str | None) -> str | None:
    """The SQS messageId of the pipe's batch of one record the execution started with; None for another input."""
    try:
        batch: Any = json.loads(execution_input or "null")
    except ValueError:
        return None
    first = batch[0] if isinstance(batch, list) and batch else None
    message_id = first.get("messageId") if isinstance(first, dict) else None
    return message_id if isinstance(message_id, str) else None
