"""Cost model: what a message costs in AWS, from the usage the offline rehearsal counts, at list prices."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from fire_and_forget.rehearsal.capacity import Units

PRICES_READ_ON = "2026-11-29"
REGION = "us-east-1"


@dataclass(frozen=True)
class Price:
    usd: float
    per: str
    source: str


# List prices in us-east-1, as read on PRICES_READ_ON from the pages named.
PRICES = {
    "state_transition": Price(0.000025, "Standard workflow state transition (retries count)",
                              "https://aws.amazon.com/step-functions/pricing/"),
    "pipe_request": Price(0.40 / 1e6, "Pipes request (per 64 KB chunk)", "https://aws.amazon.com/eventbridge/pricing/"),
    "sqs_request": Price(0.40 / 1e6, "SQS standard request (per 64 KB chunk)", "https://aws.amazon.com/sqs/pricing/"),
    "lambda_request": Price(0.20 / 1e6, "Lambda request", "https://aws.amazon.com/lambda/pricing/"),
    "lambda_gb_second": Price(0.0000133334, "Lambda GB-second on arm64", "https://aws.amazon.com/lambda/pricing/"),
    "sns_publish": Price(0.50 / 1e6, "SNS publish (per 64 KB chunk)", "https://aws.amazon.com/sns/pricing/"),
    "dynamodb_write": Price(0.625 / 1e6, "DynamoDB on-demand write request unit",
                            "https://aws.amazon.com/dynamodb/pricing/on-demand/"),
    "dynamodb_read": Price(0.125 / 1e6, "DynamoDB on-demand read request unit",
                           "https://aws.amazon.com/dynamodb/pricing/on-demand/"),
}

# Assumptions where the rehearsal cannot measure AWS: stated, so they can be argued with.
LAMBDA_MEMORY_GB = 0.25  # the functions' configured 256 MB
LAMBDA_BILLED_MS = 100  # a DynamoDB-bound handler's warm duration in AWS; offline timings are not AWS timings
SQS_REQUESTS_PER_MESSAGE = 3  # SendMessage by the caller, ReceiveMessage and DeleteMessage by the pipe


@dataclass
class Usage:
    """Billable requests of one message (or a sum of messages)."""

    transitions: int = 0
    lambda_invocations: int = 0
    sns_publishes: int = 0
    sqs_requests: int = 0
    pipe_requests: int = 0
    dynamodb_writes: float = 0.0  # write request units, metered (capacity.py), not requests
    dynamodb_reads: float = 0.0  # read request units, metered likewise

    def cost(self) -> float:
        """US dollars."""
        lambda_gb_s = self.lambda_invocations * LAMBDA_MEMORY_GB * LAMBDA_BILLED_MS / 1000
        return (
            self.transitions * PRICES["state_transition"].usd
            + self.pipe_requests * PRICES["pipe_request"].usd
            + self.sqs_requests * PRICES["sqs_request"].usd
            + self.lambda_invocations * PRICES["lambda_request"].usd
            + lambda_gb_s * PRICES["lambda_gb_second"].usd
            + self.sns_publishes * PRICES["sns_publish"].usd
            + self.dynamodb_writes * PRICES["dynamodb_write"].usd
            + self.dynamodb_reads * PRICES["dynamodb_read"].usd
        )


def usage_of_execution(history: list[dict[str, Any]], retries: int, dynamodb: Units | None = None) -> Usage:
    """Usage of one execution from its history: states entered plus retries are the billed transitions. DynamoDB's
    request units are not in a history: pass what the rehearsal's meter counted for this execution (capacity.py),
    whether its functions or its own DynamoDB tasks made the calls."""
    usage = Usage(sqs_requests=SQS_REQUESTS_PER_MESSAGE, pipe_requests=1)
    if dynamodb is not None:
        usage.dynamodb_writes, usage.dynamodb_reads = dynamodb.write, dynamodb.read
    for event in history:
        kind = str(event["type"])
        if kind.endswith("StateEntered"):
            usage.transitions += 1
        elif kind == "TaskScheduled":
            resource = str((event.get("taskScheduledEventDetails") or {}).get("resourceType", ""))
            if resource == "lambda":
                usage.lambda_invocations += 1
            elif resource == "sns":
                usage.sns_publishes += 1
            elif resource == "sqs":
                usage.sqs_requests += 1
    usage.transitions += retries
    return usage


def per_million(total: Usage, messages: int) -> float:
    """US dollars per one million messages with the same mix."""
    return total.cost() / messages * 1_000_000 if messages else 0.0


def add(total: Usage, one: Usage) -> None:
    for usage in fields(Usage):
        setattr(total, usage.name, getattr(total, usage.name) + getattr(one, usage.name))
