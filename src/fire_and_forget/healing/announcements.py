"""The Redriver's announcement of a failure record it cannot resend: once per execution, whatever its runs do.

Such a record (disposition `cannot-redrive`: its message would break an SQS limit once the redrive adds its own two
attributes) was recorded as waiting for an automatic retry, so neither the failure tail nor the Reconciler announced
it. The Redriver finds it on every run; it announces it only after taking a marker row in the deliveries table
(`announced#<executionArn>`, so the records of one execution are announced once) with a conditional update, and
moves the row CLAIMED -> ANNOUNCED around the publish, as the Reconciler moves a message's row: a second run finds
ANNOUNCED and does nothing, a run that crashed before publishing is resumed after its lease. The window left is the
one every announcer here has (SNS standard topics do not deduplicate): a crash between SNS accepting the publish
and the row saying ANNOUNCED announces twice.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import ClientError

from fire_and_forget.healing.alerts import failure_alert
from fire_and_forget.runtime.errors import error_code
from fire_and_forget.runtime.healing_policy import Classification
from fire_and_forget.runtime.records import FailureRecord

MARKER_PREFIX = "announced#"  # never an SQS messageId (a UUID), so never a delivery's own row
# Longer than a Redriver run can last (its 120 s timeout), so two runs never both publish; shorter than its default
# 5-minute period, so the next run resumes one that crashed between its claim and its publish.
LEASE_SECONDS = 240
CLAIMED, ANNOUNCED = "CLAIMED", "ANNOUNCED"


@dataclass(frozen=True)
class AnnouncerSettings:
    pipeline: str
    environment: str
    title: str
    region: str
    alerts_topic_arn: str
    deliveries_table: str
    marker_ttl_seconds: int  # as long as the delivery claims: longer than a record can stay in the failure DLQ

    @classmethod
    def from_environment(cls, env: Mapping[str, str]) -> AnnouncerSettings:
        return cls(pipeline=env["PIPELINE_NAME"], environment=env["ENVIRONMENT_NAME"], title=env["WORKFLOW_TITLE"],
                   region=env["AWS_REGION"], alerts_topic_arn=env["ALERTS_TOPIC_ARN"],
                   deliveries_table=env["DELIVERIES_TABLE_NAME"],
                   marker_ttl_seconds=int(env["DELIVERY_CLAIM_TTL_SECONDS"]))


class Announcer:
    def __init__(self, *, dynamodb: Any, sns: Any, settings: AnnouncerSettings) -> None:
        self._dynamodb, self._sns, self._settings = dynamodb, sns, settings

    def announce(self, record: FailureRecord, found: Classification, now: datetime) -> bool:
        """Publish the record's alert unless it was (or is being) announced; True when this call published it."""
        marker = MARKER_PREFIX + (record.execution_arn or record.message_id)
        if not self._claim(marker, record, now):
            return False
        try:
            self._publish(record, found)
        except Exception:
            self._release(marker)  # a failure this run saw: the next run may try at once
            raise
        self._dynamodb.update_item(TableName=self._settings.deliveries_table, Key={"messageId": {"S": marker}},
                                   UpdateExpression="SET announcement = :announced REMOVE announceLeaseUntil",
                                   ExpressionAttributeValues={":announced": {"S": ANNOUNCED}})
        return True

    def _claim(self, marker: str, record: FailureRecord, now: datetime) -> bool:
        stamp = int(now.timestamp())
        try:
            self._dynamodb.update_item(
                TableName=self._settings.deliveries_table,
                Key={"messageId": {"S": marker}},
                UpdateExpression="SET announcement = :claimed, announceLeaseUntil = :lease, executionArn = :arn, "
                                 "expiresAt = if_not_exists(expiresAt, :ttl)",
                ConditionExpression="attribute_not_exists(messageId) OR "
                                    "(announcement <> :announced AND announceLeaseUntil < :now)",
                ExpressionAttributeValues={
                    ":claimed": {"S": CLAIMED}, ":announced": {"S": ANNOUNCED},
                    ":lease": {"N": str(stamp + LEASE_SECONDS)}, ":now": {"N": str(stamp)},
                    ":arn": {"S": record.execution_arn or "-"},
                    ":ttl": {"N": str(stamp + self._settings.marker_ttl_seconds)},
                },
            )
        except ClientError as error:
            if error_code(error) != "ConditionalCheckFailedException":
                raise
            return False  # announced already, or another run holds the lease
        return True

    def _publish(self, record: FailureRecord, found: Classification) -> None:
        settings = self._settings
        alert = failure_alert(
            environment=settings.environment, title=settings.title, pipeline=settings.pipeline,
            region=settings.region,
            failure={"state": record.failed_state, "error": record.error, "cause": record.cause or ""},
            manual_repair=record.manual_repair, execution_arn=record.execution_arn or record.message_id,
            status=record.status, disposition=found.disposition.value,
            failed_at=record.failed_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if record.failed_at else "",
            note=f"The automatic redrive cannot send it back: {found.reason}. "
                 "Resend it by hand: ff-ops failures redrive --key <key> (without the redrive's attributes).")
        self._sns.publish(TopicArn=settings.alerts_topic_arn, Subject=alert.subject, MessageStructure="json",
                          Message=alert.message())

    def _release(self, marker: str) -> None:
        with contextlib.suppress(ClientError):  # if this fails too, the lease lapses by itself
            self._dynamodb.update_item(TableName=self._settings.deliveries_table, Key={"messageId": {"S": marker}},
                                       UpdateExpression="SET announceLeaseUntil = :lapsed",
                                       ConditionExpression="announcement = :claimed",
                                       ExpressionAttributeValues={":claimed": {"S": CLAIMED}, ":lapsed": {"N": "0"}})
