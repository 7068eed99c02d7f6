"""`trace`: one message's work (by its key or an SQS message id) from the source queue to its outcome, read-only.

The pipe cannot name executions, so an execution is found by its input: ListExecutions (newest first, at most
`max_executions`), then DescribeExecution of each to read the pipe's record (`[0].messageId`, `[0].body`). A message id
leads to its key (its body's value of the field the stack's MessageKeyField output names); the key then brings
in every other message of that work (a redriven message gets a new SQS messageId). GetExecutionHistory of each match
gives the states entered, retries, errors, compensations and the alert. Then the two DLQs are read (and made visible
again, fire_and_forget/runtime/dlq.py). The source queue itself is never received from: that would hide messages from
the pipe and raise their receive count towards the queue's maxReceiveCount; only its depth is reported.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from fire_and_forget.cli.errors import NotFound
from fire_and_forget.cli.failures import list_failures
from fire_and_forget.runtime.dlq import DEFAULT_VISIBILITY_TIMEOUT, HeldMessages
from fire_and_forget.runtime.outputs import Output
from fire_and_forget.runtime.records import DEFAULT_KEY_FIELD, FailureRecord, message_key
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
_TASK_END = {
    "TaskSucceeded": "succeeded",
    "TaskFailed": "failed",
    "TaskTimedOut": "timed-out",
    "TaskSubmitFailed": "failed",
    "TaskStartFailed": "failed",
}


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


@dataclass(frozen=True)
class StateVisit:
    """One entry into a state: how many attempts its task took, the errors of the failed ones, how it ended."""

    name: str
    entered_at: datetime | None
    attempts: int = 0  # Task states only: 1 + the retries
    errors: tuple[str, ...] = ()
    outcome: str | None = None  # succeeded | failed | timed-out; None for a state that is not a Task
    output: Any = None  # the task's result (the Lambda's Payload, SNS's MessageId)

    @property
    def retries(self) -> int:
        return max(0, self.attempts - 1)


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
    query: str  # what the operator asked for: a key or an SQS message id
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


@dataclass(frozen=True)
class TraceRequest:
    key: str
    max_executions: int = DEFAULT_MAX_EXECUTIONS
    visibility_timeout: int = DEFAULT_VISIBILITY_TIMEOUT
    wait_seconds: int | None = None
    key_field: str = DEFAULT_KEY_FIELD  # the stack's MessageKeyField


def trace(clients: Clients, stack: DeployedStack, request: TraceRequest) -> Trace:
    """Everything recorded about `request.key` (a key or an SQS message id); raises NotFound if nothing is."""
    machine, failure_dlq, source_dlq, source = stack.require(
        Output.STATE_MACHINE_ARN, Output.FAILURE_DLQ_URL, Output.SOURCE_DLQ_URL, Output.SOURCE_QUEUE_URL
    )
    candidates, scanned, truncated = _inputs(clients.sfn, machine, request.max_executions, request.key_field)
    key = _key_of(request.key, candidates)
    matched = [c for c in candidates if request.key in (c.message_id, c.key) or (key is not None and c.key == key)]
    result = Trace(
        request.key,
        key,
        [],
        clients.region,
        key_field=request.key_field,
        scanned=scanned,
        max_executions=request.max_executions,
        truncated=truncated,
    )
    compensations = frozenset(name for name in stack.outputs.get(COMPENSATIONS_OUTPUT, "").split(",") if name)
    result.executions = [_traced(clients.sfn, c, compensations) for c in matched]
    keys = {request.key} | ({key} if key else set())
    listing = list_failures(
        clients.sqs,
        failure_dlq,
        visibility_timeout=request.visibility_timeout,
        wait_seconds=request.wait_seconds,
        key_field=request.key_field,
    )
    result.failure_records = [r for r in listing.records if keys & {r.key, r.source_message_id, r.message_id}]
    result.key = result.key or next((r.key for r in result.failure_records if r.key), None)
    keys |= {result.key} if result.key else set()
    result.source_dlq_message_ids = _in_source_dlq(clients.sqs, source_dlq, keys, request)
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
            f"nothing found for {request.key!r} in {bound}, the failure DLQ or the source DLQ",
            f"it may still be in the source queue ({result.source_queue_depth[0]} visible, "
            f"{result.source_queue_depth[1]} in flight), or be older than the executions scanned",
        )
    return result


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
            message_id, key = _record_keys(described.get("input"), key_field)
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


def _record_keys(text: str | None, key_field: str) -> tuple[str | None, str | None]:
    """(messageId, key) of the pipe's first record; None where the input is not what the pipe sends."""
    try:
        document = json.loads(text or "null")
    except ValueError:
        return None, None
    record = document[0] if isinstance(document, list) and document else document
    if not isinstance(record, dict):
        return None, None
    message_id = record.get("messageId") if isinstance(record.get("messageId"), str) else None
    body = record.get("body")
    return message_id, message_key(body if isinstance(body, str) else None, key_field)


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


def visits(events: list[Any]) -> list[StateVisit]:
    """The states an execution entered, one after another, each with its task attempts, errors and result."""
    found: list[StateVisit] = []
    current: dict[str, Any] | None = None

    def close() -> None:
        if current is not None:
            found.append(
                StateVisit(
                    current["name"],
                    current["at"],
                    current["attempts"],
                    tuple(current["errors"]),
                    current["outcome"],
                    current["output"],
                )
            )

    for event in events:
        kind = event["type"]
        if kind.endswith("StateEntered"):
            close()
            current = {
                "name": event["stateEnteredEventDetails"]["name"],
                "at": event.get("timestamp"),
                "attempts": 0,
                "errors": [],
                "outcome": None,
                "output": None,
            }
        elif current is None:
            continue
        elif kind == "TaskScheduled":
            current["attempts"] += 1
        elif kind in _TASK_END:
            current["outcome"] = _TASK_END[kind]
            details: dict[str, Any] = next((v for k, v in event.items() if k.endswith("EventDetails")), {})
            if kind == "TaskSucceeded":
                current["output"] = _json(details.get("output"))
            else:
                current["errors"].append(details.get("error") or kind)
    close()
    return found


def _json(text: Any) -> Any:
    try:
        return json.loads(text) if isinstance(text, str) else text
    except ValueError:
        return text


def _in_source_dlq(sqs: SQSClient, url: str, keys: set[str], request: TraceRequest) -> list[str]:
    """Message ids in the source DLQ whose id or body's key is one of `keys` (read, then made visible again)."""
    found: list[str] = []
    with HeldMessages(
        sqs, url, visibility_timeout=request.visibility_timeout, wait_seconds=request.wait_seconds
    ) as held:
        while batch := held.receive(10):
            for message in batch:
                key = message_key(message.get("Body"), request.key_field)
                if keys & {message["MessageId"], key}:
                    found.append(message["MessageId"])
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
