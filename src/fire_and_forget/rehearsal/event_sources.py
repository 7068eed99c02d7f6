"""Emulates the template's Lambda event source mappings on SQS queues: poll, invoke, delete what Lambda deletes.

moto creates an AWS::Lambda::EventSourceMapping from the template, but then invokes the function on every
SendMessage, one message per invocation, with a fixed fake record, and deletes on success: nothing like Lambda. The
deployment therefore leaves the mappings out (fire_and_forget/rehearsal/deployment.py, EMULATED_TYPES) and this module
runs them as
Lambda documents it:
- Lambda polls the queue, receives up to BatchSize messages (receives are made with the queue's own visibility
  timeout) and invokes the function synchronously with an event whose `Records` carry messageId, receiptHandle,
  body, attributes (ApproximateReceiveCount, SentTimestamp, SenderId, ApproximateFirstReceiveTimestamp, ...),
  messageAttributes in the camelCase shape, md5OfBody, eventSource "aws:sqs", eventSourceARN and awsRegion
  (https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html);
- when the invocation succeeds Lambda deletes the batch; when it fails (a function error, or the Invoke call itself
  failing) nothing is deleted and the messages come back after the visibility timeout, so the queue's redrive
  policy moves a message to its DLQ after maxReceiveCount receives. With FunctionResponseTypes
  ["ReportBatchItemFailures"] a response `{"batchItemFailures": [{"itemIdentifier": <messageId>}]}` keeps only the
  listed messages; an empty or null list, or an empty or null response, is complete success; an itemIdentifier that
  is empty, null, under another key or not a message of the batch, or a response that is not such an object, is
  complete failure (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-errorhandling.html). Without
  ReportBatchItemFailures the response is ignored.
A message left undeleted stays invisible for the queue's visibility timeout on the rehearsal's virtual clock
(clock.py) and is received again once the clock has passed it (`next_visible` tells the rehearsal when).
moto 5.2.5 applies a RedrivePolicy on ReceiveMessage itself: a message received maxReceiveCount times goes to the
DLQ on the next receive, as SQS does.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from botocore.exceptions import ClientError

from fire_and_forget.rehearsal import sqs_time
from fire_and_forget.runtime.records import pipe_attribute

EVENT_SOURCE_MAPPING = "AWS::Lambda::EventSourceMapping"
REPORT_BATCH_ITEM_FAILURES = "ReportBatchItemFailures"
MAX_SQS_RECEIVE = 10  # ReceiveMessage returns at most 10 messages; Lambda batches larger than that over receives


@dataclass(frozen=True)
class SqsEventSourceMapping:
    """The parts of an AWS::Lambda::EventSourceMapping on an SQS queue the emulator obeys, references resolved."""

    logical_id: str
    queue_url: str
    queue_arn: str
    function_name: str
    batch_size: int = 10
    report_batch_item_failures: bool = False
    enabled: bool = True


@dataclass
class MappingStats:
    """What one mapping did: invocations and their outcome, and what it deleted or left on the queue."""

    invocations: int = 0
    failed_invocations: int = 0  # function errors and failed Invoke calls: the whole batch stays
    partial_batches: int = 0  # invocations that reported some batch item failures
    deleted: int = 0
    returned: int = 0  # messages left on the queue (visible again after the visibility timeout)


@dataclass
class SqsPoller:
    """One mapping's poller: what Lambda's event source mapping does for one SQS queue."""

    mapping: SqsEventSourceMapping
    sqs: Any
    lambda_client: Any
    region: str
    stats: MappingStats = field(default_factory=MappingStats)

    def poll(self) -> int:
        """One receive (up to BatchSize) and one synchronous invocation; returns how many messages it received."""
        if not self.mapping.enabled or not sqs_time.receivable(self.mapping.queue_url):
            return 0  # disabled, or what the receive would answer
        messages: list[dict[str, Any]] = []
        while len(messages) < self.mapping.batch_size:
            batch = self.sqs.receive_message(
                QueueUrl=self.mapping.queue_url,
                MaxNumberOfMessages=min(MAX_SQS_RECEIVE, self.mapping.batch_size - len(messages)),
                AttributeNames=["All"],
                MessageAttributeNames=["All"],
                WaitTimeSeconds=0,
            ).get("Messages", [])
            messages.extend(batch)
            if len(batch) < MAX_SQS_RECEIVE:
                break
        if not messages:
            return 0
        records = [sqs_record(message, self.mapping.queue_arn, self.region) for message in messages]
        failed = self._invoke(records)
        for message in messages:
            if message["MessageId"] in failed:
                self.stats.returned += 1  # it comes back when its visibility timeout has passed
            else:
                self.sqs.delete_message(QueueUrl=self.mapping.queue_url, ReceiptHandle=message["ReceiptHandle"])
                self.stats.deleted += 1
        return len(messages)

    def _invoke(self, records: list[dict[str, Any]]) -> set[str]:
        """Invoke the function with the batch; returns the message ids Lambda would leave on the queue."""
        everything = {record["messageId"] for record in records}
        self.stats.invocations += 1
        try:
            response = self.lambda_client.invoke(
                FunctionName=self.mapping.function_name,
                InvocationType="RequestResponse",
                Payload=json.dumps({"Records": records}).encode("utf-8"),
            )
        except ClientError:  # the Lambda service refused the call (throttled, 5xx): the batch stays
            self.stats.failed_invocations += 1
            return everything
        payload = response["Payload"].read()
        if response.get("FunctionError"):
            self.stats.failed_invocations += 1
            return everything
        if not self.mapping.report_batch_item_failures:
            return set()
        failed = batch_item_failures(payload, everything)
        if failed is None:
            self.stats.failed_invocations += 1
            return everything
        if failed:
            self.stats.partial_batches += 1
        return failed


def batch_item_failures(payload: bytes, message_ids: set[str]) -> set[str] | None:
    """The message ids a partial batch response lists, or None when Lambda reads the response as complete failure."""
    text = payload.decode("utf-8").strip() if payload else ""
    if not text:
        return set()  # an empty response
    try:
        response = json.loads(text)
    except ValueError:
        return None
    if response is None:
        return set()
    if not isinstance(response, dict):
        return None
    failures = response.get("batchItemFailures")
    if failures is None:
        return set()
    if not isinstance(failures, list):
        return None
    listed: set[str] = set()
    for failure in failures:
        identifier = failure.get("itemIdentifier") if isinstance(failure, dict) else None
        if not isinstance(identifier, str) or identifier not in message_ids:
            return None
        listed.add(identifier)
    return listed


class EventSourceMappings:
    """Every SQS event source mapping of the stack; `drain` runs them until their queues have nothing to give."""

    def __init__(self, pollers: Iterable[SqsPoller]) -> None:
        self.pollers = list(pollers)

    @classmethod
    def from_stack(
        cls, assembly: Any, stack: Any, queue_urls: dict[str, str], sqs: Any, lambda_client: Any, region: str
    ) -> EventSourceMappings:
        """The mappings of the template (none is fine), resolved against the deployed stack."""
        return cls(
            SqsPoller(mapping, sqs, lambda_client, region) for mapping in read_mappings(assembly, stack, queue_urls)
        )

    def poll(self) -> int:
        """One poll of every mapping; returns how many messages they received together."""
        return sum(poller.poll() for poller in self.pollers)

    def drain(self, max_polls: int = 1000) -> int:
        """Poll until no mapping receives anything (a queue empty, or holding nothing receivable); returns the total
        received. Raises after `max_polls` rounds: a queue that never drains is a bug in the caller's setup."""
        total = 0
        for _ in range(max_polls):
            received = self.poll()
            if received == 0:
                return total
            total += received
        raise RuntimeError(f"the event source mappings' queues did not drain in {max_polls} polls")

    def next_visible(self) -> datetime | None:
        """The earliest moment at which a message now invisible in a mapping's queue can be received again."""
        return sqs_time.next_visible(poller.mapping.queue_url for poller in self.pollers)

    def stats(self, function_name: str) -> MappingStats:
        """The stats of the mapping that invokes `function_name` (the first one, if there are several)."""
        return next(poller.stats for poller in self.pollers if poller.mapping.function_name == function_name)


