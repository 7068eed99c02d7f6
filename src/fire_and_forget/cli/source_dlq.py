"""`source-dlq redrive`: SQS's own StartMessageMoveTask moves the source DLQ back to the source queue.

The source DLQ is filled by the source queue's redrive policy, so SQS can move it back itself (no hand-written
receive/send loop). Only one move task can run per DLQ: a running one is watched instead of starting another. A move
task takes no selection: it moves every message in the DLQ when it starts, at MaxNumberOfMessagesPerSecond (--rate).
So the command first lists the DLQ's messages (read, then made visible again at once: fire_and_forget/runtime/dlq.py)
for the operator to confirm; a message that arrives between the list and the start is moved too.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from fire_and_forget.runtime.dlq import DEFAULT_VISIBILITY_TIMEOUT, HeldMessages
from fire_and_forget.runtime.records import DEFAULT_KEY_FIELD, message_key

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import ListMessageMoveTasksResultEntryTypeDef

TERMINAL = frozenset({"COMPLETED", "CANCELLED", "FAILED"})
LIST_LIMIT = 10_000  # messages listed before the move at most (the move task moves them all)


@dataclass(frozen=True)
class Listed:
    """A message of the source DLQ as the list before the move shows it."""

    message_id: str
    key: str | None  # its body's key field (the stack's MessageKeyField), None when it has none


@dataclass(frozen=True)
class MoveTask:
    """One message move task as ListMessageMoveTasks reports it."""

    task_handle: str | None  # only a RUNNING task has one
    status: str  # RUNNING | COMPLETED | CANCELLING | CANCELLED | FAILED
    moved: int
    to_move: int | None
    failure_reason: str | None
    started_at: datetime | None

    @property
    def finished(self) -> bool:
        return self.status in TERMINAL


@dataclass(frozen=True)
class MoveResult:
    """What `source-dlq redrive` did: started a task, joined one already running, or found nothing to move."""

    started: bool
    messages_before: int
    task: MoveTask | None
    waited: bool
    listed: tuple[Listed, ...] = ()
    declined: bool = False  # the operator answered no: nothing was started

    @property
    def succeeded(self) -> bool:
        return self.task is None or self.task.status in ("COMPLETED", "RUNNING")


def queue_arn(sqs: SQSClient, queue_url: str) -> str:
    return sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]


def list_messages(sqs: SQSClient, dlq_url: str, key_field: str = DEFAULT_KEY_FIELD, *,
                  visibility_timeout: int = DEFAULT_VISIBILITY_TIMEOUT, wait_seconds: int | None = None,
                  limit: int = LIST_LIMIT) -> list[Listed]:
    """The DLQ's messages (up to `limit`), each made visible again before this returns."""
    listed: list[Listed] = []
    with HeldMessages(sqs, dlq_url, visibility_timeout=visibility_timeout, wait_seconds=wait_seconds) as held:
        while len(listed) < limit and (batch := held.receive(min(10, limit - len(listed)))):
            listed.extend(Listed(m["MessageId"], message_key(m.get("Body"), key_field)) for m in batch)
    return listed


def running_task(sqs: SQSClient, dlq_arn: str) -> MoveTask | None:
    """The DLQ's move task when one is still running (only one can run per DLQ); None otherwise."""
    latest = _latest(sqs, dlq_arn)
    return latest if latest is not None and not latest.finished else None


def redrive_source_dlq(sqs: SQSClient, dlq_url: str, dlq_arn: str, destination_arn: str, *,
                       max_per_second: int | None = None, wait: bool = True, poll_seconds: float = 2.0,
                       timeout_seconds: float = 3600.0, progress: Callable[[MoveTask], None] | None = None,
                       started: Callable[[str, int], None] | None = None,
                       sleep: Callable[[float], None] = time.sleep) -> MoveResult:
    """Start (or join) the move task, then follow it until it ends, unless `wait` is False; `started` is told of a
    task this call started (its handle, the DLQ's depth) as soon as SQS accepted it."""
    depth = int(sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["ApproximateNumberOfMessages"])
                ["Attributes"].get("ApproximateNumberOfMessages", "0"))
    latest = _latest(sqs, dlq_arn)
    begun = latest is None or latest.finished
    if latest is None or latest.finished:
        if depth == 0:
            return MoveResult(started=False, messages_before=0, task=None, waited=False)
        if max_per_second is None:
            handle = sqs.start_message_move_task(SourceArn=dlq_arn, DestinationArn=destination_arn)["TaskHandle"]
        else:
            handle = sqs.start_message_move_task(SourceArn=dlq_arn, DestinationArn=destination_arn,
                                                 MaxNumberOfMessagesPerSecond=max_per_second)["TaskHandle"]
        if started is not None:
            started(handle, depth)
        latest = _latest(sqs, dlq_arn) or MoveTask(handle, "RUNNING", 0, depth, None, None)
    if progress is not None:
        progress(latest)
    deadline = time.monotonic() + timeout_seconds
    while wait and not latest.finished and time.monotonic() < deadline:
        sleep(poll_seconds)
        latest = _latest(sqs, dlq_arn) or latest
        if progress is not None:
            progress(latest)
    return MoveResult(started=begun, messages_before=depth, task=latest, waited=wait)


def _latest(sqs: SQSClient, dlq_arn: str) -> MoveTask | None:
    """The most recent move task of this DLQ (SQS lists the latest first)."""
    results = sqs.list_message_move_tasks(SourceArn=dlq_arn, MaxResults=1).get("Results", [])
    return _task(results[0]) if results else None


def _task(entry: ListMessageMoveTasksResultEntryTypeDef) -> MoveTask:
    started = entry.get("StartedTimestamp")
    return MoveTask(
        task_handle=entry.get("TaskHandle"),
        status=entry.get("Status", "UNKNOWN"),
        moved=int(entry.get("ApproximateNumberOfMessagesMoved", 0)),
        to_move=entry.get("ApproximateNumberOfMessagesToMove"),
        failure_reason=entry.get("FailureReason"),
        started_at=datetime.fromtimestamp(started / 1000, tz=UTC) if started is not None else None,
    )
