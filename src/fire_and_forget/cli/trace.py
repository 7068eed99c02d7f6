"""`trace`: one message's work from the source queue to its outcome, read-only, found by its key, an SQS message id,
a failure-DLQ message id or an execution ARN (the result says which it matched).

The pipe cannot name executions, so an execution is found by its input: ListExecutions (newest first, at most
`max_executions`), then DescribeExecution of each to read the pipe's record (`[0].messageId`, `[0].body`); an
execution ARN older than that scan is described on its own. A message id, a failure record or an execution leads to
the work's key (its body's value of the field the stack's MessageKeyField output names); the key then brings in every
other message of that work (a redriven message gets a new SQS messageId). GetExecutionHistory of each match gives the
states entered, retries, errors, compensations and the alert. The two DLQs are read and made visible again
(fire_and_forget/runtime/dlq.py). The source queue itself is never received from: that would hide messages from the
pipe and raise their receive count towards the queue's maxReceiveCount; only its depth is reported.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from fire_and_forget.cli.errors import NotFound
from fire_and_forget.cli.failures import list_failures
from fire_and_forget.cli.trace_history import StateVisit
from fire_and_forget.cli.trace_history import visits as visits  # the trend report imports it from here
from fire_and_forget.runtime.dlq import DEFAULT_VISIBILITY_TIMEOUT, HeldMessages
from fire_and_forget.runtime.errors import error_code
from fire_and_forget.runtime.outputs import Output
from fire_and_forget.runtime.records import DEFAULT_KEY_FIELD, FailureRecord, input_keys, message_key
from fire_and_forget.runtime.tail import DUPLICATE_ENDS, HANDLED_FAILURE_ERROR, TailState

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_stepfunctions import SFNClient

    from fire_and_forget.cli.aws import Clients
    from fire_and_forget.cli.stack import DeployedStack

DEFAULT_MAX_EXECUTIONS = 500
# The stack output naming the workflow's compensation states (comma-separated; absent when it has none).
COMPENSATIONS_OUTPUT = Output.COMPENSATION_STATES
ALERT_STATE = TailState.NOTIFY_FAILURE
# The error an execution ends with once HandleFailure put the message in the failure DLQ
# (fire_and_forget/cli/executions.py).
RECORDED_ERROR = HANDLED_FAILURE_ERROR


class Whereabouts(StrEnum):
    """Where a message is now. Keys of the --json `where` list; new places may be added, never renamed."""

    SUCCEEDED = "succeeded"  # an execution succeeded: the work was done (or was a duplicate, ignored)
    FAILURE_DLQ = "failure-dlq"  # HandleFailure recorded it: `failures redrive` or `failures discard`
    SOURCE_DLQ = "source-dlq"  # the pipe could not start an execution: `source-dlq redrive`
    RUNNING = "running"  # an execution is still running
    FAILED_EXECUTION = "failed-execution"  # unsuccessful, no failure record: `executions redrive`
    LEFT_FAILURE_DLQ = "left-failure-dlq"  # recorded by HandleFailure, since redriven (a newer message) or discarded
    WAITING_FOR_RETRY = "waiting-for-retry"  # reserved for automatic retries (none are scheduled in this version)
    NOT_FOUND = "not-found"  # none of the above: in the source queue not yet handed over, or beyond the bound


class Match(StrEnum):
    """What the operator's argument turned out to be. Values of the --json `matched`; never renamed."""

    KEY = "key"  # the messages' key (the body's value of the stack's key field)
    MESSAGE_ID = "message-id"  # an SQS message id of the work: the source queue's (an execution's input), a redrive's
    DLQ_MESSAGE_ID = "dlq-message-id"  # the failure DLQ message id of a record or of one of its copies
    EXECUTION_ARN = "execution-arn"  # an execution of the stack's state machine


@dataclass(frozen=True)
class ExecutionSummary:
    """What ListExecutions and the execution's input tell of one execution, before its history is read."""

    arn: str
    name: str
    status: str
    start_date: datetime
    stop_date: datetime | None
    error: str | None
    cause: str | None
    message_id: str | None
    key: str | None  # the body's key field


