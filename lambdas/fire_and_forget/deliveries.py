"""Delivery claims: which execution owns an SQS messageId (a pipe cannot name executions, so duplicates start)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Protocol

from botocore.exceptions import ClientError

from fire_and_forget.errors import aws_errors_as_transient, error_code

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient


class DeliveryClaims(Protocol):
    def claim(self, message_id: str, execution_arn: str) -> bool:
        """True when this execution owns the message (first claim, or its own retry)."""
        ...


class DynamoDBDeliveryClaims:
    def __init__(self, client: DynamoDBClient, table: str, ttl_seconds: int) -> None:
        self._client = client
        self._table = table
        self._ttl_seconds = ttl_seconds

    def claim(self, message_id: str, execution_arn: str) -> bool:
        now = int(time.time())
        try:
            with aws_errors_as_transient("claiming the SQS message"):
                self._client.put_item(
                    TableName=self._table,
                    Item={
                        "messageId": {"S": message_id},
                        "executionArn": {"S": execution_arn},
                        "claimedAt": {"N": str(now)},
                        # Kept as long as idempotency records: a duplicate cannot outlive the claim.
                        "expiresAt": {"N": str(now + self._ttl_seconds)},
                    },
                    ConditionExpression="attribute_not_exists(messageId) OR executionArn = :arn",
                    ExpressionAttributeValues={":arn": {"S": execution_arn}},
                )
        except ClientError as error:
            if error_code(error) == "ConditionalCheckFailedException":
                return False
            raise
        return True
