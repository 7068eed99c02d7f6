"""The alert path's own channel: a second topic under its own key, on which the alarms about the alerting notify."""

from __future__ import annotations

from typing import Any

import pytest

from fire_and_forget.construct.alert_path import ALERT_PATH_ALARMS
from tests.support.alarm_template import alarm
from tests.support.cdk import cdk_context, load_template, synthesize
from tests.support.template import of_type, one

ALERTS_TOPIC = "PipelineFailureHandlingAlertsTopic"
SECOND_TOPIC = "PipelineAlertPathAlertPathTopic"


@pytest.fixture(scope="module")
def with_emails(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Synthesized with ff:alarmEmail only: the alert path's e-mail defaults to it."""
    context = cdk_context() | {"ff:alarmEmail": "ops@example.com"}
    return load_template(synthesize(tmp_path_factory.mktemp("alert-path"), context=context))


@pytest.fixture(scope="module")
def own_email(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    context = cdk_context() | {"ff:alarmEmail": "ops@example.com", "ff:alertPathEmail": "oncall@example.com"}
    return load_template(synthesize(tmp_path_factory.mktemp("alert-path-own"), context=context))


def topic_id(template: dict[str, Any], prefix: str) -> str:
    return one(template, "AWS::SNS::Topic", prefix)[0]


def actions(template: dict[str, Any], alarm_id: str) -> list[Any]:
    _, props = alarm(template, alarm_id)
    return list(props.get("AlarmActions", []))


def test_the_second_topic_has_its_own_customer_managed_key(template: dict[str, Any]) -> None:
    (_, second), (_, first) = (
        one(template, "AWS::SNS::Topic", SECOND_TOPIC),
        one(template, "AWS::SNS::Topic", ALERTS_TOPIC),
    )
    key_id = second["Properties"]["KmsMasterKeyId"]["Fn::GetAtt"][0]
    assert key_id != first["Properties"]["KmsMasterKeyId"]["Fn::GetAtt"][0]
    key = template["Resources"][key_id]
    assert key["Type"] == "AWS::KMS::Key" and key["Properties"]["EnableKeyRotation"] is True
    (grant,) = [s for s in key["Properties"]["KeyPolicy"]["Statement"] if s.get("Sid") == "AllowCloudWatchAlarms"]
    assert grant["Principal"] == {"Service": "cloudwatch.amazonaws.com"}
    assert set(grant["Action"]) == {"kms:Decrypt", "kms:GenerateDataKey*"}
    assert grant["Condition"]["StringEquals"] == {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}


def test_only_this_accounts_alarms_may_publish_to_the_second_topic(template: dict[str, Any]) -> None:
    second = topic_id(template, SECOND_TOPIC)
    (policy,) = [
        p for p in of_type(template, "AWS::SNS::TopicPolicy").values() if {"Ref": second} in p["Properties"]["Topics"]
    ]
    statements = policy["Properties"]["PolicyDocument"]["Statement"]
    (allow,) = [s for s in statements if s["Effect"] == "Allow"]
    assert allow["Principal"] == {"Service": "cloudwatch.amazonaws.com"} and allow["Action"] == "sns:Publish"
    assert allow["Resource"] == {"Ref": second}
    assert allow["Condition"]["StringEquals"] == {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}
    source_arn = allow["Condition"]["ArnLike"]["aws:SourceArn"]["Fn::Join"][1]
    assert ":cloudwatch:" in source_arn and source_arn[-1] == ":alarm:*"
    assert any(
        s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}} for s in statements
    )


def test_the_alarms_about_the_alerting_notify_both_topics(template: dict[str, Any]) -> None:
    first, second = topic_id(template, ALERTS_TOPIC), topic_id(template, SECOND_TOPIC)
    present = [
        a
        for a in ALERT_PATH_ALARMS
        if any(lid.startswith(f"PipelineMonitoring{a}") for lid in of_type(template, "AWS::CloudWatch::Alarm"))
    ]
    assert {"RuleFailedInvocations", "RuleTargetDlqNotEmpty", "AlertsTopicNotificationsFailed"} <= set(present)
    for alarm_id in present:
        assert sorted(actions(template, alarm_id), key=str) == sorted([{"Ref": first}, {"Ref": second}], key=str)


def test_the_second_topics_own_failures_are_told_on_the_alerts_topic(template: dict[str, Any]) -> None:
    _, props = alarm(template, "AlertPathNotificationsFailed")
    assert actions(template, "AlertPathNotificationsFailed") == [{"Ref": topic_id(template, ALERTS_TOPIC)}]
    assert (props["Namespace"], props["MetricName"]) == ("AWS/SNS", "NumberOfNotificationsFailed")
    assert props["Dimensions"] == [
        {"Name": "TopicName", "Value": {"Fn::GetAtt": [topic_id(template, SECOND_TOPIC), "TopicName"]}}
    ]


def test_other_alarms_notify_the_alerts_topic_only(template: dict[str, Any]) -> None:
    _, props = alarm(template, "ExecutionsFailed")
    assert props["AlarmActions"] == [{"Ref": topic_id(template, ALERTS_TOPIC)}]


def test_the_alert_path_email_defaults_to_the_alarm_email(with_emails: dict[str, Any]) -> None:
    second = topic_id(with_emails, SECOND_TOPIC)
    subscriptions = [
        s["Properties"]
        for s in of_type(with_emails, "AWS::SNS::Subscription").values()
        if s["Properties"]["TopicArn"] == {"Ref": second}
    ]
    assert subscriptions == [{"Protocol": "email", "TopicArn": {"Ref": second}, "Endpoint": "ops@example.com"}]


def test_the_alert_path_email_can_be_its_own(own_email: dict[str, Any]) -> None:
    second = topic_id(own_email, SECOND_TOPIC)
    endpoints = [
        s["Properties"]["Endpoint"]
        for s in of_type(own_email, "AWS::SNS::Subscription").values()
        if s["Properties"]["TopicArn"] == {"Ref": second}
    ]
    assert endpoints == ["oncall@example.com"]


def test_the_stack_outputs_the_second_topic(template: dict[str, Any]) -> None:
    assert template["Outputs"]["AlertPathTopicArn"]["Value"] == {"Ref": topic_id(template, SECOND_TOPIC)}
