"""Source queue, its DLQ, the failure DLQ, the alerts topic and the key that encrypts them all."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.template import of_type, one, ref_or_att

FOURTEEN_DAYS = 14 * 24 * 3600


@pytest.fixture(scope="module")
def key_id(template: dict[str, Any]) -> str:
    return one(template, "AWS::KMS::Key", "MessagingKey")[0]


def test_key_rotates_and_lets_cloudwatch_and_eventbridge_deliver(template: dict[str, Any], key_id: str) -> None:
    key = template["Resources"][key_id]["Properties"]
    assert key["EnableKeyRotation"] is True
    by_service: dict[str, set[str]] = {}
    for statement in key["KeyPolicy"]["Statement"]:
        services = statement.get("Principal", {}).get("Service", [])
        for service in [services] if isinstance(services, str) else services:
            action = statement["Action"]
            by_service.setdefault(service, set()).update([action] if isinstance(action, str) else action)
    # Without these, alarm actions and rule targets are silently dropped by the encrypted topic.
    for service in ("cloudwatch.amazonaws.com", "events.amazonaws.com"):
        assert {"kms:Decrypt", "kms:GenerateDataKey*"} <= by_service[service], service


@pytest.mark.parametrize(
    "prefix",
    [
        "PipelineSourceQueue4",
        "PipelineSourceQueueSourceDlq",
        "PipelineFailureHandlingFailureDlq",
        "PipelineExecutionEventsFailureEventsQueue",
        "PipelineExecutionEventsTargetDlq",
    ],
)
def test_every_queue_is_kms_encrypted_and_tls_only(template: dict[str, Any], key_id: str, prefix: str) -> None:
    queue_id, queue = one(template, "AWS::SQS::Queue", prefix)
    assert ref_or_att(queue["Properties"]["KmsMasterKeyId"]) == key_id
    policies = [
        p for p in of_type(template, "AWS::SQS::QueuePolicy").values() if {"Ref": queue_id} in p["Properties"]["Queues"]
    ]
    denies = [s for p in policies for s in p["Properties"]["PolicyDocument"]["Statement"] if s["Effect"] == "Deny"]
    assert any(s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}} for s in denies)


@pytest.mark.parametrize(
    "prefix", ["PipelineSourceQueueSourceDlq", "PipelineFailureHandlingFailureDlq",
               "PipelineExecutionEventsReconcilerDlq", "PipelineExecutionEventsTargetDlq", "PipelineHealingScheduleDlq"]
)
def test_dead_letter_queues_keep_messages_fourteen_days(template: dict[str, Any], prefix: str) -> None:
    _, queue = one(template, "AWS::SQS::Queue", prefix)
    assert queue["Properties"]["MessageRetentionPeriod"] == FOURTEEN_DAYS


def test_source_queue_redrives_to_its_dlq_after_five_receives(template: dict[str, Any]) -> None:
    _, queue = one(template, "AWS::SQS::Queue", "PipelineSourceQueue4")
    dlq_id, _ = one(template, "AWS::SQS::Queue", "PipelineSourceQueueSourceDlq")
    redrive = queue["Properties"]["RedrivePolicy"]
    assert ref_or_att(redrive["deadLetterTargetArn"]) == dlq_id
    assert redrive["maxReceiveCount"] >= 5


def test_source_queue_sizes_follow_the_pipes_guidance(template: dict[str, Any]) -> None:
    props = one(template, "AWS::SQS::Queue", "PipelineSourceQueue4")[1]["Properties"]
    # docs/design.md "Source queue: sizes, visibility timeout, duplicates": 64 KiB bodies fit the 256 KiB
    # StartExecution input after the pipe's envelope and JSON escaping; 5 minutes outlasts the pipe's own retries of a
    # throttled StartExecution.
    assert props["MaximumMessageSize"] == 65536
    assert props["VisibilityTimeout"] == 300
    # A DLQ must outlive its source queue: SQS keeps the original enqueue time when it moves a message.
    assert props["MessageRetentionPeriod"] < FOURTEEN_DAYS


def test_alerts_topic_is_encrypted_with_the_key_and_tls_only(template: dict[str, Any], key_id: str) -> None:
    topic_id, topic = one(template, "AWS::SNS::Topic", "PipelineFailureHandlingAlertsTopic")
    assert ref_or_att(topic["Properties"]["KmsMasterKeyId"]) == key_id
    _, policy = one(template, "AWS::SNS::TopicPolicy", "PipelineFailureHandlingAlertsTopicPolicy")
    assert {"Ref": topic_id} in policy["Properties"]["Topics"]
    denies = [s for s in policy["Properties"]["PolicyDocument"]["Statement"] if s["Effect"] == "Deny"]
    assert any(s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}} for s in denies)


def _topic_statements(template: dict[str, Any], service: str) -> list[dict[str, Any]]:
    _, policy = one(template, "AWS::SNS::TopicPolicy", "PipelineFailureHandlingAlertsTopicPolicy")
    return [s for s in policy["Properties"]["PolicyDocument"]["Statement"]
            if s["Effect"] == "Allow" and s.get("Principal", {}).get("Service") == service]


def test_alerts_topic_lets_only_this_accounts_alarms_publish(template: dict[str, Any]) -> None:
    # The topic policy replaces SNS's default one: without this statement every alarm action is refused.
    (statement,) = _topic_statements(template, "cloudwatch.amazonaws.com")
    assert statement["Action"] == "sns:Publish"
    assert statement["Condition"]["StringEquals"] == {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}
    source = statement["Condition"]["ArnLike"]["aws:SourceArn"]["Fn::Join"][1]
    assert source == ["arn:", {"Ref": "AWS::Partition"}, ":cloudwatch:", {"Ref": "AWS::Region"}, ":",
                      {"Ref": "AWS::AccountId"}, ":alarm:*"]


def test_alerts_topic_lets_no_eventbridge_rule_publish(template: dict[str, Any]) -> None:
    # The failure rule announces through its state machine; a grant to events.amazonaws.com would be unused
    # surface that any rule of the account could publish through.
    assert _topic_statements(template, "events.amazonaws.com") == []


def test_key_lets_delivering_services_use_it_only_for_this_account(template: dict[str, Any], key_id: str) -> None:
    # CloudWatch's request carries aws:SourceAccount; EventBridge's may not, so its statement is bound by the
    # encryption context of this account's queues and narrowed by aws:SourceAccount only where present (docs/design.md,
    # "Encryption and the key policy"; tests/permissions/test_key_conditions.py evaluates both readings).
    policy = template["Resources"][key_id]["Properties"]["KeyPolicy"]["Statement"]
    this_account = {"Ref": "AWS::AccountId"}
    by_service = {statement["Principal"]["Service"]: statement["Condition"] for statement in policy
                  if "Service" in statement.get("Principal", {})}
    assert set(by_service) == {"cloudwatch.amazonaws.com", "events.amazonaws.com"}
    assert by_service["cloudwatch.amazonaws.com"] == {"StringEquals": {"aws:SourceAccount": this_account}}
    events = by_service["events.amazonaws.com"]
    assert events["StringEqualsIfExists"]["aws:SourceAccount"] == this_account
    queues_of_this_account = events["StringLike"]["kms:EncryptionContext:aws:sqs:arn"]["Fn::Join"][1]
    assert queues_of_this_account == ["arn:", {"Ref": "AWS::Partition"}, ":sqs:", {"Ref": "AWS::Region"}, ":",
                                      this_account, ":*"]


def test_no_email_subscription_unless_configured(template: dict[str, Any]) -> None:
    assert of_type(template, "AWS::SNS::Subscription") == {}