@dataclass(frozen=True)
class TracedExecution(ExecutionSummary):
    visits: list[StateVisit]
    compensation_states: frozenset[str] = frozenset()  # from the stack's CompensationStates output

    @property
    def states(self) -> list[str]:
        return [visit.name for visit in self.visits]

    @property
    def retries(self) -> int:
        return sum(visit.retries for visit in self.visits)

    @property
    def compensations(self) -> list[StateVisit]:
        return [visit for visit in self.visits if visit.name in self.compensation_states]

    @property
    def alerts(self) -> list[StateVisit]:
        return [visit for visit in self.visits if visit.name == ALERT_STATE]

    @property
    def duplicate(self) -> bool:
        return bool(self.visits) and self.visits[-1].name in DUPLICATE_ENDS


@dataclass(frozen=True)
class Location:
    place: Whereabouts
    message_id: str | None
    detail: str
    execution_arn: str | None = None
    dlq_message_id: str | None = None


@dataclass
class Trace:
    query: str  # what the operator asked for: a key, an SQS message id, a DLQ message id or an execution ARN
    key: str | None  # the key of the work found (None when the messages found have no key field)
    message_ids: list[str]
    region: str
    key_field: str = DEFAULT_KEY_FIELD
    executions: list[TracedExecution] = field(default_factory=list)
    failure_records: list[FailureRecord] = field(default_factory=list)
    source_dlq_message_ids: list[str] = field(default_factory=list)
    where: list[Location] = field(default_factory=list)
    scanned: int = 0
    max_executions: int = DEFAULT_MAX_EXECUTIONS
    truncated: bool = False  # the state machine has more executions than were scanned
    source_queue_depth: tuple[int, int] = (0, 0)  # (visible, in flight): what the pipe has not handed over yet
    matched: Match = Match.KEY  # what `query` was found as


@dataclass(frozen=True)
class TraceRequest:
    key: str
    max_executions: int = DEFAULT_MAX_EXECUTIONS
    visibility_timeout: int = DEFAULT_VISIBILITY_TIMEOUT
    wait_seconds: int | None = None
    key_field: str = DEFAULT_KEY_FIELD  # the stack's MessageKeyField


def trace(clients: Clients, stack: DeployedStack, request: TraceRequest) -> Trace:
    """Everything recorded about `request.key` (a key, an SQS message id, a failure-DLQ message id or an execution
    ARN); raises NotFound if nothing is."""
    machine, failure_dlq, source_dlq, source = stack.require(
        Output.STATE_MACHINE_ARN, Output.FAILURE_DLQ_URL, Output.SOURCE_DLQ_URL, Output.SOURCE_QUEUE_URL
    )
    asked = request.key
    candidates, scanned, truncated = _inputs(clients.sfn, machine, request.max_executions, request.key_field)
    execution = _asked_execution(clients.sfn, machine, asked, candidates, request.key_field) \
        if is_execution_arn(asked) else None
    if execution is not None and execution not in candidates:  # older than the scan: described on its own
        candidates.append(execution)
    records = list_failures(
        clients.sqs,
        failure_dlq,
        visibility_timeout=request.visibility_timeout,
        wait_seconds=request.wait_seconds,
        key_field=request.key_field,
    ).records
    # What names the work besides its key: the id asked, the message an asked execution or record started from.
    ids = {asked} | {m for m in (execution.message_id if execution else None,) if m}
    ids |= {r.source_message_id for r in records if asked in r.message_ids and r.source_message_id}
    key = (execution.key if execution else None) or _key_of(asked, candidates) or next(
        (r.key for r in records if r.key and (asked == r.key or ids & {r.source_message_id, *r.message_ids})), None)
    result = Trace(
        asked,
        key,
        [],
        clients.region,
        key_field=request.key_field,
        scanned=scanned,
        max_executions=request.max_executions,
        truncated=truncated,
    )
    compensations = frozenset(name for name in stack.outputs.get(COMPENSATIONS_OUTPUT, "").split(",") if name)
    result.executions = [
        _traced(clients.sfn, c, compensations) for c in candidates
        if c.arn == asked or c.message_id in ids or c.key == asked or (key is not None and c.key == key)
    ]
    keys = ids | ({key} if key else set())
    result.failure_records = [r for r in records if keys & {r.key, r.source_message_id, *r.message_ids}
                              or r.execution_arn == asked]
    found_in_source_dlq = _in_source_dlq(clients.sqs, source_dlq, keys, request)
    result.source_dlq_message_ids = [message_id for message_id, _ in found_in_source_dlq]
    result.key = result.key or next((k for _, k in found_in_source_dlq if k == asked), None)
    result.matched = _matched(asked, execution, result)
    result.message_ids = _unique(
        [e.message_id for e in result.executions if e.message_id]
        + [r.source_message_id for r in result.failure_records if r.source_message_id]
        + result.source_dlq_message_ids
    )
    result.source_queue_depth = _depth(clients.sqs, source)
    result.where = _where(result)
    if not (result.executions or result.failure_records or result.source_dlq_message_ids):
        bound = f"the newest {scanned} executions" + (" (more exist: raise --max-executions)" if truncated else "")
        raise NotFound(
            f"nothing found for {asked!r} in {bound}, the failure DLQ or the source DLQ",
            f"it may still be in the source queue ({result.source_queue_depth[0]} visible, "
            f"{result.source_queue_depth[1]} in flight), or be older than the executions scanned",
        )
    return result


