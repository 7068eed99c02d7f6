"""Delivery claims: which execution owns an SQS messageId (a pipe cannot name executions, so duplicates start)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Protocol

from botocore.exceptions import ClientError

from fire_and_forget.runtime.errors import aws_errors_as_transient, error_code

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient


class DeliveryClaims(Protocol):
    def claim(self, message_id: str, execution_arn: str) -> bool:
        """True when this execution owns the message (first claim, or its own retry) and nobody is reconciling it."""
        ...


class DynamoDBDeliveryClaims:
    def __init__(self, client: DynamoDBClient, table: str, ttl_seconds: int) -> None:
        self._client = client
        self._table = table
        self._ttl_seconds = ttl_seconds

    def claim(self, message_id: str, execution_arn: str) -> bool:
        """An UpdateItem, never a PutItem: the row may already carry the Reconciler's state for this execution, and a
        claim must neither erase it nor succeed once reconciliation began (a late invocation of an execution that
        timed out or was stopped: what it would do now, the Reconciler could not undo)."""
        now = int(time.time())
        try:
            with aws_errors_as_transient("claiming the SQS message"):
                self._client.update_item(
                    TableName=self._table,
                    Key={"messageId": {"S": message_id}},
                    UpdateExpression="SET executionArn = :arn, claimedAt = if_not_exists(claimedAt, :now), "
                                     # Kept as long as idempotency records: a duplicate cannot outlive the claim.
                                     "expiresAt = if_not_exists(expiresAt, :expires)",
                    ConditionExpression="(attribute_not_exists(messageId) OR executionArn = :arn) "
                                        "AND attribute_not_exists(reconciliation)",
                    ExpressionAttributeValues={
                        ":arn": {"S": execution_arn},
                        ":now": {"N": str(now)},
                        ":expires": {"N": str(now + self._ttl_seconds)},
                    },
                )
        except ClientError as error:
            if error_code(error) == "ConditionalCheckFailedException":
                return False
            raise
        return True
