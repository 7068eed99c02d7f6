"""Redriver entry point (``redriver.handler``): the schedule's `{"time": "<scheduled time>"}`, every few minutes.
Each run sends back the failure DLQ's transient failures whose cool-off has passed (auto_redrive), then, when the
policy says so, what the pipe could not hand over from the source DLQ (source_return).

"Now" is the schedule's time, not the clock's, so a run decides the same for the same input (and the offline
rehearsal compresses the cool-offs by advancing its clock)."""

from __future__ import annotations

import os
from datetime import timedelta
from functools import cache
from typing import TYPE_CHECKING, Any

import boto3
from aws_lambda_powertools.metrics import MetricUnit

from fire_and_forget.healing.announcements import Announcer, AnnouncerSettings
from fire_and_forget.healing.auto_redrive import redrive_due
from fire_and_forget.healing.reconciliation import event_time
from fire_and_forget.healing.source_return import ReturnReport, return_to_source
from fire_and_forget.healing.telemetry import (
    AUTO_REDRIVEN,
    NEEDING_A_PERSON,
    OVERDUE,
    RETRIES_EXHAUSTED,
    SOURCE_DLQ_NEEDING_A_PERSON,
    SOURCE_DLQ_RETURNED,
    WAITING_FOR_RETRY,
    logger,
    metrics,
)
from fire_and_forget.runtime.healing_policy import Disposition, HealingPolicy
from fire_and_forget.runtime.status import link_redrive, redrive_links

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_sqs import SQSClient


@cache
def _sqs() -> SQSClient:
    """The SQS client, made once per execution environment: the function runs every few minutes, mostly to find
    nothing due, and a client costs more to make than that run's one ReceiveMessage (Lambda's best practices:
    initialize SDK clients outside the handler)."""
    return boto3.client("sqs")


@cache
def _dynamodb() -> DynamoDBClient:
    """The DynamoDB client, made once per execution environment like the SQS one; used only when a run sends a
    message back (its status link) or announces one it cannot."""
    return boto3.client("dynamodb")


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    now = event_time(event.get("time"))
    policy = HealingPolicy.from_environment()
    report = redrive_due(_sqs(), dlq_url=os.environ["FAILURE_DLQ_URL"],
                         source_url=os.environ["SOURCE_QUEUE_URL"], policy=policy,
                         now=now, key_field=os.environ["MESSAGE_KEY_FIELD"],
                         period=timedelta(seconds=int(os.environ["REDRIVE_PERIOD_SECONDS"])),
                         sent=redrive_links(_dynamodb(), os.environ["DELIVERIES_TABLE_NAME"],
                                            int(os.environ["DELIVERY_CLAIM_TTL_SECONDS"])))
    announced = []
    if report.unsendable:  # rare: no clients for it on the usual run
        announcer = Announcer(dynamodb=_dynamodb(), sns=boto3.client("sns"),
                              settings=AnnouncerSettings.from_environment(os.environ))
        announced = [record.message_id for record, found in report.unsendable
                     if announcer.announce(record, found, now)]
    metrics.add_metric(name=AUTO_REDRIVEN, unit=MetricUnit.Count, value=report.redriven)
    metrics.add_metric(name=WAITING_FOR_RETRY, unit=MetricUnit.Count, value=report.waiting)
    metrics.add_metric(name=NEEDING_A_PERSON, unit=MetricUnit.Count, value=report.needing_a_person)
    metrics.add_metric(name=RETRIES_EXHAUSTED, unit=MetricUnit.Count,
                       value=report.dispositions[Disposition.EXHAUSTED])
    metrics.add_metric(name=OVERDUE, unit=MetricUnit.Count, value=report.overdue)
    returned = _return_from_source_dlq(policy)
    outcomes = [{"messageId": o.message_id, "key": o.key, "error": o.error, "action": o.action.value,
                 "newMessageId": o.new_message_id, "reason": o.reason}
                for o in (report.redrive.outcomes if report.redrive else [])]
    logger.info("auto-redrive", extra={"dispositions": {d.value: n for d, n in report.dispositions.items()},
                                       "due": report.due, "redriven": report.redriven, "overdue": report.overdue,
                                       "announced": announced, "outcomes": outcomes})
    left = [o for o in outcomes if o["action"] not in ("redriven", "copy-deleted")]
    if left:
        logger.warning("due records left in the failure DLQ; the next run tries again", extra={"left": left})
    return {"redriven": report.redriven, "waiting": report.waiting, "needingAPerson": report.needing_a_person,
            "overdue": report.overdue, "announced": len(announced),
            **({"sourceDlq": {"returned": returned.returned, "spent": returned.spent, "later": returned.later,
                              "refused": returned.refused}} if returned is not None else {})}


def _return_from_source_dlq(policy: HealingPolicy) -> ReturnReport | None:
    """What the pipe could not hand over, back to the source queue (None: the policy leaves it for a person)."""
    if not policy.returns_source_dlq:
        return None
    table, ttl = os.environ["DELIVERIES_TABLE_NAME"], int(os.environ["DELIVERY_CLAIM_TTL_SECONDS"])

    def link(caller: str, copy: str) -> None:
        link_redrive(_dynamodb(), table, first_message_id=caller, copy_message_id=copy, ttl_seconds=ttl)

    returned = return_to_source(_sqs(), dlq_url=os.environ["SOURCE_DLQ_URL"],
                                source_url=os.environ["SOURCE_QUEUE_URL"], policy=policy,
                                per_second=policy.source_return_per_second,
                                period_seconds=int(os.environ["REDRIVE_PERIOD_SECONDS"]), sent=link)
    metrics.add_metric(name=SOURCE_DLQ_RETURNED, unit=MetricUnit.Count, value=returned.returned)
    metrics.add_metric(name=SOURCE_DLQ_NEEDING_A_PERSON, unit=MetricUnit.Count, value=returned.spent)
    logger.info("source-dlq-return", extra={"returned": returned.returned, "spent": returned.spent,
                                            "later": returned.later, "refused": returned.refused,
                                            "sent": [{"messageId": caller, "newMessageId": copy}
                                                     for caller, copy in returned.sent]})
    return returned