def is_execution_arn(text: str) -> bool:
    """`arn:<partition>:states:<region>:<account>:execution:<state machine>:<name>`."""
    parts = text.split(":")
    return len(parts) == 8 and parts[0] == "arn" and parts[2] == "states" and parts[5] == "execution"


def _asked_execution(sfn: SFNClient, machine: str, arn: str, scanned: list[ExecutionSummary],
                     key_field: str) -> ExecutionSummary:
    """The execution an ARN names, from the scan or, older than the scan, from DescribeExecution."""
    if not arn.startswith(machine.replace(":stateMachine:", ":execution:", 1) + ":"):
        raise NotFound(f"{arn} is not an execution of the stack's state machine {machine}",
                       "check --stack-name and --region: the ARN names the state machine it ran on")
    known = next((c for c in scanned if c.arn == arn), None)
    if known is not None:
        return known
    try:
        described = sfn.describe_execution(executionArn=arn)
    except ClientError as error:
        if error_code(error) != "ExecutionDoesNotExist":
            raise
        raise NotFound(f"no execution {arn}", "check the ARN: Step Functions knows no such execution") from error
    message_id, key = input_keys(described.get("input"), key_field)
    return ExecutionSummary(arn, described["name"], described["status"], described["startDate"],
                            described.get("stopDate"), described.get("error"), described.get("cause"), message_id, key)


def _matched(asked: str, execution: ExecutionSummary | None, result: Trace) -> Match:
    if execution is not None:
        return Match.EXECUTION_ARN
    if asked == result.key:
        return Match.KEY
    if any(asked in r.message_ids for r in result.failure_records):
        return Match.DLQ_MESSAGE_ID
    return Match.MESSAGE_ID


def _inputs(sfn: SFNClient, machine: str, limit: int, key_field: str) -> tuple[list[ExecutionSummary], int, bool]:
    """The newest `limit` executions with the message they started from; whether more exist."""
    found: list[ExecutionSummary] = []
    truncated = False
    for page in sfn.get_paginator("list_executions").paginate(
        stateMachineArn=machine, PaginationConfig={"PageSize": 100}
    ):
        for item in page["executions"]:
            if len(found) >= limit:
                truncated = True
                break
            described = sfn.describe_execution(executionArn=item["executionArn"])
            message_id, key = input_keys(described.get("input"), key_field)
            found.append(
                ExecutionSummary(
                    item["executionArn"],
                    item["name"],
                    described["status"],
                    described["startDate"],
                    described.get("stopDate"),
                    described.get("error"),
                    described.get("cause"),
                    message_id,
                    key,
                )
            )
        if truncated:
            break
    return found, len(found), truncated


