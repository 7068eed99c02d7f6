"""The OpsCenter tickets as the template deploys them (fire_and_forget/construct/tickets.py), against the rules AWS
documents: Lambda's DynamoDB stream event source mapping (with-ddb.html, API_CreateEventSourceMapping: ranges of
BatchSize, MaximumRetryAttempts, MaximumRecordAgeInSeconds; ReportBatchItemFailures), and the Service Authorization
Reference for Systems Manager (CreateOpsItem takes no resource; UpdateOpsItem an opsitem ARN; AddTagsToResource
needed only with tags, which are not passed). What the tickets do is tested against the books in
tests/workflow/test_message_status.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.cdk import load_template
from tests.support.template import of_type


@pytest.fixture(scope="module")
def full(full_assembly: Path) -> dict[str, Any]:
    return load_template(full_assembly)


def tickets_function(template: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    (found,) = [(lid, f["Properties"]) for lid, f in of_type(template, "AWS::Lambda::Function").items()
                if f["Properties"].get("Handler") == "fire_and_forget.healing.tickets.handler"]
    return found


def test_the_default_deployment_opens_no_tickets(template: dict[str, Any]) -> None:
    handlers = [f["Properties"].get("Handler") for f in of_type(template, "AWS::Lambda::Function").values()]
    assert "fire_and_forget.healing.tickets.handler" not in handlers
    assert "ssm:UpdateOpsItem" not in json.dumps(template)


def test_the_mapping_reads_the_deliveries_stream_from_its_start_and_keeps_what_it_gives_up(
        full: dict[str, Any]) -> None:
    function, _ = tickets_function(full)
    (mapping,) = [m["Properties"] for m in of_type(full, "AWS::Lambda::EventSourceMapping").values()
                  if m["Properties"]["FunctionName"] == {"Ref": function}]
    (table,) = [lid for lid in of_type(full, "AWS::DynamoDB::Table") if "Deliveries" in lid]
    assert mapping["EventSourceArn"] == {"Fn::GetAtt": [table, "StreamArn"]}
    assert mapping["StartingPosition"] == "TRIM_HORIZON"
    assert 1 <= mapping["BatchSize"] <= 10_000 and mapping["BisectBatchOnFunctionError"] is True
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]  # the handler reports the failed one on
    assert 0 <= mapping["MaximumRetryAttempts"] <= 10_000
    assert 60 <= mapping["MaximumRecordAgeInSeconds"] <= 24 * 3600  # no older than the stream keeps a record
    dlq = mapping["DestinationConfig"]["OnFailure"]["Destination"]["Fn::GetAtt"][0]
    assert dlq in of_type(full, "AWS::SQS::Queue")
    # The same filters as the completion webhook's pipe: outcomes and the Reconciler's summaries only
    patterns = [json.loads(f["Pattern"]) for f in mapping["FilterCriteria"]["Filters"]]
    assert sorted(next(iter(p["dynamodb"]["NewImage"])) for p in patterns) == ["outcome", "summary"]


def test_the_function_opens_and_resolves_opsitems_and_nothing_else_of_ssm(full: dict[str, Any]) -> None:
    _, props = tickets_function(full)
    role = props["Role"]["Fn::GetAtt"][0]
    statements = [s for p in of_type(full, "AWS::IAM::Policy").values() if {"Ref": role} in p["Properties"]["Roles"]
                  for s in p["Properties"]["PolicyDocument"]["Statement"]]
    ssm = {a for s in statements for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
           if a.startswith("ssm:")}
    assert ssm == {"ssm:CreateOpsItem", "ssm:UpdateOpsItem"}
    (update,) = [s for s in statements if s["Action"] == "ssm:UpdateOpsItem"]
    assert ":opsitem/*" in json.dumps(update["Resource"])
    variables = props["Environment"]["Variables"]
    needed = {"STACK_NAME", "RUNBOOK_URL", "MESSAGE_KEY_FIELD", "DELIVERIES_TABLE_NAME", "PIPELINE_NAME"}
    assert needed <= set(variables)


def test_the_tickets_alarms_notify_the_alerts_topic(full: dict[str, Any]) -> None:
    alarms = {lid for lid, a in of_type(full, "AWS::CloudWatch::Alarm").items()
              if "Tickets" in lid and len(a["Properties"].get("AlarmActions", [])) == 1}
    assert {lid.rstrip("0123456789ABCDEF") for lid in alarms} >= {
        "PipelineMonitoringTicketsDlqNotEmpty", "PipelineMonitoringTicketsErrors", "PipelineMonitoringTicketsRefused"}


def test_the_operator_may_resolve_tickets_only_where_they_exist(template: dict[str, Any],
                                                                full: dict[str, Any]) -> None:
    def sids(t: dict[str, Any]) -> set[str]:
        (policy,) = of_type(t, "AWS::IAM::ManagedPolicy").values()
        return {s.get("Sid") for s in policy["Properties"]["PolicyDocument"]["Statement"]}

    assert {"ResolveTicketsOfDiscardedMessages", "NoteResolvedTickets"} <= sids(full)
    assert not {"ResolveTicketsOfDiscardedMessages", "NoteResolvedTickets"} & sids(template)
