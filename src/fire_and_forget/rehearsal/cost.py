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
    "express_request": Price(1.00 / 1e6, "Express workflow request (each execution started)",
                             "https://aws.amazon.com/step-functions/pricing/"),
    "express_gb_second": Price(0.00001667, "Express workflow GB-second (the first tier)",
                               "https://aws.amazon.com/step-functions/pricing/"),
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
# Express: billed by duration, rounded up to 100 ms, in 64 MB chunks of memory (the pricing page). A workflow whose
# definition and payload are a few KB takes the smallest chunk; its duration is its tasks': each Lambda task
# LAMBDA_BILLED_MS, each other service task (DynamoDB) SERVICE_TASK_MS, as assumed, not measured.
EXPRESS_MEMORY_GB = 64 / 1024
EXPRESS_BILLING_MS = 100
SERVICE_TASK_MS = 20


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
    express_requests: int = 0  # Express executions started (an Express workflow bills no transitions)
    express_gb_seconds: float = 0.0

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
            + self.express_requests * PRICES["express_request"].usd
            + self.express_gb_seconds * PRICES["express_gb_second"].usd
        )


def usage_of_execution(history: list[dict[str, Any]], retries: int, dynamodb: Units | None = None, *,
                       express: bool = False, waited_seconds: float = 0.0) -> Usage:
    """Usage of one execution from its history: states entered plus retries are the billed transitions (Standard),
    or one request and its duration (`express`: EXPRESS_MEMORY_GB for its tasks' assumed time plus the
    `waited_seconds` of its Retry intervals, rounded up to 100 ms).
    DynamoDB's request units are not in a history: pass what the rehearsal's meter counted for this execution
    (capacity.py), whether its functions or its own DynamoDB tasks made the calls."""
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
    if express:
        service_tasks = sum(1 for event in history if event["type"] == "TaskScheduled") - usage.lambda_invocations
        milliseconds = (usage.lambda_invocations * LAMBDA_BILLED_MS + service_tasks * SERVICE_TASK_MS
                        + int(waited_seconds * 1000))
        billed = -(-max(milliseconds, 1) // EXPRESS_BILLING_MS) * EXPRESS_BILLING_MS
        usage.express_requests, usage.express_gb_seconds = 1, EXPRESS_MEMORY_GB * billed / 1000
        usage.transitions = 0
    return usage


def per_million(total: Usage, messages: int) -> float:
    """US dollars per one million messages with the same mix."""
    return total.cost() / messages * 1_000_000 if messages else 0.0


def add(total: Usage, one: Usage) -> None:
    for usage in fields(Usage):
        setattr(total, usage.name, getattr(total, usage.name) + getattr(one, usage.name))