def _key_of(asked: str, candidates: list[ExecutionSummary]) -> str | None:
    for candidate in candidates:
        if asked in (candidate.message_id, candidate.key):
            return candidate.key
    return None


def _traced(sfn: SFNClient, candidate: ExecutionSummary, compensations: frozenset[str]) -> TracedExecution:
    events: list[Any] = []
    token: str | None = None
    while True:
        page = (
            sfn.get_execution_history(executionArn=candidate.arn, maxResults=1000, nextToken=token)
            if token
            else sfn.get_execution_history(executionArn=candidate.arn, maxResults=1000)
        )
        events.extend(page["events"])
        token = page.get("nextToken")
        if not token:
            break
    summary = {f.name: getattr(candidate, f.name) for f in fields(ExecutionSummary)}
    return TracedExecution(**summary, visits=visits(events), compensation_states=compensations)


def _in_source_dlq(sqs: SQSClient, url: str, keys: set[str], request: TraceRequest) -> list[tuple[str, str | None]]:
    """(message id, key) of the source DLQ's messages whose id or body's key is one of `keys` (read, then made
    visible again)."""
    found: list[tuple[str, str | None]] = []
    with HeldMessages(
        sqs, url, visibility_timeout=request.visibility_timeout, wait_seconds=request.wait_seconds
    ) as held:
        while batch := held.receive(10):
            for message in batch:
                key = message_key(message.get("Body"), request.key_field)
                if keys & {message["MessageId"], key}:
                    found.append((message["MessageId"], key))
    return found


def _depth(sqs: SQSClient, url: str) -> tuple[int, int]:
    attributes = sqs.get_queue_attributes(
        QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    )["Attributes"]
    return (
        int(attributes.get("ApproximateNumberOfMessages", "0")),
        int(attributes.get("ApproximateNumberOfMessagesNotVisible", "0")),
    )


def _where(result: Trace) -> list[Location]:
    """One place per message id (a message can be in two, briefly: both are listed), newest message first."""
    places: list[Location] = []
    recorded = {r.source_message_id: r for r in result.failure_records}
    for record in result.failure_records:
        places.append(
            Location(
                Whereabouts.FAILURE_DLQ,
                record.source_message_id,
                f"{record.error} in {record.failed_state}" + (", needs manual repair" if record.manual_repair else ""),
                record.execution_arn,
                record.message_id,
            )
        )
    for message_id in result.source_dlq_message_ids:
        places.append(Location(Whereabouts.SOURCE_DLQ, message_id, "the pipe could not start an execution"))
    for message_id in _unique([e.message_id for e in result.executions if e.message_id]):
        if message_id in recorded:
            continue
        runs = [e for e in result.executions if e.message_id == message_id and not e.duplicate] or [
            e for e in result.executions if e.message_id == message_id
        ]
        deciding = min(runs, key=lambda e: e.start_date)
        if deciding.status == "SUCCEEDED":
            detail = "ignored as a duplicate" if deciding.duplicate else "the workflow succeeded"
            places.append(Location(Whereabouts.SUCCEEDED, message_id, detail, deciding.arn))
        elif deciding.status == "RUNNING":
            places.append(
                Location(
                    Whereabouts.RUNNING, message_id, f"in {deciding.states[-1] if deciding.states else '?'}",
                    deciding.arn,
                )
            )
        elif deciding.error == RECORDED_ERROR:
            newer = result.message_ids[: result.message_ids.index(message_id)]  # newest first
            places.append(
                Location(
                    Whereabouts.LEFT_FAILURE_DLQ,
                    message_id,
                    "recorded in the failure DLQ, no longer there: "
                    + ("redriven as " + ", ".join(newer) if newer else "discarded (see the discard log)"),
                    deciding.arn,
                )
            )
        else:
            places.append(
                Location(
                    Whereabouts.FAILED_EXECUTION,
                    message_id,
                    f"{deciding.status} ({deciding.error or 'no error'}), input kept for `ff-ops executions redrive`",
                    deciding.arn,
                )
            )
    return places


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))
