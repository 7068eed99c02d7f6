"""The completion webhook as the template deploys it (fire_and_forget/construct/completion_webhook.py), against the
rules AWS documents for each part. What it sends is tested against the books in tests/workflow/test_message_status.py.

Pages: EventBridge Pipes' DynamoDB stream source (API_PipeSourceDynamoDBStreamParameters), batching
(eb-pipes-batching-concurrency.html: an API destination target takes no batch), enrichment (pipes-enrichment.html:
an empty answer invokes no target), API destinations (eb-api-destinations.html, API_CreateApiDestination,
API_CreateConnectionApiKeyAuthRequestParameters), DynamoDB Streams (Streams.html: records kept 24 hours).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from fire_and_forget.construct import PipelineSettings
from stacks.config import AppConfig, ConfigError
from tests.support.cdk import COMPLETION_WEBHOOK_SECRET, FULL_CONTEXT, load_template
from tests.support.template import of_type

STREAM_RETENTION_SECONDS = 24 * 3600
# API_CreateConnectionApiKeyAuthRequestParameters: ApiKeyName, 1 to 512 characters of this pattern.
API_KEY_NAME = re.compile(r"^[ \t]*[^\x00-\x1F:\x7F]+([ \t]+[^\x00-\x1F:\x7F]+)*[ \t]*$")


@pytest.fixture(scope="module")
def full(full_assembly: Path) -> dict[str, Any]:
    return load_template(full_assembly)


def webhook_pipe(template: dict[str, Any]) -> dict[str, Any]:
    (pipe,) = [p["Properties"] for p in of_type(template, "AWS::Pipes::Pipe").values()
               if "DynamoDBStreamParameters" in p["Properties"]["SourceParameters"]]
    return pipe


def test_the_default_deployment_has_no_webhook_and_no_stream(template: dict[str, Any]) -> None:
    assert not of_type(template, "AWS::Events::ApiDestination")
    assert all("StreamSpecification" not in t["Properties"] for t in of_type(template, "AWS::DynamoDB::Table").values())


def test_the_pipe_reads_the_deliveries_stream_from_its_start_one_record_at_a_time(full: dict[str, Any]) -> None:
    pipe = webhook_pipe(full)
    (table_id, table), = [(lid, t) for lid, t in of_type(full, "AWS::DynamoDB::Table").items() if "Deliveries" in lid]
    # Both images: the enrichment acts on what a write changed
    assert table["Properties"]["StreamSpecification"] == {"StreamViewType": "NEW_AND_OLD_IMAGES"}
    assert pipe["Source"] == {"Fn::GetAtt": [table_id, "StreamArn"]}
    stream = pipe["SourceParameters"]["DynamoDBStreamParameters"]
    # TRIM_HORIZON: LATEST may miss records written while the pipe is created or updated
    assert stream["StartingPosition"] == "TRIM_HORIZON"
    # An API destination target takes no batch, and the enrichment's answer for one record is one notice or none
    assert stream["BatchSize"] == 1
    # Retries end with the record's age at the stream's retention (ranges: -1 to 10000, -1 to 604800)
    assert 0 <= stream["MaximumRetryAttempts"] <= 10_000
    assert stream["MaximumRecordAgeInSeconds"] == STREAM_RETENTION_SECONDS
    assert "Arn" in stream["DeadLetterConfig"]
    dlq = stream["DeadLetterConfig"]["Arn"]["Fn::GetAtt"][0]
    assert of_type(full, "AWS::SQS::Queue")[dlq]["Properties"].get("FifoQueue") is not True  # no FIFO DLQ for streams


def test_the_filter_passes_only_writes_that_record_an_outcome_or_a_reconciled_failure(full: dict[str, Any]) -> None:
    filters = [json.loads(f["Pattern"]) for f in webhook_pipe(full)["SourceParameters"]["FilterCriteria"]["Filters"]]
    assert 1 <= len(filters) <= 5  # FilterCriteria: at most 5 filters, ORed
    settled_by = set()
    for pattern in filters:
        assert pattern["eventName"] == ["INSERT", "MODIFY"]  # a REMOVE (the row's expiry) tells nothing
        (attribute, rule), = pattern["dynamodb"]["NewImage"].items()
        assert rule == {"S": [{"exists": True}]}
        settled_by.add(attribute)
    assert settled_by == {"outcome", "summary"}


def test_the_target_is_an_https_api_destination_with_the_callers_secret_as_its_key(full: dict[str, Any]) -> None:
    pipe = webhook_pipe(full)
    (destination_id, destination), = of_type(full, "AWS::Events::ApiDestination").items()
    assert pipe["Target"] == {"Fn::GetAtt": [destination_id, "Arn"]}
    props = destination["Properties"]
    assert props["InvocationEndpoint"] == FULL_CONTEXT["ff:completionWebhookUrl"]
    assert props["InvocationEndpoint"].startswith("https://") and props["HttpMethod"] == "POST"
    assert 1 <= props["InvocationRateLimitPerSecond"] <= 300
    (connection,) = [c["Properties"] for lid, c in of_type(full, "AWS::Events::Connection").items()
                     if props["ConnectionArn"] == {"Fn::GetAtt": [lid, "Arn"]}]
    key = connection["AuthParameters"]["ApiKeyAuthParameters"]
    assert connection["AuthorizationType"] == "API_KEY" and API_KEY_NAME.match(key["ApiKeyName"])
    # The value is resolved by CloudFormation from the caller's secret: it never appears in the template
    assert key["ApiKeyValue"] == f"{{{{resolve:secretsmanager:{COMPLETION_WEBHOOK_SECRET}:SecretString:::}}}}"
    assert pipe["TargetParameters"]["HttpParameters"]["HeaderParameters"] == {"Content-Type": "application/json"}


def test_the_enrichment_gets_the_table_the_policy_and_only_reads(full: dict[str, Any]) -> None:
    enrichment = webhook_pipe(full)["Enrichment"]["Fn::GetAtt"][0]
    function = of_type(full, "AWS::Lambda::Function")[enrichment]["Properties"]
    assert function["Handler"] == "fire_and_forget.healing.completion.handler"
    variables = function["Environment"]["Variables"]
    assert "DELIVERIES_TABLE_NAME" in variables and "HEALING_MAX_ATTEMPTS" in variables
    assert "DELIVERY_CLAIM_TTL_SECONDS" not in variables  # it never claims (the permission matrix judges the rest)


def test_both_alarms_notify_the_alerts_topic(full: dict[str, Any]) -> None:
    alarms = {lid: a["Properties"] for lid, a in of_type(full, "AWS::CloudWatch::Alarm").items()
              if "CompletionWebhook" in lid}
    assert {re.sub(r"[0-9A-F]{8}$", "", lid) for lid in alarms} == {
        "PipelineMonitoringCompletionWebhookUndelivered", "PipelineMonitoringCompletionWebhookFailing"}
    for props in alarms.values():
        assert len(props["AlarmActions"]) == 1


def test_url_and_secret_go_together_and_are_checked() -> None:
    with pytest.raises(ValidationError, match="completionWebhookUrl and completionWebhookSecretArn go together"):
        PipelineSettings(completion_webhook_url="https://example.com/hook")
    with pytest.raises(ConfigError, match="completionWebhookUrl"):
        AppConfig.from_context({"ff:completionWebhookUrl": "http://example.com/hook",
                                "ff:completionWebhookSecretArn": COMPLETION_WEBHOOK_SECRET})
    with pytest.raises(ConfigError, match="completionWebhookSecretArn"):
        AppConfig.from_context({"ff:completionWebhookUrl": "https://example.com/hook",
                                "ff:completionWebhookSecretArn": "orders-webhook-key"})
    with pytest.raises(ConfigError, match="completionWebhookRatePerSecond"):
        AppConfig.from_context({"ff:completionWebhookRatePerSecond": 301})
    with pytest.raises(ConfigError, match="completionWebhookHeader"):
        AppConfig.from_context({"ff:completionWebhookHeader": "x-api:key"})
