"""The Reconciler's test account: moto's SQS, SNS and DynamoDB, a scripted Step Functions (the execution as
described and its history, in the shapes DescribeExecution and GetExecutionHistory return) and scripted
compensations."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws

from fire_and_forget.healing.reconciliation import Compensation, Reconciler, ReconcilerSettings
from fire_and_forget.runtime.healing_policy import HealingPolicy

REGION = "us-east-1"
MACHINE = "arn:aws:states:us-east-1:123456789012:stateMachine:saga"
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
FUNCTION_TIMEOUT = 25  # every step's function timeout, in seconds
STEPS = ("ReserveInventory", "ChargePayment", "ArrangeShipping")
UNDO = (("ReserveInventory", "ReleaseInventory"), ("ChargePayment", "RefundPayment"),
        ("ArrangeShipping", "CancelShipment"))
RETRIED = {name: frozenset({"TransientError"}) for name in (*STEPS, *(c for _s, c in UNDO))}


def events(*states: str, exited: tuple[str, ...] = (), tail_input: dict[str, Any] | None = None
            ) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [{"type": "ExecutionStarted"}]
    for name in states:
        entered: dict[str, Any] = {"name": name}
        if name in ("ClaimFailure", "HandleFailure") and tail_input is not None:
            entered["input"] = json.dumps(tail_input)
        events.append({"type": "TaskStateEntered", "stateEnteredEventDetails": entered})
        if name in exited:
            events.append({"type": "TaskStateExited", "stateExitedEventDetails": {"name": name}})
    return events


@dataclass
class ScriptedStepFunctions:
    """DescribeExecution / GetExecutionHistory / ListExecutions over executions given by the test."""

    executions: dict[str, dict[str, Any]] = field(default_factory=dict)
    histories: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def add(self, name: str, status: str, states: list[str], *, error: str | None = None,
            exited: tuple[str, ...] = (), tail_input: dict[str, Any] | None = None,
            message_id: str | None = None, stopped: datetime = NOW) -> str:
        arn = f"arn:aws:states:us-east-1:123456789012:execution:saga:{name}"
        record = {"messageId": message_id or f"msg-{name}", "body": json.dumps({"orderId": name}),
                  "messageAttributes": {}}
        self.executions[arn] = {"executionArn": arn, "stateMachineArn": MACHINE, "status": status,
                                "error": error, "cause": f"cause of {name}", "input": json.dumps([record]),
                                "startDate": stopped - timedelta(minutes=1), "stopDate": stopped}
        self.histories[arn] = events(*states, exited=exited, tail_input=tail_input)
        return arn

    def describe_execution(self, executionArn: str) -> dict[str, Any]:  # noqa: N803 - boto3's names
        return self.executions[executionArn]

    def get_paginator(self, operation: str) -> Any:
        sfn = self

        class Paginator:
            def paginate(self, **kwargs: Any) -> Iterator[dict[str, Any]]:
                if operation == "get_execution_history":
                    yield {"events": sfn.histories[kwargs["executionArn"]]}
                else:
                    listed = [e for e in sfn.executions.values() if e["status"] == kwargs["statusFilter"]]
                    yield {"executions": sorted(listed, key=lambda e: e["startDate"], reverse=True)}

        return Paginator()


@dataclass
class ScriptedCompensations:
    """Lambda Invoke for the compensation functions: records each call; `fail` makes one raise for good."""

    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    fail: dict[str, str] = field(default_factory=dict)  # function arn -> errorType

    def invoke(self, FunctionName: str, Payload: bytes) -> dict[str, Any]:  # noqa: N803
        self.calls.append((FunctionName, json.loads(Payload)))
        if FunctionName in self.fail:
            body = {"errorType": self.fail[FunctionName], "errorMessage": "refused"}
            return {"FunctionError": "Unhandled", "Payload": io.BytesIO(json.dumps(body).encode())}
        return {"Payload": io.BytesIO(b'{"undone": true}')}


@pytest.fixture
def reconciler_account() -> Iterator[dict[str, Any]]:
    with mock_aws():
        sqs = boto3.client("sqs", region_name=REGION)
        sns = boto3.client("sns", region_name=REGION)
        dynamodb = boto3.client("dynamodb", region_name=REGION)
        dlq = sqs.create_queue(QueueName="failure-dlq")["QueueUrl"]
        source = sqs.create_queue(QueueName="source")["QueueUrl"]
        topic = sns.create_topic(Name="alerts")["TopicArn"]
        alerts = sqs.create_queue(QueueName="alerts-copy")["QueueUrl"]
        alerts_arn = sqs.get_queue_attributes(QueueUrl=alerts, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=alerts_arn)
        dynamodb.create_table(TableName="deliveries", BillingMode="PAY_PER_REQUEST",
                              AttributeDefinitions=[{"AttributeName": "messageId", "AttributeType": "S"}],
                              KeySchema=[{"AttributeName": "messageId", "KeyType": "HASH"}])
        sfn, compensations = ScriptedStepFunctions(), ScriptedCompensations()
        settings = ReconcilerSettings(
            pipeline="orders", environment="dev", title="Order saga", region=REGION, state_machine_arn=MACHINE,
            failure_dlq_url=dlq, alerts_topic_arn=topic, deliveries_table="deliveries",
            compensations=tuple(Compensation(step, state, f"fn-{state}") for step, state in UNDO),
            claim_ttl_seconds=3600, compensation_backoff_seconds=0,
            task_timeouts=dict.fromkeys(STEPS, FUNCTION_TIMEOUT))
        reconciler = Reconciler(sfn=sfn, dynamodb=dynamodb, sqs=sqs, sns=sns, lambda_client=compensations,
                                settings=settings, policy=HealingPolicy(transient_errors=RETRIED),
                                sleep=lambda _s: None)
        yield {"reconciler": reconciler, "sfn": sfn, "compensations": compensations, "sqs": sqs, "dlq": dlq,
               "alerts": alerts, "dynamodb": dynamodb, "source": source}


def drain(sqs: Any, url: str) -> list[dict[str, Any]]:
    out = []
    while batch := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", []):
        for message in batch:
            out.append(json.loads(message["Body"]))
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    return out