def read_mappings(assembly: Any, stack: Any, queue_urls: dict[str, str]) -> list[SqsEventSourceMapping]:
    """The template's event source mappings; only SQS sources are emulated, another source is refused but a
    DynamoDB stream's (the tickets': their function is tested on the stream moto records,
    tests/workflow/test_message_status.py)."""
    mappings = []
    for logical_id, resource in assembly.resources_of_type(EVENT_SOURCE_MAPPING).items():
        props = resource["Properties"]
        if "StreamArn" in json.dumps(props["EventSourceArn"]):  # a table's stream
            continue
        source_arn = stack.resolve(props["EventSourceArn"])
        if source_arn not in queue_urls:
            raise ValueError(f"{logical_id}: the offline rehearsal emulates SQS event sources only, not {source_arn}")
        function = stack.resolve(props["FunctionName"])
        mappings.append(
            SqsEventSourceMapping(
                logical_id=logical_id,
                queue_url=queue_urls[source_arn],
                queue_arn=source_arn,
                function_name=str(function).rsplit(":function:", 1)[-1],
                batch_size=int(props.get("BatchSize", 10)),
                report_batch_item_failures=REPORT_BATCH_ITEM_FAILURES in props.get("FunctionResponseTypes", []),
                enabled=bool(props.get("Enabled", True)),
            )
        )
    return mappings


def sqs_record(message: dict[str, Any], queue_arn: str, region: str) -> dict[str, Any]:
    """One ReceiveMessage result as a record of Lambda's SQS event (with-sqs.html's example event)."""
    record = {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": dict(message.get("Attributes", {})),
        "messageAttributes": {
            name: pipe_attribute(value) for name, value in message.get("MessageAttributes", {}).items()
        },
        "md5OfBody": message["MD5OfBody"],
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": region,
    }
    if "MD5OfMessageAttributes" in message:
        record["md5OfMessageAttributes"] = message["MD5OfMessageAttributes"]
    return record
