"""Notification channels and alarm numbers from config: a second app with every channel configured."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from fire_and_forget.construct import PipelineSettings
from tests.support.alarm_template import ALARM, alarm, dimensions, metric_stats
from tests.support.cdk import REPO, STACK_NAME, cdk_context, load_template, synthesize
from tests.support.cfn_lint import cfn_lint, registry_schema
from tests.support.template import of_type, one, ref_or_att

TEAMS = "AWS::Chatbot::MicrosoftTeamsChannelConfiguration"


TEAM, TENANT = "0123abcd-0123-4567-89ab-0123456789ab", "89abcdef-0123-4567-89ab-0123456789ab"
TEAMS_CHANNEL = "19%3a0123abcd4567%40thread.tacv2"


@pytest.fixture(scope="module")
def configured_assembly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A second app with every channel configured and other alarm numbers (synth runs cdk-nag on it too)."""
    context = cdk_context() | {
        "ff:alarmEmail": "ops@example.com",
        "ff:webhookUrl": "https://hooks.example.com/alerts",
        "ff:slackWorkspaceId": "T0123ABCD",
        "ff:slackChannelId": "C0456EFGH",
        "ff:teamsTeamId": TEAM,
        "ff:teamsTenantId": TENANT,
        "ff:teamsChannelId": TEAMS_CHANNEL,
        "ff:alarms": {"periodMinutes": 1, "failureRatePercent": 10, "failureRateWindowMinutes": 30,
                      "failureRateMinStarted": 50, "sourceQueueMaxAgeSeconds": 900, "executionsFailedThreshold": 3},
    }
    return synthesize(tmp_path_factory.mktemp("configured"), context=context)


@pytest.fixture(scope="module")
def configured(configured_assembly: Path) -> dict[str, Any]:
    return load_template(configured_assembly)


def test_cfn_lint_reports_nothing_on_the_app_with_every_channel(configured_assembly: Path) -> None:
    assert cfn_lint([configured_assembly / f"{STACK_NAME}.template.json"]) == ""


def test_no_chat_channel_unless_configured(template: dict[str, Any]) -> None:
    assert of_type(template, "AWS::Chatbot::SlackChannelConfiguration") == {}
    assert of_type(template, TEAMS) == {}


def test_slack_channel_relays_the_alerts_topic_read_only(configured: dict[str, Any]) -> None:
    (channel,) = of_type(configured, "AWS::Chatbot::SlackChannelConfiguration").values()
    props = channel["Properties"]
    assert (props["SlackWorkspaceId"], props["SlackChannelId"]) == ("T0123ABCD", "C0456EFGH")
    assert [ref_or_att(t) for t in props["SnsTopicArns"]] == [one(configured, "AWS::SNS::Topic",
                                                                  "PipelineFailureHandlingAlertsTopic")[0]]
    (guardrail,) = props["GuardrailPolicies"]
    assert guardrail["Fn::Join"][1][-1] == ":iam::aws:policy/CloudWatchReadOnlyAccess"
    role_id = ref_or_att(props["IamRoleArn"])
    role = configured["Resources"][role_id]["Properties"]
    assert "ManagedPolicyArns" not in role and "Policies" not in role
    assert not [p for p in of_type(configured, "AWS::IAM::Policy").values()
                if {"Ref": role_id} in p["Properties"]["Roles"]]


def test_teams_channel_relays_the_alerts_topic_read_only_with_the_slack_channels_role(
        configured: dict[str, Any]) -> None:
    (channel,) = of_type(configured, TEAMS).values()
    props = channel["Properties"]
    assert (props["TeamId"], props["TeamsTenantId"], props["TeamsChannelId"]) == (TEAM, TENANT, TEAMS_CHANNEL)
    assert [ref_or_att(t) for t in props["SnsTopicArns"]] == [one(configured, "AWS::SNS::Topic",
                                                                  "PipelineFailureHandlingAlertsTopic")[0]]
    (guardrail,) = props["GuardrailPolicies"]
    assert guardrail["Fn::Join"][1][-1] == ":iam::aws:policy/CloudWatchReadOnlyAccess"
    assert (props["UserRoleRequired"], props["LoggingLevel"]) == (False, "ERROR")
    (slack,) = of_type(configured, "AWS::Chatbot::SlackChannelConfiguration").values()
    assert ref_or_att(props["IamRoleArn"]) == ref_or_att(slack["Properties"]["IamRoleArn"])  # no permissions: above


