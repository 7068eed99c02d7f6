"""A small emulator of the template's EventBridge Pipe: SQS source, Step Functions target, FIRE_AND_FORGET.

moto stores pipes but never polls their sources, so this is the one runtime piece the rehearsal adds. It
follows the documented behaviour only:
- the pipe polls the source queue and invokes the target once per batch; a Step Functions target receives the
  batch as a JSON array of SQS records, even at batch size 1
  (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-pipes-sqs.html,
  https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-pipes-batching-concurrency.html);
- with FIRE_AND_FORGET the target is invoked asynchronously (StartExecution) and the batch's messages are
  deleted once that call succeeds (https://docs.aws.amazon.com/eventbridge/latest/pipes-reference/API_PipeTargetStateMachineParameters.html);
- when the invocation fails the messages are not deleted: they become visible again after the queue's
  visibility timeout, and after maxReceiveCount receives SQS's redrive policy moves them to the source queue's
  DLQ (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-pipes-error-troubleshooting.html).
  The emulator compresses the wait: it resets the visibility to 0 instead of waiting it out;
- SQS standard queues deliver at least once: a copy of a message may come back in a later receive, even after the
  message was deleted, because a server holding a copy missed the delete
  (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/standard-queues-at-least-once-delivery.html).
  `duplicate_next` makes the next batches come back once more, in the same poll, in the next poll, or only once
  the execution of their first delivery has ended (`duplicate_timing`).
With REQUEST_RESPONSE (an Express target) the pipe waits for the execution's result
(docs/design.md, "What the rehearsal emulates for REQUEST_RESPONSE"):
- it starts the execution with the same JSON array and waits for its end (StartSyncExecution, which moto lacks:
  the emulator starts the execution and `ended` hears its result); the message stays in flight, invisible for the
  queue's visibility timeout, meanwhile
  (https://docs.aws.amazon.com/step-functions/latest/apireference/API_StartSyncExecution.html);
- SUCCEEDED deletes the batch's messages with this receive's receipt handles; FAILED, TIMED_OUT or ABORTED, and a
  start the pipe saw fail, leave them: they become visible when the visibility timeout ends, on the rehearsal's
  clock, not compressed, and SQS moves a message to the source DLQ at the receive after maxReceiveCount
  (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-pipes-error-troubleshooting.html,
  https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-dead-letter-queues.html);
- a duplicate is SQS's own: the message becomes receivable again while its execution runs (`NEXT_POLL`: a copy,
  or a visibility timeout that ended), or once its deletion was missed by a server holding a copy (`AFTER_END`:
  the deleted message is back in the queue, same messageId, a new receive). Each such receive starts an execution
  and is decided by its own result.
A StartExecution over the account's quota (`start_quota`, a token bucket: fire_and_forget/rehearsal/quotas.py) is
refused with ThrottlingException. Which of the Pipes error classes that falls in is not stated
(https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-pipes-error-troubleshooting.html: retryable AWS
failures are retried, internal errors without counting against an SQS source's maxReceiveCount; customer invocation
errors up to it), so both readings are emulated (`throttle_reading`):
- COUNTED: the receive counts. The messages stay in flight for the queue's visibility timeout, on the rehearsal's
  clock, are received again when it ends, and SQS moves a message to the source DLQ at the receive after
  maxReceiveCount;
- RETRIED: the pipe keeps the batch and retries StartExecution until the bucket lets it through, without a new
  receive. The emulator takes no message while the bucket is empty and takes the next as soon as a token is back:
  the same starts, one after another as before, with the same receive counts, the backlog waiting in the queue
  (visible) where AWS would hold part of it in flight. The pipe's polling back-off under failures is not modelled.
A record carries each message attribute as `{stringValue | binaryValue (base64), stringListValues,
binaryListValues, dataType}`, and `md5OfMessageAttributes` when there are attributes, as the Pipes and Lambda SQS
event examples show (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-pipes-sqs.html,
https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from fire_and_forget.rehearsal import sqs_time
from fire_and_forget.rehearsal.deployment import ACCOUNT
from fire_and_forget.rehearsal.faults import FaultKind, FaultPlan
from fire_and_forget.rehearsal.quotas import TokenBucket
from fire_and_forget.rehearsal.sfn_responses import described_execution
from fire_and_forget.runtime.records import pipe_attribute

FIRE_AND_FORGET = "FIRE_AND_FORGET"
REQUEST_RESPONSE = "REQUEST_RESPONSE"


class ThrottleReading(StrEnum):
    """What a throttled StartExecution is to the pipe (see the module's note): both are documented possibilities."""

    COUNTED = "counted against maxReceiveCount"
    RETRIED = "retried by the pipe, not counted"


@dataclass(frozen=True)
class PipeDefinition:
    """The parts of an AWS::Pipes::Pipe resource the emulator obeys, with references resolved."""

    name: str
    source_queue_url: str
    source_queue_arn: str
    target_arn: str
    batch_size: int
    invocation_type: str


@dataclass
class PipeStats:
    started: list[str] = field(default_factory=list)  # execution ARNs
    start_failures: int = 0
    throttled: int = 0  # StartExecution calls the quota refused (also counted in start_failures)
    duplicates: int = 0  # batches delivered a second time (SQS at-least-once)
    # REQUEST_RESPONSE: the results the pipe waited for, and what it did with the messages.
    deleted: int = 0  # messages deleted after their execution succeeded
    returned: int = 0  # messages left in the queue after their execution did not succeed
    # Either mode: messageId -> when the pipe deleted it (the rehearsal's clock), the last time if it came back.
    deleted_at: dict[str, datetime] = field(default_factory=dict)


class DuplicateTiming(StrEnum):
    """When the second delivery of a duplicated batch arrives."""

    SAME_POLL = "same poll"  # right after the first, in one receive
    NEXT_POLL = "next poll"  # in the pipe's next receive, after the first delivery's execution started
    AFTER_END = "after the first execution ended"  # once the first delivery's execution is no longer running


@dataclass
class _Wait:
    """A REQUEST_RESPONSE invocation the pipe waits for: the receive its result decides."""

    messages: list[dict[str, Any]]
    missed_delete: bool  # AFTER_END: a server holding a copy misses this receive's deletion


@dataclass
class _LateCopy:
    records: list[dict[str, Any]]
    due_poll: int  # the poll from which it may arrive
    twin: str | None  # the first delivery's execution ARN (AFTER_END waits for it to end)


class PipeEmulator:
    """Moves messages from the source queue into executions, one poll at a time."""

    def __init__(self, definition: PipeDefinition, sqs: Any, sfn: Any, faults: FaultPlan, region: str) -> None:
        if definition.invocation_type not in (FIRE_AND_FORGET, REQUEST_RESPONSE):
            raise ValueError(f"a pipe's invocation type is FIRE_AND_FORGET or REQUEST_RESPONSE, not "
                             f"{definition.invocation_type}")
        self.definition = definition
        self.request_response = definition.invocation_type == REQUEST_RESPONSE
        self._sqs = sqs
        self._sfn = sfn
        self._faults = faults
        self._region = region
        self.stats = PipeStats()
        self.duplicate_next = 0  # how many of the next batches are delivered twice (SQS at-least-once)
        self.duplicate_timing = DuplicateTiming.SAME_POLL
        self._late: list[_LateCopy] = []
        self._waiting: dict[str, _Wait] = {}  # REQUEST_RESPONSE: execution ARN -> the receive it decides
        self.requeued = False  # a message became receivable since the last drain (a missed delete's copy)
        self._polls = 0
        # FIRE_AND_FORGET: the account's StartExecution bucket (None: unlimited) and what a throttle is to the pipe.
        self.start_quota: TokenBucket | None = None
        self.throttle_reading = ThrottleReading.COUNTED
        self._throttled = False  # the last _start was refused by the quota

    @property
    def copies_pending(self) -> int:
        """Second deliveries that have not arrived yet."""
        return len(self._late)

    @property
    def waiting(self) -> int:
        """REQUEST_RESPONSE invocations whose result the pipe still waits for."""
        return len(self._waiting)

    def poll(self) -> int:
        """One receive and hand-over; returns how many messages were received (late copies included)."""
        self._polls += 1
        if self.request_response:
            return self._receive_and_wait()
        received = self._deliver_late_copies()
        if self._holding_back():
            return received
        messages = self._receive()
        if not messages:
            return received
        records = [self._record(message) for message in messages]
        duplicate = self.duplicate_next > 0
        same_poll = duplicate and self.duplicate_timing is DuplicateTiming.SAME_POLL
        self.duplicate_next = max(0, self.duplicate_next - 1)
        for _ in range(2 if same_poll else 1):
            if self._start(records) is None:
                if not self._throttled:
                    self._make_visible(messages)
                # Throttled (COUNTED: RETRIED takes no message without a token): in flight until the visibility
                # timeout ends, on the clock, then received again.
                return received + len(messages)
        if same_poll:
            self.stats.duplicates += 1
        elif duplicate:
            twin = self.stats.started[-1] if self.duplicate_timing is DuplicateTiming.AFTER_END else None
            self._late.append(_LateCopy(records, self._polls + 1, twin))
        for message in messages:
            self._delete(message)
        return received + len(messages)

    def ended(self, execution_arn: str, status: str) -> None:
        """REQUEST_RESPONSE: the execution the pipe waited for ended with `status`. Success deletes its messages; any
        other end leaves them in the queue, to be received again when their visibility timeout ends."""
        wait = self._waiting.pop(execution_arn, None)
        if wait is None:
            return
        if status != "SUCCEEDED":
            self.stats.returned += len(wait.messages)
            return
        for message in wait.messages:
            copy = sqs_time.held_copy(self.definition.source_queue_url, message["MessageId"]) \
                if wait.missed_delete else None
            self._delete(message)
            self.stats.deleted += 1
            if copy is not None:
                copy()  # the server holding a copy missed the delete: the message can be received again
                self.stats.duplicates += 1
                self.requeued = True

    def _receive_and_wait(self) -> int:
        """REQUEST_RESPONSE: one receive, one synchronous invocation, the messages kept until its result."""
        messages = self._receive()
        if not messages:
            return 0
        duplicate = self.duplicate_next > 0
        self.duplicate_next = max(0, self.duplicate_next - 1)
        if duplicate and self.duplicate_timing is DuplicateTiming.SAME_POLL:
            raise ValueError("REQUEST_RESPONSE duplicates are SQS's: NEXT_POLL (receivable again while the execution "
                             "runs) or AFTER_END (a missed delete); SAME_POLL is a FIRE_AND_FORGET emulation")
        execution_arn = self._start([self._record(message) for message in messages])
        if execution_arn is not None:
            self._waiting[execution_arn] = _Wait(messages, duplicate and self.duplicate_timing is
                                                 DuplicateTiming.AFTER_END)
        if duplicate and self.duplicate_timing is DuplicateTiming.NEXT_POLL:
            self._make_visible(messages)  # receivable again at once, while this receive's execution runs
            self.stats.duplicates += 1
        return len(messages)

    def next_visible(self) -> datetime | None:
        """The earliest moment at which a message now invisible in the source queue can be received again."""
        return sqs_time.next_visible([self.definition.source_queue_url])

    def next_start(self) -> datetime | None:
        """RETRIED: when the bucket next lets a start through, if the pipe is holding back a backlog until then."""
        held_until = self._held_until()
        return held_until if held_until is not None and sqs_time.receivable(self.definition.source_queue_url) \
            else None

    def _holding_back(self) -> bool:
        """RETRIED: no token, so the pipe would only be retrying what it holds; it takes no new message."""
        return self._held_until() is not None

    def _held_until(self) -> datetime | None:
        """RETRIED with an empty bucket: the moment its next token comes; None when a start may go now."""
        if self.start_quota is None or self.throttle_reading is not ThrottleReading.RETRIED:
            return None
        now = datetime.now(UTC)
        moment = self.start_quota.next_token(now)
        return moment if moment > now else None

    def _make_visible(self, messages: list[dict[str, Any]]) -> None:
        for message in messages:
            self._sqs.change_message_visibility(QueueUrl=self.definition.source_queue_url,
                                                ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0)

    def _delete(self, message: dict[str, Any]) -> None:
        self._sqs.delete_message(QueueUrl=self.definition.source_queue_url, ReceiptHandle=message["ReceiptHandle"])
        self.stats.deleted_at[message["MessageId"]] = datetime.now(UTC)

    def _receive(self) -> list[dict[str, Any]]:
        if not sqs_time.receivable(self.definition.source_queue_url):
            return []  # what the receive would answer
        response = self._sqs.receive_message(
            QueueUrl=self.definition.source_queue_url,
            MaxNumberOfMessages=min(self.definition.batch_size, 10),
            AttributeNames=["All"],
            MessageAttributeNames=["All"],
            WaitTimeSeconds=0,
        )
        messages: list[dict[str, Any]] = response.get("Messages", [])
        return messages

    def drain(self, max_polls: int = 100_000, in_flight: Callable[[], int] | None = None,
              max_in_flight: int = 0, stalled: Callable[[], bool] = lambda: False) -> None:
        """Poll until the source queue has nothing visible left.

        With `max_in_flight`, polling pauses while that many executions are running: the rehearsal runs every
        Lambda invocation of every execution on one interpreter, one at a time, and hundreds of executions at once
        only make each of them slower. When they all wait on the clock (`stalled`: a Retry wait, an invocation's
        duration), nothing ends until the clock moves, so the drain stops there and the rest waits in the queue for
        the next stop of the clock.
        """
        self.requeued = False
        for _ in range(max_polls):
            while max_in_flight and in_flight is not None and in_flight() >= max_in_flight:
                if stalled():
                    return
                time.sleep(0.02)
            if self.poll() == 0:
                if not self._late:
                    return
                time.sleep(0.02)  # a copy waits for its twin's execution to end
        raise RuntimeError("the source queue did not drain")

    def _deliver_late_copies(self) -> int:
        """Start the late copies that are due; a copy whose StartExecution is refused comes back next poll."""
        delivered = 0
        for copy in list(self._late):
            if copy.due_poll > self._polls or (copy.twin is not None and self._running(copy.twin)):
                continue
            # The copy is a new receive of the same message: a new receipt handle, one receive more.
            records = [{**record, "receiptHandle": uuid.uuid4().hex,
                        "attributes": {**record["attributes"], "ApproximateReceiveCount": str(
                            int(record["attributes"].get("ApproximateReceiveCount", "1")) + 1)}}
                       for record in copy.records]
            if self._start(records) is not None:
                self._late.remove(copy)
                self.stats.duplicates += 1
            delivered += len(records)
        return delivered

    def _running(self, execution_arn: str) -> bool:
        return bool(described_execution(ACCOUNT, self._region, execution_arn)["status"] == "RUNNING")

    def _start(self, records: list[dict[str, Any]]) -> str | None:
        """Invoke the target; the execution's ARN when the pipe saw the call succeed, None when it saw it fail."""
        self._throttled = False
        if self.start_quota is not None and not self.request_response \
                and not self.start_quota.take(datetime.now(UTC)):
            self._throttled = True
            self.stats.throttled += 1
            self.stats.start_failures += 1
            return None
        fault = self._faults.take("StartExecution", records)
        if fault is FaultKind.START_REFUSED:
            self.stats.start_failures += 1
            return None
        response = self._sfn.start_execution(
            stateMachineArn=self.definition.target_arn,
            name=f"pipe-{uuid.uuid4().hex}",  # a pipe cannot set the name; AWS generates one
            input=json.dumps(records),
        )
        execution_arn: str = response["executionArn"]
        self.stats.started.append(execution_arn)
        if fault is FaultKind.RESPONSE_LOST:
            # The execution runs, but the pipe saw the call fail: the messages stay queued and come back.
            self.stats.start_failures += 1
            return None
        return execution_arn

    def _record(self, message: dict[str, Any]) -> dict[str, Any]:
        """An SQS record in the shape Pipes (like Lambda's event source mapping) delivers it."""
        attributes = {name: pipe_attribute(value) for name, value in message.get("MessageAttributes", {}).items()}
        record = {
            "messageId": message["MessageId"],
            "receiptHandle": message["ReceiptHandle"],
            "body": message["Body"],
            "attributes": message.get("Attributes", {}),
            "messageAttributes": attributes,
            "md5OfBody": message["MD5OfBody"],
            "eventSource": "aws:sqs",
            "eventSourceARN": self.definition.source_queue_arn,
            "awsRegion": self._region,
        }
        if "MD5OfMessageAttributes" in message:
            record["md5OfMessageAttributes"] = message["MD5OfMessageAttributes"]
        return record
