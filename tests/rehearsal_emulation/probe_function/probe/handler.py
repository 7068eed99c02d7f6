"""A probe function for the emulator tests: it records every event it gets and fails where the event says so."""

from __future__ import annotations

import json
import os
from typing import Any

import boto3


def _record(event: Any) -> None:
    boto3.client("sqs").send_message(QueueUrl=os.environ["OBSERVATIONS_QUEUE_URL"], MessageBody=json.dumps(event))


def consume(event: dict[str, Any], _context: Any) -> dict[str, Any]:
    """An SQS consumer: a record whose body is {"outcome": "fail"} is reported as a batch item failure, one with
    {"outcome": "raise"} makes the whole invocation fail."""
    _record(event)
    outcomes = {record["messageId"]: json.loads(record["body"]).get("outcome") for record in event["Records"]}
    if "raise" in outcomes.values():
        raise RuntimeError("a record asked the function to fail")
    return {"batchItemFailures": [{"itemIdentifier": mid} for mid, outcome in outcomes.items() if outcome == "fail"]}


def handle(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """An SQS batch goes to `consume`, anything else (a schedule's payload) to `tick`."""
    return consume(event, context) if "Records" in event else tick(event, context)


def tick(event: dict[str, Any], _context: Any) -> dict[str, Any]:
    """A scheduled target: records the payload it was invoked with; with REDRIVE_QUEUE_URL set it also sends one
    message there, as a redriver puts a failed request back on the source queue."""
    _record(event)
    if "REDRIVE_QUEUE_URL" in os.environ:
        boto3.client("sqs").send_message(QueueUrl=os.environ["REDRIVE_QUEUE_URL"], MessageBody=json.dumps(event))
    return {"ok": True}
