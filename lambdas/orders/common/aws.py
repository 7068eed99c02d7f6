"""boto3 clients created on first use and reused for the life of the execution environment."""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

import boto3
from botocore.config import Config

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient
    from mypy_boto3_sqs.client import SQSClient

# The state machine owns retries (with backoff and a budget per step): botocore retrying on its own as
# well would multiply attempts and hide throttling from the TransientError metric, so keep it short: `max_attempts`
# counts retries after the first call (botocore's Config reference), so 3 calls at most per request.
_CONFIG = Config(retries={"mode": "standard", "max_attempts": 2}, connect_timeout=2, read_timeout=5)


@cache
def dynamodb() -> DynamoDBClient:
    """The DynamoDB low-level client (the resource layer costs extra cold-start time for little here)."""
    return boto3.client("dynamodb", config=_CONFIG)


@cache
def sqs() -> SQSClient:
    return boto3.client("sqs", config=_CONFIG)


def reset() -> None:
    """Forget cached clients (tests switch emulated accounts between cases)."""
    dynamodb.cache_clear()
    sqs.cache_clear()
