"""The Redriver's announcer (fire_and_forget/healing/announcements.py) rule by rule, on moto's DynamoDB and SNS: its
settings from the environment, the marker row's every attribute through CLAIMED and ANNOUNCED, a record without an
execution, the alert's content, and a publish that failed while its release failed too."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from fire_and_forget.healing.announcements import (
    ANNOUNCED,
    CLAIMED,
    LEASE_SECONDS,
    MARKER_PREFIX,
    Announcer,
    AnnouncerSettings,
)
from fire_and_forget.runtime.healing_policy import Classification, Disposition
from fire_and_forget.runtime.records import FailureRecord, parse

NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)
ARN = "arn:aws:states:eu-west-1:123456789012:execution:saga:e1"
FOUND = Classification(Disposition.UNSENDABLE, 1, None, "the message has 9 message attributes")
SETTINGS = AnnouncerSettings(pipeline="orders", environment="prod", title="Order saga", region="eu-west-1",
                             alerts_topic_arn="", deliveries_table="deliveries", marker_ttl_seconds=1_296_000)


def test_the_settings_are_read_from_the_functions_environment() -> None:
    environment = {"PIPELINE_NAME": "orders", "ENVIRONMENT_NAME": "prod", "WORKFLOW_TITLE": "Order saga",
                   "AWS_REGION": "eu-west-1", "ALERTS_TOPIC_ARN": "arn:aws:sns:eu-west-1:123456789012:alerts",
                   "DELIVERIES_TABLE_NAME": "deliveries", "DELIVERY_CLAIM_TTL_SECONDS": "1296000", "OTHER": "x"}
    assert AnnouncerSettings.from_environment(environment) == replace(
        SETTINGS, alerts_topic_arn="arn:aws:sns:eu-west-1:123456789012:alerts")


def record(message_id: str = "dlq-1", **changes: Any) -> FailureRecord:
    body = {"kind": "fire-and-forget.failure.v1",
            "record": {"messageId": "msg-1", "body": json.dumps({"orderId": "o1"}), "messageAttributes": {}},
            "failure": {"state": "ChargePayment", "error": "TransientError", "cause": "throttled"},
            "manualRepair": False, "executionArn": ARN, "failedAt": "2026-12-01T12:30:45.678+01:00"}
    body.update(changes)
    parsed = parse({"MessageId": message_id, "ReceiptHandle": "r", "Body": json.dumps(body)})
    assert isinstance(parsed, FailureRecord)
    return parsed


class Updates:
    """The account's DynamoDB, whose UpdateItem raises `failing` (a ClientError) while it is set."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self.failing: ClientError | None = None

    def update_item(self, **kwargs: Any) -> Any:
        if self.failing is not None:
            raise self.failing
        return self._client.update_item(**kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


@pytest.fixture
def aws() -> Iterator[dict[str, Any]]:
    with mock_aws():
        sns = boto3.client("sns", region_name="eu-west-1")
        dynamodb = boto3.client("dynamodb", region_name="eu-west-1")
        topic = sns.create_topic(Name="alerts")["TopicArn"]
        dynamodb.create_table(TableName="deliveries", BillingMode="PAY_PER_REQUEST",
                              AttributeDefinitions=[{"AttributeName": "messageId", "AttributeType": "S"}],
                              KeySchema=[{"AttributeName": "messageId", "KeyType": "HASH"}])
        published: list[dict[str, Any]] = []
        publish = sns.publish

        def capture(**kwargs: Any) -> Any:
            published.append(kwargs)
            return publish(**kwargs)

        sns.publish = capture  # type: ignore[method-assign]
        updates = Updates(dynamodb)
        announcer = Announcer(dynamodb=updates, sns=sns, settings=replace(SETTINGS, alerts_topic_arn=topic))
        yield {"announcer": announcer, "dynamodb": dynamodb, "updates": updates, "published": published,
               "sns": sns, "topic": topic}


def marker(aws: dict[str, Any], key: str) -> dict[str, Any]:
    item = aws["dynamodb"].get_item(TableName="deliveries", Key={"messageId": {"S": key}},
                                    ConsistentRead=True).get("Item", {})
    return {name: next(iter(value.values())) for name, value in item.items()}


def test_the_marker_row_of_an_announced_execution(aws: dict[str, Any]) -> None:
    assert MARKER_PREFIX == "announced#" and LEASE_SECONDS == 240
    assert aws["announcer"].announce(record(), FOUND, NOW) is True
    assert marker(aws, f"announced#{ARN}") == {
        "messageId": f"announced#{ARN}", "announcement": ANNOUNCED, "executionArn": ARN,
        "expiresAt": str(int(NOW.timestamp()) + 1_296_000)}  # no lease left once announced


def test_a_claimed_marker_holds_a_lease_of_240_seconds_and_keeps_its_expiry(aws: dict[str, Any]) -> None:
    # A run that claimed the marker long ago and died: its lease has lapsed
    aws["dynamodb"].put_item(TableName="deliveries", Item={
        "messageId": {"S": f"announced#{ARN}"}, "announcement": {"S": CLAIMED}, "announceLeaseUntil": {"N": "7"},
        "executionArn": {"S": ARN}, "expiresAt": {"N": "42"}})

    def die(**_kwargs: Any) -> None:
        raise SystemExit("the function's process ended")

    aws["sns"].publish = die
    with pytest.raises(SystemExit):
        aws["announcer"].announce(record(), FOUND, NOW)
    assert marker(aws, f"announced#{ARN}") == {
        "messageId": f"announced#{ARN}", "announcement": CLAIMED, "executionArn": ARN, "expiresAt": "42",
        "announceLeaseUntil": str(int(NOW.timestamp()) + 240)}


def test_a_record_without_an_execution_is_announced_once_by_its_own_message_id(aws: dict[str, Any]) -> None:
    alone = record("dlq-7", executionArn=None)
    assert aws["announcer"].announce(alone, FOUND, NOW) is True
    assert aws["announcer"].announce(alone, FOUND, NOW + timedelta(minutes=5)) is False
    assert marker(aws, "announced#dlq-7")["executionArn"] == "-"
    (call,) = aws["published"]
    assert dict(json.loads(json.loads(call["Message"])["default"])["metadata"]["additionalContext"])[
        "executionArn"] == "dlq-7"


def test_the_alert_says_what_the_record_is_and_how_to_resend_it(aws: dict[str, Any]) -> None:
    aws["announcer"].announce(record(manualRepair=True), FOUND, NOW)
    (call,) = aws["published"]
    assert (call["TopicArn"], call["MessageStructure"]) == (aws["topic"], "json")
    assert call["Subject"] == "[prod] Order saga failed in ChargePayment"
    message = json.loads(call["Message"])
    lines = message["email"].splitlines()
    assert lines[2:9] == [
        "Execution status: FAILED", "Failed state: ChargePayment", "Error: TransientError", "Cause: throttled",
        "Manual repair needed: true", "Waiting for: cannot-redrive",
        "The automatic redrive cannot send it back: the message has 9 message attributes. Resend it by hand: "
        "ff-ops failures redrive --key <key> (without the redrive's attributes)."]
    assert f"https://console.aws.amazon.com/states/home?region=eu-west-1#/v2/executions/details/{ARN}" in lines[10]
    context = json.loads(message["default"])["metadata"]["additionalContext"]
    assert context == {"pipeline": "orders", "environment": "prod", "status": "FAILED",
                       "failedState": "ChargePayment", "error": "TransientError", "manualRepair": "true",
                       "disposition": "cannot-redrive", "executionArn": ARN, "failedAt": "2026-12-01T11:30:45Z"}


def test_the_failure_time_is_announced_in_utc_whatever_the_machines_zone(aws: dict[str, Any],
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        aws["announcer"].announce(record(), FOUND, NOW)
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
    context = json.loads(json.loads(aws["published"][0]["Message"])["default"])["metadata"]["additionalContext"]
    assert context["failedAt"] == "2026-12-01T11:30:45Z"


def test_the_reconcilers_record_is_announced_with_how_its_execution_ended(aws: dict[str, Any]) -> None:
    timed_out = record(reconciliation={"status": "TIMED_OUT"}, failure={"state": "ArrangeShipping",
                                                                        "error": "States.Timeout"})
    aws["announcer"].announce(timed_out, FOUND, NOW)
    (call,) = aws["published"]
    assert call["Subject"] == "[prod] Order saga timed out in ArrangeShipping"
    assert "\nCause: \n" in json.loads(call["Message"])["email"]


def test_a_record_without_a_failure_time_is_announced_without_one(aws: dict[str, Any]) -> None:
    aws["announcer"].announce(record(failedAt=None), FOUND, NOW)
    context = json.loads(json.loads(aws["published"][0]["Message"])["default"])["metadata"]["additionalContext"]
    assert context["failedAt"] == ""


def test_a_publish_that_failed_is_raised_even_when_its_release_fails_too(aws: dict[str, Any]) -> None:
    def refuse(**_kwargs: Any) -> None:
        raise ClientError({"Error": {"Code": "InternalError", "Message": "publish refused"}}, "Publish")

    aws["sns"].publish = refuse
    original_claim = aws["announcer"]._claim

    def claim_then_fail_updates(*args: Any) -> bool:
        claimed: bool = original_claim(*args)
        aws["updates"].failing = ClientError({"Error": {"Code": "ThrottlingException"}}, "UpdateItem")
        return claimed

    aws["announcer"]._claim = claim_then_fail_updates
    with pytest.raises(ClientError, match="publish refused"):
        aws["announcer"].announce(record(), FOUND, NOW)
    # The lease was not let go: the next run waits for it to lapse
    aws["updates"].failing = None
    aws["announcer"]._claim = original_claim
    aws["sns"].publish = lambda **kwargs: None
    assert aws["announcer"].announce(record(), FOUND, NOW + timedelta(seconds=LEASE_SECONDS)) is False
    assert aws["announcer"].announce(record(), FOUND, NOW + timedelta(seconds=LEASE_SECONDS + 1)) is True


def test_a_released_marker_lets_the_next_run_in_at_once(aws: dict[str, Any]) -> None:
    def refuse(**_kwargs: Any) -> None:
        raise ClientError({"Error": {"Code": "InternalError"}}, "Publish")

    publish = aws["sns"].publish
    aws["sns"].publish = refuse
    with pytest.raises(ClientError):
        aws["announcer"].announce(record(), FOUND, NOW)
    assert marker(aws, f"announced#{ARN}")["announceLeaseUntil"] == "0"
    assert marker(aws, f"announced#{ARN}")["announcement"] == CLAIMED
    aws["sns"].publish = publish
    assert aws["announcer"].announce(record(), FOUND, NOW) is True


def test_a_claim_refused_for_another_reason_than_its_condition_is_raised(aws: dict[str, Any]) -> None:
    aws["updates"].failing = ClientError({"Error": {"Code": "ProvisionedThroughputExceededException"}}, "UpdateItem")
    with pytest.raises(ClientError, match="ProvisionedThroughputExceededException"):
        aws["announcer"].announce(record(), FOUND, NOW)
    assert aws["published"] == []
