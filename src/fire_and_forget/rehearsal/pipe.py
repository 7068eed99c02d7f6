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
A record carries each message attribute as `{stringValue | binaryValue (base64), stringListValues,
binaryListValues, dataType}`, and `md5OfMessageAttributes` when there are attributes, as the Pipes and Lambda SQS
event examples show (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-pipes-sqs.html,
https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html).
"""

from __future__ import annotations

import base64
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from fire_and_forget.rehearsal.faults import FaultKind, FaultPlan


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
    duplicates: int = 0  # batches delivered a second time (SQS at-least-once)


class DuplicateTiming(StrEnum):
    """When the second delivery of a duplicated batch arrives."""

    SAME_POLL = "same poll"  # right after the first, in one receive
    NEXT_POLL = "next poll"  # in the pipe's next receive, after the first delivery's execution started
    AFTER_END = "after the first execution ended"  # once the first delivery's execution is no longer running


@dataclass
class _LateCopy:
    records: list[dict[str, Any]]
    due_poll: int  # the poll from which it may arrive
    twin: str | None  # the first delivery's execution ARN (AFTER_END waits for it to end)


class PipeEmulator:
    """Moves messages from the source queue into executions, one poll at a time."""

    def __init__(self, definition: PipeDefinition, sqs: Any, sfn: Any, faults: FaultPlan, region: str) -> None:
        if definition.invocation_type != "FIRE_AND_FORGET":
            raise ValueError(f"the offline pipe emulates FIRE_AND_FORGET only, not {definition.invocation_type}")
        self.definition = definition
        self._sqs = sqs
        self._sfn = sfn
        self._faults = faults
        self._region = region
        self.stats = PipeStats()
        self.duplicate_next = 0  # how many of the next batches are delivered twice (SQS at-least-once)
        self.duplicate_timing = DuplicateTiming.SAME_POLL
        self._late: list[_LateCopy] = []
        self._polls = 0

    @property
    def copies_pending(self) -> int:
        """Second deliveries that have not arrived yet."""
        return len(self._late)

    def poll(self) -> int:
        """One receive and hand-over; returns how many messages were received (late copies included)."""
        self._polls += 1
        received = self._deliver_late_copies()
        response = self._sqs.receive_message(
            QueueUrl=self.definition.source_queue_url,
            MaxNumberOfMessages=min(self.definition.batch_size, 10),
            AttributeNames=["All"],
            MessageAttributeNames=["All"],
            WaitTimeSeconds=0,
        )
        messages = response.get("Messages", [])
        if not messages:
            return received
        records = [self._record(message) for message in messages]
        duplicate = self.duplicate_next > 0
        same_poll = duplicate and self.duplicate_timing is DuplicateTiming.SAME_POLL
        self.duplicate_next = max(0, self.duplicate_next - 1)
        for _ in range(2 if same_poll else 1):
            if not self._start(records):
                for message in messages:
                    self._sqs.change_message_visibility(
                        QueueUrl=self.definition.source_queue_url,
                        ReceiptHandle=message["ReceiptHandle"],
                        VisibilityTimeout=0,
                    )
                return received + len(messages)
        if same_poll:
            self.stats.duplicates += 1
        elif duplicate:
            twin = self.stats.started[-1] if self.duplicate_timing is DuplicateTiming.AFTER_END else None
            self._late.append(_LateCopy(records, self._polls + 1, twin))
        for message in messages:
            self._sqs.delete_message(QueueUrl=self.definition.source_queue_url, ReceiptHandle=message["ReceiptHandle"])
        return received + len(messages)

    def drain(self, max_polls: int = 100_000, in_flight: Callable[[], int] | None = None,
              max_in_flight: int = 0) -> None:
        """Poll until the source queue has nothing visible left.

        With `max_in_flight`, polling pauses while that many executions are running. The rehearsal runs every
        Lambda invocation of every execution on one interpreter, one at a time, so hundreds of executions at once
        would queue for the handlers long enough to hit the Tasks' real TimeoutSeconds, which AWS, running the
        invocations side by side, would not.
        """
        for _ in range(max_polls):
            while max_in_flight and in_flight is not None and in_flight() >= max_in_flight:
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
            if self._start(records):
                self._late.remove(copy)
                self.stats.duplicates += 1
            delivered += len(records)
        return delivered

    def _running(self, execution_arn: str) -> bool:
        return bool(self._sfn.describe_execution(executionArn=execution_arn)["status"] == "RUNNING")

    def _start(self, records: list[dict[str, Any]]) -> bool:
        fault = self._faults.take("StartExecution", records)
        if fault is FaultKind.START_REFUSED:
            self.stats.start_failures += 1
            return False
        response = self._sfn.start_execution(
            stateMachineArn=self.definition.target_arn,
            name=f"pipe-{uuid.uuid4().hex}",  # a pipe cannot set the name; AWS generates one
            input=json.dumps(records),
        )
        self.stats.started.append(response["executionArn"])
        if fault is FaultKind.RESPONSE_LOST:
            # The execution runs, but the pipe saw the call fail: the messages stay queued and come back.
            self.stats.start_failures += 1
            return False
        return True

    def _record(self, message: dict[str, Any]) -> dict[str, Any]:
        """An SQS record in the shape Pipes (like Lambda's event source mapping) delivers it."""
        attributes = {name: _record_attribute(value) for name, value in message.get("MessageAttributes", {}).items()}
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


def _record_attribute(value: dict[str, Any]) -> dict[str, Any]:
    """ReceiveMessage's {DataType, StringValue | BinaryValue (bytes)} in the record's shape (binary as base64)."""
    attribute: dict[str, Any] = {"stringListValues": [], "binaryListValues": [], "dataType": value["DataType"]}
    if "BinaryValue" in value:
        attribute["binaryValue"] = base64.b64encode(value["BinaryValue"]).decode("ascii")
    else:
        attribute["stringValue"] = value.get("StringValue")
    return attribute
