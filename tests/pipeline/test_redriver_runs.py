"""One Redriver run over a failure DLQ holding a record of every disposition and a foreign message, on moto's SQS,
DynamoDB and SNS: what it counts of each, what it sends back (and with which attributes), what it finds overdue,
what it announces, and what its function returns and reports as metrics."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from fire_and_forget.healing import redriver
from fire_and_forget.healing.auto_redrive import AutoRedriveReport, redrive_due
from fire_and_forget.healing.telemetry import metrics
from fire_and_forget.runtime.healing_policy import (
    ATTEMPT_ATTRIBUTE,
    FIRST_MESSAGE_ATTRIBUTE,
    Disposition,
    HealingPolicy,
)
from fire_and_forget.runtime.redrive import Action

FAILED_AT = datetime(2026, 12, 1, 10, tzinfo=UTC)
NOW = FAILED_AT + timedelta(hours=2)
PERIOD = timedelta(minutes=5)
POLICY = HealingPolicy(transient_errors={"ChargePayment": frozenset({"TransientError"})}, max_attempts=3,
                       cool_off_seconds=300, max_cool_off_seconds=3600)


def failure(order: str, *, error: str = "TransientError", manual: bool = False, attempt: int | None = None,
            failed_at: datetime = FAILED_AT, attributes: dict[str, Any] | None = None,
            status: str | None = None) -> str:
    carried = dict(attributes or {})
    if attempt is not None:
        carried[ATTEMPT_ATTRIBUTE] = {"stringValue": str(attempt), "dataType": "Number"}
        carried[FIRST_MESSAGE_ATTRIBUTE] = {"stringValue": f"first-{order}", "dataType": "String"}
    body: dict[str, Any] = {
        "kind": "fire-and-forget.failure.v1",
        "record": {"messageId": f"msg-{order}", "body": json.dumps({"orderId": order}), "messageAttributes": carried},
        "failure": {"state": "ChargePayment", "error": error, "cause": f"cause of {order}"},
        "manualRepair": manual, "executionArn": f"arn:aws:states:us-east-1:123456789012:execution:saga:{order}",
        "failedAt": failed_at.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
    }
    if status is not None:
        body["reconciliation"] = {"status": status}
    return json.dumps(body)


RECORDS = {
    "due": failure("due", attempt=1),  # a second attempt, due long ago
    "later": failure("later", failed_at=NOW - timedelta(seconds=10)),  # its cool-off has not passed
    "broken": failure("broken", attributes={"empty": {"dataType": "String"}}),  # due, but its send cannot be made
    "manual": failure("manual", manual=True),
    "declined": failure("declined", error="PaymentDeclined"),
    "exhausted": failure("exhausted", attempt=3),
    "aborted": failure("aborted", status="ABORTED"),
    "crowded": failure("crowded", attributes={f"a{i}": {"stringValue": "v", "dataType": "String"}
                                              for i in range(9)}),
}


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    with mock_aws():
        sqs = boto3.client("sqs", region_name="us-east-1")
        sns = boto3.client("sns", region_name="us-east-1")
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        dlq = sqs.create_queue(QueueName="failure-dlq")["QueueUrl"]
        source = sqs.create_queue(QueueName="source")["QueueUrl"]
        topic = sns.create_topic(Name="alerts")["TopicArn"]
        alerts = sqs.create_queue(QueueName="alerts-copy")["QueueUrl"]
        alerts_arn = sqs.get_queue_attributes(QueueUrl=alerts, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=alerts_arn, Attributes={"RawMessageDelivery": "true"})
        dynamodb.create_table(TableName="deliveries", BillingMode="PAY_PER_REQUEST",
                              AttributeDefinitions=[{"AttributeName": "messageId", "AttributeType": "S"}],
                              KeySchema=[{"AttributeName": "messageId", "KeyType": "HASH"}])
        ids = {}
        for name, body in RECORDS.items():
            ids[name] = sqs.send_message(QueueUrl=dlq, MessageBody=body)["MessageId"]
        ids["foreign"] = sqs.send_message(QueueUrl=dlq, MessageBody="hello, not a failure record")["MessageId"]
        environment = {
            "FAILURE_DLQ_URL": dlq, "SOURCE_QUEUE_URL": source, "MESSAGE_KEY_FIELD": "orderId",
            "REDRIVE_PERIOD_SECONDS": str(int(PERIOD.total_seconds())), "PIPELINE_NAME": "orders",
            "ENVIRONMENT_NAME": "dev", "WORKFLOW_TITLE": "Order saga", "ALERTS_TOPIC_ARN": topic,
            "DELIVERIES_TABLE_NAME": "deliveries", "DELIVERY_CLAIM_TTL_SECONDS": "3600", **POLICY.to_environment()}
        for name, value in environment.items():
            monkeypatch.setenv(name, value)
        metrics.clear_metrics()
        yield {"sqs": sqs, "dlq": dlq, "source": source, "ids": ids, "alerts": alerts}
        metrics.clear_metrics()


def messages(sqs: Any, url: str) -> list[dict[str, Any]]:
    return sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, MessageAttributeNames=["All"],
                               VisibilityTimeout=0).get("Messages", [])


def test_one_run_counts_every_disposition_and_sends_back_only_what_is_due(aws: dict[str, Any]) -> None:
    report = redrive_due(aws["sqs"], dlq_url=aws["dlq"], source_url=aws["source"], policy=POLICY, now=NOW,
                         key_field="orderId", period=PERIOD)
    ids = aws["ids"]
    assert dict(report.dispositions) == {Disposition.RETRY: 3, Disposition.MANUAL_REPAIR: 1,
                                         Disposition.NEEDS_DECISION: 2, Disposition.EXHAUSTED: 1,
                                         Disposition.UNSENDABLE: 1}
    assert (report.due, report.redriven, report.waiting, report.needing_a_person) == (2, 1, 2, 5)
    assert sorted(report.late) == sorted([ids["due"], ids["broken"]])
    assert report.overdue == 1  # "broken": still in the failure DLQ past its due time and a period
    assert [(record.message_id, found.disposition) for record, found in report.unsendable] == [
        (ids["crowded"], Disposition.UNSENDABLE)]
    assert report.redrive is not None
    outcomes = {o.message_id: o.action for o in report.redrive.outcomes}
    assert outcomes == {ids["foreign"]: Action.UNRECOGNIZED, ids["due"]: Action.REDRIVEN,
                        ids["broken"]: Action.SEND_FAILED}
    (sent,) = messages(aws["sqs"], aws["source"])
    assert json.loads(sent["Body"]) == {"orderId": "due"}
    assert sent["MessageAttributes"] == {
        ATTEMPT_ATTRIBUTE: {"StringValue": "2", "DataType": "Number"},
        FIRST_MESSAGE_ATTRIBUTE: {"StringValue": "first-due", "DataType": "String"}}
    left = {m["MessageId"] for m in messages(aws["sqs"], aws["dlq"])}
    assert left == set(ids.values()) - {ids["due"]}


def test_the_key_of_each_outcome_is_read_from_the_stacks_key_field(aws: dict[str, Any]) -> None:
    report = redrive_due(aws["sqs"], dlq_url=aws["dlq"], source_url=aws["source"], policy=POLICY, now=NOW,
                         key_field="sku")
    assert report.redrive is not None and report.redrive.key_field == "sku"
    assert {o.key for o in report.redrive.outcomes} == {None}  # the bodies have no "sku"
    keyed = redrive_due(aws["sqs"], dlq_url=aws["dlq"], source_url=aws["source"], policy=POLICY,
                        now=NOW + timedelta(hours=1), key_field="orderId")
    assert keyed.redrive is not None and {o.key for o in keyed.redrive.outcomes} >= {"later", "broken"}


def test_with_no_period_a_record_is_overdue_from_its_due_time(aws: dict[str, Any]) -> None:
    report = redrive_due(aws["sqs"], dlq_url=aws["dlq"], source_url=aws["source"], policy=POLICY, now=NOW,
                         key_field="orderId")
    assert report.overdue == 1 and len(report.late) == 2


def test_before_anything_is_due_nothing_is_late_or_sent(aws: dict[str, Any]) -> None:
    report = redrive_due(aws["sqs"], dlq_url=aws["dlq"], source_url=aws["source"], policy=POLICY,
                         now=FAILED_AT + timedelta(seconds=1), key_field="orderId", period=PERIOD)
    assert (report.due, report.redriven, report.overdue, report.late) == (0, 0, 0, [])
    assert report.waiting == 3 and report.dispositions[Disposition.RETRY] == 3
    assert messages(aws["sqs"], aws["source"]) == []


def test_the_redriver_reads_without_waiting_and_sends_back_with_its_two_attributes() -> None:
    """Request by request (botocore's Stubber): a run reads the DLQ with short polling (every run ends as soon as the
    queue is read), holding what it read for the default 30 s."""
    client = boto3.client("sqs", region_name="us-east-1")
    dlq, source = "https://sqs.us-east-1.amazonaws.com/1/dlq", "https://sqs.us-east-1.amazonaws.com/1/source"
    read = {"QueueUrl": dlq, "MaxNumberOfMessages": 10, "VisibilityTimeout": 30, "WaitTimeSeconds": 0,
            "MessageSystemAttributeNames": ["All"], "MessageAttributeNames": ["All"]}
    with Stubber(client) as sqs:
        sqs.add_response("receive_message", {"Messages": [{"MessageId": "d-1", "ReceiptHandle": "rh-1",
                                                           "Body": RECORDS["due"]}]}, read)
        sqs.add_response("receive_message", {}, read)
        sqs.add_response("send_message", {"MessageId": "new-1"}, {
            "QueueUrl": source, "MessageBody": json.dumps({"orderId": "due"}), "MessageAttributes": {
                ATTEMPT_ATTRIBUTE: {"DataType": "Number", "StringValue": "2"},
                FIRST_MESSAGE_ATTRIBUTE: {"DataType": "String", "StringValue": "first-due"}}})
        sqs.add_response("delete_message", {}, {"QueueUrl": dlq, "ReceiptHandle": "rh-1"})
        report = redrive_due(client, dlq_url=dlq, source_url=source, policy=POLICY, now=NOW, key_field="orderId")
        sqs.assert_no_pending_responses()
    assert report.redriven == 1


def test_an_empty_report_counts_nothing() -> None:
    empty = AutoRedriveReport()
    assert (empty.redriven, empty.waiting, empty.needing_a_person, empty.overdue) == (0, 0, 0, 0)


@dataclass
class Context:
    function_name: str = "redriver"
    function_version: str = "$LATEST"
    memory_limit_in_mb: int = 256
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:redriver"
    aws_request_id: str = "request-1"


def test_the_redriver_function_reports_its_run_and_announces_what_it_cannot_resend(
        aws: dict[str, Any], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(metrics, "namespace", "Test")
    result = redriver.handler({"time": NOW.strftime("%Y-%m-%dT%H:%M:%SZ")}, Context())
    assert result == {"redriven": 1, "waiting": 2, "needingAPerson": 5, "overdue": 1, "announced": 1}
    (alert,) = messages(aws["sqs"], aws["alerts"])
    assert "cannot-redrive" in alert["Body"] and "crowded" in alert["Body"]
    emitted = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"_aws"' in line]
    (flushed,) = emitted
    assert {name: flushed[name] for name in ("FailuresAutoRedriven", "FailuresWaitingForRetry",
                                             "FailuresNeedingAPerson", "FailuresRetriesExhausted",
                                             "FailuresOverdue")} == {
        "FailuresAutoRedriven": [1.0], "FailuresWaitingForRetry": [2.0], "FailuresNeedingAPerson": [5.0],
        "FailuresRetriesExhausted": [1.0], "FailuresOverdue": [1.0]}
    # The next run announces nothing again
    again = redriver.handler({"time": (NOW + PERIOD).strftime("%Y-%m-%dT%H:%M:%SZ")}, Context())
    assert again["announced"] == 0 and again["needingAPerson"] == 5
