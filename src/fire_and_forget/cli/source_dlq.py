"""`source-dlq redrive`: SQS's own StartMessageMoveTask moves the source DLQ back to the source queue.

The source DLQ is filled by the source queue's redrive policy, so SQS can move it back itself (no hand-written
receive/send loop). Only one move task can run per DLQ: a running one is watched instead of starting another.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import ListMessageMoveTasksResultEntryTypeDef

TERMINAL = frozenset({"COMPLETED", "CANCELLED", "FAILED"})


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

    @property
    def succeeded(self) -> bool:
        return self.task is None or self.task.status in ("COMPLETED", "RUNNING")


def queue_arn(sqs: SQSClient, queue_url: str) -> str:
    return sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]


def redrive_source_dlq(sqs: SQSClient, dlq_url: str, dlq_arn: str, destination_arn: str, *,
                       max_per_second: int | None = None, wait: bool = True, poll_seconds: float = 2.0,
                       timeout_seconds: float = 3600.0, progress: Callable[[MoveTask], None] | None = None,
                       sleep: Callable[[float], None] = time.sleep) -> MoveResult:
    """Start (or join) the move task, then follow it until it ends, unless `wait` is False."""
    depth = int(sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["ApproximateNumberOfMessages"])
                ["Attributes"].get("ApproximateNumberOfMessages", "0"))
    latest = _latest(sqs, dlq_arn)
    started = False
    if latest is None or latest.finished:
        if depth == 0:
            return MoveResult(started=False, messages_before=0, task=None, waited=False)
        if max_per_second is None:
            handle = sqs.start_message_move_task(SourceArn=dlq_arn, DestinationArn=destination_arn)["TaskHandle"]
        else:
            handle = sqs.start_message_move_task(SourceArn=dlq_arn, DestinationArn=destination_arn,
                                                 MaxNumberOfMessagesPerSecond=max_per_second)["TaskHandle"]
        started = True
        latest = _latest(sqs, dlq_arn) or MoveTask(handle, "RUNNING", 0, depth, None, None)
    if progress is not None:
        progress(latest)
    deadline = time.monotonic() + timeout_seconds
    while wait and not latest.finished and time.monotonic() < deadline:
        sleep(poll_seconds)
        latest = _latest(sqs, dlq_arn) or latest
        if progress is not None:
            progress(latest)
    return MoveResult(started=started, messages_before=depth, task=latest, waited=wait)


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
