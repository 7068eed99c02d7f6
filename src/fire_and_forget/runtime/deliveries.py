"""Delivery claims: which execution owns an SQS messageId (a pipe cannot name executions, so duplicates start)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol

from botocore.exceptions import ClientError

from fire_and_forget.runtime.errors import aws_errors_as_transient, error_code

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient


class DeliveryClaims(Protocol):
    def claim(self, message_id: str, execution_arn: str) -> bool:
        """True when this execution owns the message (first claim, or its own retry) and nobody is reconciling it."""
        ...


# Set by the pipeline construct in REQUEST_RESPONSE mode on the function that claims (docs/construct.md).
STALE_AFTER_VARIABLE = "DELIVERY_CLAIM_STALE_AFTER_SECONDS"


def stale_after_from_env(environ: Mapping[str, str]) -> int | None:
    """The claim's takeover age from the environment (None: never taken over); a bad value is refused."""
    value = environ.get(STALE_AFTER_VARIABLE, "")
    if not value:
        return None
    if not value.isdigit() or int(value) <= 0:
        raise ValueError(f"{STALE_AFTER_VARIABLE} must be a positive number of seconds, got {value!r}")
    return int(value)


class DynamoDBDeliveryClaims:
    """Claims in the deliveries table, one row per messageId.

    `stale_after_seconds` (REQUEST_RESPONSE only): a claim that old, whose delivery never completed, belongs to an
    execution that can no longer be running (an Express workflow ends at its TimeoutSeconds, and an invocation it
    started at its function's timeout), so a later receive of the message takes it over. Without it a timed-out
    Express execution, which no Catch sees and nothing reconciles, would hold the message's claim until the row
    expires, and every further receive would end as a duplicate. Standard executions (FIRE_AND_FORGET) can run for a
    year and are reconciled: there a claim is never taken over.
    """

    def __init__(self, client: DynamoDBClient, table: str, ttl_seconds: int,
                 stale_after_seconds: int | None = None) -> None:
        self._client = client
        self._table = table
        self._ttl_seconds = ttl_seconds
        self._stale_after_seconds = stale_after_seconds

    def claim(self, message_id: str, execution_arn: str) -> bool:
        """An UpdateItem, never a PutItem: the row may already carry the Reconciler's state for this execution, and a
        claim must neither erase it nor succeed once reconciliation began (a late invocation of an execution that
        timed out or was stopped: what it would do now, the Reconciler could not undo)."""
        now = int(time.time())
        owner = "attribute_not_exists(messageId) OR executionArn = :arn"
        claimed_at = "if_not_exists(claimedAt, :now)"
        values = {":arn": {"S": execution_arn}, ":now": {"N": str(now)},
                  ":expires": {"N": str(now + self._ttl_seconds)}}
        if self._stale_after_seconds is not None:
            # Each claim (a retry of the owner's too) restamps claimedAt: the age counts from the latest invocation.
            owner += " OR (claimedAt < :stale AND attribute_not_exists(deliveredAt))"
            claimed_at = ":now"
            values[":stale"] = {"N": str(now - self._stale_after_seconds)}
        try:
            with aws_errors_as_transient("claiming the SQS message"):
                self._client.update_item(
                    TableName=self._table,
                    Key={"messageId": {"S": message_id}},
                    UpdateExpression=f"SET executionArn = :arn, claimedAt = {claimed_at}, "
                                     # Kept as long as idempotency records: a duplicate cannot outlive the claim.
                                     "expiresAt = if_not_exists(expiresAt, :expires)",
                    ConditionExpression=f"({owner}) AND attribute_not_exists(reconciliation)",
                    ExpressionAttributeValues=values,
                )
        except ClientError as error:
            if error_code(error) == "ConditionalCheckFailedException":
                return False
            raise
        return True