def test_the_teams_channels_literal_properties_are_what_cloudformation_accepts(configured: dict[str, Any]) -> None:
    # The resource's registry schema, as cfn-lint ships it: the patterns CloudFormation validates the properties by
    schema = registry_schema(TEAMS)
    (channel,) = of_type(configured, TEAMS).values()
    props = channel["Properties"]
    assert set(schema["required"]) <= set(props)
    literal = {name: value for name, value in props.items() if isinstance(value, (str, bool))}
    assert set(literal) == {"ConfigurationName", "TeamId", "TeamsTenantId", "TeamsChannelId", "LoggingLevel",
                            "UserRoleRequired"}
    for name, value in literal.items():
        rules = schema["properties"][name]
        if rules["type"] == "boolean":
            assert isinstance(value, bool), name
            continue
        assert isinstance(value, str), name
        assert rules.get("minLength", 0) <= len(value) <= rules.get("maxLength", len(value)), name
        assert re.search(rules["pattern"], value), f"{name}: {value!r} against {rules['pattern']}"


@pytest.mark.parametrize("channel_id", [TEAMS_CHANNEL, "19:0123abcd4567@thread.tacv2", "19%3A0123%40thread.skype",
                                        "%3a%40", "19%3a0123"])
def test_the_settings_accept_a_teams_channel_id_exactly_when_cloudformation_does(channel_id: str) -> None:
    pattern = registry_schema(TEAMS)["properties"]["TeamsChannelId"]
    accepted_by_cloudformation = re.fullmatch(pattern["pattern"].strip("^$"), channel_id) is not None
    try:
        PipelineSettings(teams_team_id=TEAM, teams_tenant_id=TENANT, teams_channel_id=channel_id)
        accepted = True
    except ValidationError:
        accepted = False
    assert accepted == accepted_by_cloudformation


def test_thresholds_and_periods_come_from_config(configured: dict[str, Any]) -> None:
    _, rate = alarm(configured, "FailureRate")
    assert rate["Threshold"] == 10
    assert "FILL(started, 0) >= 50" in rate["Metrics"][0]["Expression"]
    assert {s["Period"] for s in metric_stats(rate).values()} == {1800}
    _, backlog = alarm(configured, "SourceQueueBacklog")
    assert backlog["Threshold"] == 900
    _, failed = alarm(configured, "ExecutionsFailed")
    assert failed["Threshold"] == 3
    assert {s["Period"] for s in metric_stats(failed).values()} == {60}


def test_email_and_webhook_keep_what_they_could_not_deliver(configured: dict[str, Any]) -> None:
    topic_id = one(configured, "AWS::SNS::Topic", "PipelineFailureHandlingAlertsTopic")[0]
    dlq_id = one(configured, "AWS::SQS::Queue", "PipelineFailureHandlingUndeliveredAlertsDlq")[0]
    subscriptions = [s for s in of_type(configured, "AWS::SNS::Subscription").values()
                     if ref_or_att(s["Properties"]["TopicArn"]) == topic_id]  # not the AlertPathTopic's
    found = {s["Properties"]["Protocol"]: s["Properties"] for s in subscriptions}
    assert set(found) == {"email", "https"}
    for subscription in found.values():
        assert ref_or_att(subscription["TopicArn"]) == topic_id
        assert ref_or_att(subscription["RedrivePolicy"]["deadLetterTargetArn"]) == dlq_id
    _, props = alarm(configured, "UndeliveredAlertsDlqNotEmpty")
    (metric_stat,) = metric_stats(props).values()
    assert metric_stat["Metric"]["MetricName"] == "ApproximateNumberOfMessagesVisible"
    assert ref_or_att(dimensions(metric_stat)["QueueName"]) == dlq_id
    second = one(configured, "AWS::SNS::Topic", "PipelineAlertPath")[0]  # an alarm about the alerting: both channels
    assert (props["Threshold"], props["AlarmActions"]) == (1, [{"Ref": topic_id}, {"Ref": second}])


def test_every_alarm_links_to_a_section_of_the_runbook(configured: dict[str, Any]) -> None:
    runbook = (REPO / "docs" / "runbook.md").read_text(encoding="utf-8")
    anchors = {re.sub(r"[^a-z0-9 -]", "", h.lower()).replace(" ", "-") for h in re.findall(r"^#+ (.+)$", runbook, re.M)}
    alarms = {**of_type(configured, ALARM), **of_type(configured, "AWS::CloudWatch::CompositeAlarm")}
    for logical_id, resource in alarms.items():
        (section,) = re.findall(r"docs/runbook\.md#([\w-]+)", resource["Properties"]["AlarmDescription"])
        assert section in anchors, logical_id
    assert "## Recovery procedures" in runbook
