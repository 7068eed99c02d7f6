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
  The emulator compresses the wait: it resets the visibility to 0 instead of waiting it out.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from offline.faults import FaultKind, FaultPlan


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

    def poll(self) -> int:
        """One receive and hand-over; returns how many messages were received."""
        response = self._sqs.receive_message(
            QueueUrl=self.definition.source_queue_url,
            MaxNumberOfMessages=min(self.definition.batch_size, 10),
            AttributeNames=["All"],
            MessageAttributeNames=["All"],
            WaitTimeSeconds=0,
        )
        messages = response.get("Messages", [])
        if not messages:
            return 0
        records = [self._record(message) for message in messages]
        deliveries = 2 if self.duplicate_next > 0 else 1
        self.duplicate_next = max(0, self.duplicate_next - 1)
        for _ in range(deliveries):
            if not self._start(records):
                for message in messages:
                    self._sqs.change_message_visibility(
                        QueueUrl=self.definition.source_queue_url,
                        ReceiptHandle=message["ReceiptHandle"],
                        VisibilityTimeout=0,
                    )
                return len(messages)
        for message in messages:
            self._sqs.delete_message(QueueUrl=self.definition.source_queue_url, ReceiptHandle=message["ReceiptHandle"])
        return len(messages)

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
                return
        raise RuntimeError("the source queue did not drain")

    def _start(self, records: list[dict[str, Any]]) -> bool:
        if self._faults.take("StartExecution", records) is FaultKind.START_REFUSED:
            self.stats.start_failures += 1
            return False
        response = self._sfn.start_execution(
            stateMachineArn=self.definition.target_arn,
            name=f"pipe-{uuid.uuid4().hex}",  # a pipe cannot set the name; AWS generates one
            input=json.dumps(records),
        )
        self.stats.started.append(response["executionArn"])
        return True

    def _record(self, message: dict[str, Any]) -> dict[str, Any]:
        """An SQS record in the shape Pipes (like Lambda's event source mapping) delivers it."""
        attributes = {
            name: {
                "stringValue": value.get("StringValue"),
                "stringListValues": [],
                "binaryListValues": [],
                "dataType": value["DataType"],
            }
            for name, value in message.get("MessageAttributes", {}).items()
        }
        return {
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
