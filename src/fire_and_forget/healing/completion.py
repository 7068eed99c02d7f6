"""The completion webhook's enrichment (``completion.handler``): one notice per caller message whose outcome became
final, from the deliveries table's stream, for the pipe to deliver to the caller's URL.

The pipe (fire_and_forget/construct/completion_webhook.py) reads the table's stream (new and old images), keeps the
records whose new image carries an outcome or a reconciliation summary, and passes each batch here; what this returns
is what the pipe sends through the EventBridge API destination, one request per notice. A record becomes a notice
when all of these hold:
- it *settled* its row: the new image records an outcome (succeeded, failed, absorbed) or a reconciled failure and the
  old image did not, so a later write on a settled row (a redrive's link, the Reconciler's last stage) adds none;
- the row's attempt is the one the caller's message leads to now (`read_status` from the caller's id, which a
  redriven copy's execution carries in its `ffFirstMessageId` attribute): a failure already redriven is not final;
- that status is final: succeeded, absorbed, or failed with no automatic redrive to follow by the stack's
  HealingPolicy.
So each attempt notifies at most once per outcome it settles, and a failure the Redriver will retry notifies nothing
until its copy settles. Delivery is at least once (the pipe retries a batch whose target call failed, and a retried
batch is enriched again): `notificationId`, the attempt's message id and its state, is the receiver's idempotency key.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from functools import cache
from typing import TYPE_CHECKING, Any

import boto3
from botocore.exceptions import ClientError

from fire_and_forget.healing.telemetry import count, logger, metrics
from fire_and_forget.runtime.healing_policy import HealingPolicy, first_message_id
from fire_and_forget.runtime.status import MessageStatus, read_status, row_from_image

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_stepfunctions import SFNClient

NOTICE_SCHEMA = "fire-and-forget.completion.v1"
NOTICES_SENT = "CompletionNoticesSent"  # notices handed to the pipe (each delivered at least once)


def settled(row: Mapping[str, Any] | None) -> bool:
    """The row records how its attempt ended: an outcome, or a failure the Reconciler recorded."""
    return row is not None and ("outcome" in row or ("reconciliation" in row and "summary" in row))


def notices(records: Iterable[Mapping[str, Any]], *, dynamodb: DynamoDBClient, stepfunctions: SFNClient, table: str,
            policy: HealingPolicy) -> list[dict[str, Any]]:
    """The notices a batch of the deliveries table's stream records gives, one per record at most, in sequence."""
    found = []
    for record in records:
        change = record.get("dynamodb") or {}
        new, old = row_from_image(change.get("NewImage")), row_from_image(change.get("OldImage"))
        if new is None or not settled(new) or settled(old) or not isinstance(new.get("messageId"), str):
            continue
        attempt = new["messageId"]
        caller = _caller_message_id(stepfunctions, new.get("executionArn")) or attempt
        status = read_status(dynamodb, table, caller, policy)
        if status.final and status.attempt_message_id == attempt:
            found.append(notice(status))
    return found


def notice(status: MessageStatus) -> dict[str, Any]:
    """What the caller's URL receives: the message's final status, with the key that makes a repeat recognisable."""
    return {"schema": NOTICE_SCHEMA, "notificationId": f"{status.attempt_message_id}:{status.state.value}",
            **status.as_json()}


def _caller_message_id(stepfunctions: SFNClient, execution_arn: Any) -> str | None:
    """The caller's message id a redriven copy carries (its execution's first record's `ffFirstMessageId`), or the
    record's own; None when the execution is gone (past Step Functions' 90-day retention) or never recorded."""
    if not isinstance(execution_arn, str):
        return None
    try:
        described = stepfunctions.describe_execution(executionArn=execution_arn)
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") == "ExecutionDoesNotExist":
            return None
        raise
    try:
        batch = json.loads(described.get("input") or "null")
    except ValueError:
        return None
    return first_message_id(batch[0]) if isinstance(batch, list) and batch else None


@cache
def _dynamodb() -> DynamoDBClient:
    return boto3.client("dynamodb")


@cache
def _stepfunctions() -> SFNClient:
    return boto3.client("stepfunctions")


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
def handler(event: list[dict[str, Any]], context: LambdaContext) -> list[dict[str, Any]]:
    """A Pipes enrichment: the batch in (a JSON array of stream records), the notices out (an array, maybe empty:
    the pipe then sends nothing for the batch)."""
    found = notices(event, dynamodb=_dynamodb(), stepfunctions=_stepfunctions(),
                    table=os.environ["DELIVERIES_TABLE_NAME"], policy=HealingPolicy.from_environment())
    for item in found:
        logger.info("completion notice", extra={"notificationId": item["notificationId"], "state": item["state"]})
    if found:
        count(NOTICES_SENT, len(found))
    return found
