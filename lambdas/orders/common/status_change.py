"""The one conditional write every compensation makes: done -> undone, once, and only by the attempt that did it."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from common.errors import aws_errors_as_transient, error_code

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef


def undo_once(
    client: DynamoDBClient,
    *,
    table: str,
    key: dict[str, AttributeValueTypeDef],
    done: str,
    undone: str,
    attempt_id: str,
    stamp: str,
    action: str,
) -> dict[str, Any] | None:
    """Set status `done` -> `undone` (and `stamp` to now) if this attempt did it; the item's new attributes, or None
    when there was nothing of this attempt's to undo (absent, already undone, or another attempt's: that attempt
    may still complete). AWS errors that may pass become TransientError."""
    try:
        with aws_errors_as_transient(action):
            response = client.update_item(
                TableName=table,
                Key=key,
                UpdateExpression=f"SET #status = :undone, {stamp} = :now",
                ConditionExpression="#status = :done AND attemptId = :attempt",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues={
                    ":undone": {"S": undone},
                    ":done": {"S": done},
                    ":attempt": {"S": attempt_id},
                    ":now": {"N": str(int(time.time()))},
                },
                ReturnValues="ALL_NEW",
            )
    except ClientError as error:
        if error_code(error) == "ConditionalCheckFailedException":
            return None
        raise
    return dict(response["Attributes"])
