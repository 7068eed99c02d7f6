"""The completion webhook's enrichment (``completion.handler``): one notice per caller message whose outcome became
final, from the deliveries table's stream, for the pipe to deliver to the caller's URL.

The pipe (fire_and_forget/construct/completion_webhook.py) reads the table's stream (new and old images), keeps the
records whose new image carries an outcome or a reconciliation summary, and passes each batch here; what this returns
is what the pipe sends through the EventBridge API destination, one request per notice. A record becomes a notice
when it is an *ending* (fire_and_forget.healing.endings: it settled the attempt the caller's message leads to now, and
that status is final), so each attempt notifies at most once per outcome it settles, and a failure the Redriver will
retry notifies nothing until its copy settles. Delivery is at least once (the pipe retries a batch whose target call
failed, and a retried batch is enriched again): `notificationId`, the attempt's message id and its state, is the
receiver's idempotency key.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from functools import cache
from typing import TYPE_CHECKING, Any

import boto3

from fire_and_forget.healing.endings import endings
from fire_and_forget.healing.telemetry import count, logger, metrics
from fire_and_forget.runtime.healing_policy import HealingPolicy
from fire_and_forget.runtime.status import MessageStatus

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_stepfunctions import SFNClient

NOTICE_SCHEMA = "fire-and-forget.completion.v1"
NOTICES_SENT = "CompletionNoticesSent"  # notices handed to the pipe (each delivered at least once)


def notices(records: Iterable[Mapping[str, Any]], *, dynamodb: DynamoDBClient, stepfunctions: SFNClient, table: str,
            policy: HealingPolicy) -> list[dict[str, Any]]:
    """The notices a batch of the deliveries table's stream records gives, one per record at most, in sequence."""
    return [notice(ending.status) for ending in endings(records, dynamodb=dynamodb, stepfunctions=stepfunctions,
                                                          table=table, policy=policy)]


def notice(status: MessageStatus) -> dict[str, Any]:
    """What the caller's URL receives: the message's final status, with the key that makes a repeat recognisable."""
    public = {name: value for name, value in status.as_json().items() if name != "ticket"}  # the operators' own
    return {"schema": NOTICE_SCHEMA, "notificationId": f"{status.attempt_message_id}:{status.state.value}", **public}


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
