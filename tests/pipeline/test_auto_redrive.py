"""The automatic redrive on moto's SQS: only due transient records go back, with their attempt count, through the
same send-then-delete as `ff-ops failures redrive`; everything else stays where it is."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws

from fire_and_forget.healing.auto_redrive import AutoRedriveReport, redrive_due
from fire_and_forget.runtime.healing_policy import (
    ATTEMPT_ATTRIBUTE,
    FIRST_MESSAGE_ATTRIBUTE,
    Disposition,
    HealingPolicy,
)
from fire_and_forget.runtime.redrive import Action

FAILED_AT = datetime(2026, 12, 1, 12, tzinfo=UTC)
POLICY = HealingPolicy(transient_errors={"ChargePayment": frozenset({"TransientError"})}, max_attempts=2,
                       cool_off_seconds=300, max_cool_off_seconds=3600, max_message_bytes=64 * 1024)


@pytest.fixture
def queues() -> Iterator[tuple[Any, str, str]]:
    with mock_aws():
        sqs = boto3.client("sqs", region_name="us-east-1")
        yield sqs, sqs.create_queue(QueueName="dlq")["QueueUrl"], sqs.create_queue(QueueName="source")["QueueUrl"]


def _record(sqs: Any, dlq: str, order: str, *, error: str = "TransientError", manual: bool = False,
            attempt: int | None = None, extra_attributes: int = 0, status: str | None = None,
            body: str | None = None) -> None:
    attributes: dict[str, Any] = {f"a{i}": {"stringValue": "v", "dataType": "String"} for i in range(extra_attributes)}
    if attempt is not None:
        attributes[ATTEMPT_ATTRIBUTE] = {"stringValue": str(attempt), "dataType": "Number"}
        attributes[FIRST_MESSAGE_ATTRIBUTE] = {"stringValue": f"first-{order}", "dataType": "String"}
    body: dict[str, Any] = {
        "kind": "fire-and-forget.failure.v1", "pipeline": "orders",
        "record": {"messageId": f"msg-{order}", "body": json.dumps({"orderId": order}) if body is None else body,
                   "messageAttributes": attributes},
        "failure": {"state": "ChargePayment", "error": error, "cause": "c"}, "compensation": {"required": True},
        "manualRepair": manual, "executionArn": f"arn:exec:{order}", "stateMachineArn": "arn:sm",
        "failedAt": FAILED_AT.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
    }
    if status is not None:
        body["reconciliation"] = {"status": status, "via": "event"}
    sqs.send_message(QueueUrl=dlq, MessageBody=json.dumps(body))


def _bodies(sqs: Any, url: str) -> list[dict[str, Any]]:
    messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, MessageAttributeNames=["All"],
                                   VisibilityTimeout=0).get("Messages", [])
    return messages


def test_nothing_goes_back_before_its_cool_off(queues: tuple[Any, str, str]) -> None:
    sqs, dlq, source = queues
    _record(sqs, dlq, "o1")
    report = redrive_due(sqs, dlq_url=dlq, source_url=source, policy=POLICY, now=FAILED_AT + timedelta(seconds=149),
                         key_field="orderId")
    assert (report.redriven, report.waiting, report.due) == (0, 1, 0)
    assert _bodies(sqs, source) == [] and len(_bodies(sqs, dlq)) == 1


def test_a_due_transient_record_goes_back_with_its_attempt_and_first_id(queues: tuple[Any, str, str]) -> None:
    sqs, dlq, source = queues
    _record(sqs, dlq, "o1")
    due = POLICY.due_at(FAILED_AT, "msg-o1", 0)
    report = redrive_due(sqs, dlq_url=dlq, source_url=source, policy=POLICY, now=due, key_field="orderId")
    assert report.redriven == 1 and report.waiting == 0
    (sent,) = _bodies(sqs, source)
    assert json.loads(sent["Body"]) == {"orderId": "o1"}
    assert sent["MessageAttributes"][ATTEMPT_ATTRIBUTE] == {"StringValue": "1", "DataType": "Number"}
    assert sent["MessageAttributes"][FIRST_MESSAGE_ATTRIBUTE]["StringValue"] == "msg-o1"
    assert _bodies(sqs, dlq) == []


def test_the_second_attempt_keeps_the_first_id_and_counts_on(queues: tuple[Any, str, str]) -> None:
    sqs, dlq, source = queues
    _record(sqs, dlq, "o1", attempt=1)
    redrive_due(sqs, dlq_url=dlq, source_url=source, policy=POLICY, now=FAILED_AT + timedelta(hours=2),
                key_field="orderId")
    (sent,) = _bodies(sqs, source)
    assert sent["MessageAttributes"][ATTEMPT_ATTRIBUTE]["StringValue"] == "2"
    assert sent["MessageAttributes"][FIRST_MESSAGE_ATTRIBUTE]["StringValue"] == "first-o1"


@pytest.mark.parametrize(("kwargs", "disposition"), [
    ({"error": "PaymentDeclined"}, Disposition.NEEDS_DECISION),
    ({"manual": True}, Disposition.MANUAL_REPAIR),
    ({"attempt": 2}, Disposition.EXHAUSTED),
    ({"status": "ABORTED"}, Disposition.NEEDS_DECISION),
])
def test_what_needs_a_person_is_never_sent_back(queues: tuple[Any, str, str], kwargs: dict[str, Any],
                                                disposition: Disposition) -> None:
    sqs, dlq, source = queues
    _record(sqs, dlq, "o1", **kwargs)
    report = redrive_due(sqs, dlq_url=dlq, source_url=source, policy=POLICY, now=FAILED_AT + timedelta(days=3),
                         key_field="orderId")
    assert report.dispositions == {disposition: 1} and report.needing_a_person == 1 and report.redriven == 0
    assert _bodies(sqs, source) == [] and len(_bodies(sqs, dlq)) == 1


# What the redrive's two attributes add to a first redrive of msg-o1: each name, data type and value, as SQS counts.
REDRIVE_BYTES = len("ffRedriveAttempt" "Number" "1") + len("ffFirstMessageId" "String" "msg-o1")


@pytest.mark.parametrize(("extra", "body_bytes", "reason"), [
    (9, 10, "SQS allows 10"),  # with ffRedriveAttempt and ffFirstMessageId: 11 attributes
    (0, POLICY.max_message_bytes - REDRIVE_BYTES + 1, "over the source queue's maximum"),
], ids=["nine attributes", "one byte over the size limit"])
def test_a_record_the_redrive_cannot_resend_needs_a_person_and_is_never_tried(
        queues: tuple[Any, str, str], extra: int, body_bytes: int, reason: str) -> None:
    sqs, dlq, source = queues
    _record(sqs, dlq, "o1", extra_attributes=extra, body="x" * body_bytes)
    report = redrive_due(sqs, dlq_url=dlq, source_url=source, policy=POLICY, now=FAILED_AT + timedelta(hours=1),
                         key_field="orderId")
    assert report.dispositions == {Disposition.UNSENDABLE: 1} and report.needing_a_person == 1
    assert (report.redriven, report.waiting, report.due) == (0, 0, 0)
    assert report.redrive is not None and report.redrive.outcomes == []  # not tried, so nothing refused either
    ((record, found),) = report.unsendable
    assert record.key is None and reason in (found.reason or "")
    assert _bodies(sqs, source) == [] and len(_bodies(sqs, dlq)) == 1


@pytest.mark.parametrize(("extra", "body_bytes"), [(8, 10), (0, POLICY.max_message_bytes - REDRIVE_BYTES)],
                         ids=["eight attributes", "exactly the size limit"])
def test_a_message_just_within_the_limits_is_still_sent_back(queues: tuple[Any, str, str], extra: int,
                                                            body_bytes: int) -> None:
    sqs, dlq, source = queues
    _record(sqs, dlq, "o1", extra_attributes=extra, body="x" * body_bytes)
    report = redrive_due(sqs, dlq_url=dlq, source_url=source, policy=POLICY, now=FAILED_AT + timedelta(hours=1),
                         key_field="orderId")
    assert report.redriven == 1 and not report.unsendable
    (sent,) = _bodies(sqs, source)
    assert len(sent["MessageAttributes"]) == extra + 2 and len(sent["Body"]) == body_bytes


def test_two_records_of_one_execution_go_back_once_and_both_leave_the_dlq(queues: tuple[Any, str, str]) -> None:
    sqs, dlq, source = queues
    _record(sqs, dlq, "o1")
    _record(sqs, dlq, "o1")  # the same execution's record again (a retried send whose first took effect)
    report = redrive_due(sqs, dlq_url=dlq, source_url=source, policy=POLICY, now=FAILED_AT + timedelta(hours=1),
                         key_field="orderId")
    assert report.dispositions == {Disposition.RETRY: 1} and report.redriven == 1
    assert report.redrive is not None
    assert [o.action for o in report.redrive.outcomes] == [Action.REDRIVEN, Action.COPY_DELETED]
    assert len(_bodies(sqs, source)) == 1 and _bodies(sqs, dlq) == []


def test_the_reconcilers_record_of_an_aborted_execution_outweighs_the_tails_transient_one(
        queues: tuple[Any, str, str]) -> None:
    sqs, dlq, source = queues
    _record(sqs, dlq, "o1")  # HandleFailure's, in flight when the execution was aborted: transient on its own
    _record(sqs, dlq, "o1", status="ABORTED")  # the Reconciler's: a person stopped it
    report = redrive_due(sqs, dlq_url=dlq, source_url=source, policy=POLICY, now=FAILED_AT + timedelta(hours=1),
                         key_field="orderId")
    assert report.dispositions == {Disposition.NEEDS_DECISION: 1} and report.redriven == 0
    assert _bodies(sqs, source) == [] and len(_bodies(sqs, dlq)) == 2


def test_a_record_still_waiting_a_period_after_its_due_time_is_overdue(queues: tuple[Any, str, str]) -> None:
    sqs, dlq, _source = queues
    _record(sqs, dlq, "o1")
    period = timedelta(minutes=5)
    due = POLICY.due_at(FAILED_AT, "msg-o1", 0)
    missing = "https://sqs.us-east-1.amazonaws.com/123456789012/gone"  # the source queue refusing every send

    def run(now: datetime) -> AutoRedriveReport:
        return redrive_due(sqs, dlq_url=dlq, source_url=missing, policy=POLICY, now=now, key_field="orderId",
                           period=period)

    assert run(due + period - timedelta(seconds=1)).overdue == 0  # due, not sent, but within one period
    late = run(due + period)
    assert (late.overdue, late.waiting) == (1, 1)
    assert late.redrive is not None and [o.action for o in late.redrive.outcomes] == [Action.SEND_FAILED]


def test_an_overdue_record_the_run_sends_back_is_not_counted(queues: tuple[Any, str, str]) -> None:
    sqs, dlq, source = queues
    _record(sqs, dlq, "o1")
    report = redrive_due(sqs, dlq_url=dlq, source_url=source, policy=POLICY, now=FAILED_AT + timedelta(days=1),
                         key_field="orderId", period=timedelta(minutes=5))
    assert (report.redriven, report.overdue) == (1, 0)
