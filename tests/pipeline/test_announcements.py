"""The Redriver's announcement of a record it cannot resend, on moto's DynamoDB and SNS: once per execution across
repeated runs, a publish SNS refused, and a run that died between its claim and its publish."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from fire_and_forget.healing.announcements import LEASE_SECONDS, Announcer, AnnouncerSettings
from fire_and_forget.runtime.healing_policy import Classification, Disposition
from fire_and_forget.runtime.records import FailureRecord, parse

NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)
ARN = "arn:aws:states:us-east-1:123456789012:execution:saga:e1"
FOUND = Classification(Disposition.UNSENDABLE, 0, None, "the message has 9 message attributes; ...")


def _record(message_id: str = "dlq-1") -> FailureRecord:
    body = {"kind": "fire-and-forget.failure.v1",
            "record": {"messageId": "msg-1", "body": json.dumps({"orderId": "o1"}), "messageAttributes": {}},
            "failure": {"state": "ChargePayment", "error": "TransientError", "cause": "throttled"},
            "manualRepair": False, "executionArn": ARN, "failedAt": "2026-12-01T11:00:00.000Z"}
    parsed = parse({"MessageId": message_id, "ReceiptHandle": "r", "Body": json.dumps(body)})
    assert isinstance(parsed, FailureRecord)
    return parsed


@pytest.fixture
def aws() -> Iterator[dict[str, Any]]:
    with mock_aws():
        sqs = boto3.client("sqs", region_name="us-east-1")
        sns = boto3.client("sns", region_name="us-east-1")
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        topic = sns.create_topic(Name="alerts")["TopicArn"]
        copy = sqs.create_queue(QueueName="alerts-copy")["QueueUrl"]
        copy_arn = sqs.get_queue_attributes(QueueUrl=copy, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=copy_arn)
        dynamodb.create_table(TableName="deliveries", BillingMode="PAY_PER_REQUEST",
                              AttributeDefinitions=[{"AttributeName": "messageId", "AttributeType": "S"}],
                              KeySchema=[{"AttributeName": "messageId", "KeyType": "HASH"}])
        settings = AnnouncerSettings(pipeline="orders", environment="dev", title="Order saga", region="us-east-1",
                                     alerts_topic_arn=topic, deliveries_table="deliveries", marker_ttl_seconds=3600)
        yield {"announcer": Announcer(dynamodb=dynamodb, sns=sns, settings=settings), "sns": sns, "sqs": sqs,
               "copy": copy}


def _alerts(aws: dict[str, Any]) -> list[dict[str, Any]]:
    found = []
    while batch := aws["sqs"].receive_message(QueueUrl=aws["copy"], MaxNumberOfMessages=10).get("Messages", []):
        for message in batch:
            found.append(json.loads(message["Body"]))
            aws["sqs"].delete_message(QueueUrl=aws["copy"], ReceiptHandle=message["ReceiptHandle"])
    return found


def test_it_is_announced_once_whatever_the_number_of_runs_and_records(aws: dict[str, Any]) -> None:
    announcer = aws["announcer"]
    published = [announcer.announce(_record(), FOUND, NOW + timedelta(minutes=5 * run)) for run in range(4)]
    published.append(announcer.announce(_record("dlq-2"), FOUND, NOW + timedelta(hours=1)))  # the same execution's
    assert published == [True, False, False, False, False]
    (alert,) = _alerts(aws)
    assert alert["Subject"] == "[dev] Order saga failed in ChargePayment"
    context = json.loads(alert["Message"])["metadata"]["additionalContext"]
    assert (context["executionArn"], context["disposition"]) == (ARN, "cannot-redrive")


def test_the_e_mail_says_why_it_cannot_be_redriven_and_how_to_resend_it(aws: dict[str, Any]) -> None:
    announcer = aws["announcer"]
    sent: list[dict[str, Any]] = []
    publish = announcer._sns.publish
    announcer._sns.publish = lambda **kwargs: sent.append(kwargs) or publish(**kwargs)
    announcer.announce(_record(), FOUND, NOW)
    (call,) = sent
    assert call["MessageStructure"] == "json"
    email = json.loads(call["Message"])["email"]
    assert "Waiting for: cannot-redrive" in email and FOUND.reason in email  # type: ignore[operator]
    assert "ff-ops failures redrive" in email and ARN in email


def test_a_publish_sns_refused_is_announced_by_the_next_run(aws: dict[str, Any]) -> None:
    announcer = aws["announcer"]
    publish = announcer._sns.publish

    def refuse(**_kwargs: Any) -> None:
        raise ClientError({"Error": {"Code": "InternalError"}}, "Publish")

    announcer._sns.publish = refuse
    with pytest.raises(ClientError):
        announcer.announce(_record(), FOUND, NOW)
    announcer._sns.publish = publish
    # The failed run let go of its lease: the next run (five minutes on, or Lambda's retry) announces.
    assert announcer.announce(_record(), FOUND, NOW + timedelta(seconds=1)) is True
    assert len(_alerts(aws)) == 1


def test_a_run_that_died_between_its_claim_and_its_publish_is_resumed_after_its_lease(aws: dict[str, Any]) -> None:
    announcer = aws["announcer"]
    publish = announcer._sns.publish

    def die(**_kwargs: Any) -> None:
        raise SystemExit("the function's process ended")  # nothing of the run's own error handling runs

    announcer._sns.publish = die
    with pytest.raises(SystemExit):
        announcer.announce(_record(), FOUND, NOW)
    announcer._sns.publish = publish
    assert announcer.announce(_record(), FOUND, NOW + timedelta(seconds=LEASE_SECONDS - 1)) is False  # leased
    assert announcer.announce(_record(), FOUND, NOW + timedelta(seconds=LEASE_SECONDS + 1)) is True
    assert announcer.announce(_record(), FOUND, NOW + timedelta(hours=1)) is False
    assert len(_alerts(aws)) == 1
