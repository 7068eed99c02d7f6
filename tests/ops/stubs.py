"""ff-ops against botocore Stubbers: the documented request and response shapes of the calls moto lacks.

moto 5.2.5 implements neither SQS StartMessageMoveTask / ListMessageMoveTasks nor Step Functions RedriveExecution
(nor DescribeExecution's redriveStatus), so the tests that need them give ff-ops stubbed clients instead of real ones.
Stubber checks every request against the service model; `assert_no_pending_responses` (in the fixture) proves every
expected call was made, and a call with no response queued fails the command.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from typer.testing import CliRunner

import fire_and_forget.cli.cli_common
import fire_and_forget.cli.guard
from fire_and_forget.cli.aws import Clients

REGION = "us-east-1"
ACCOUNT = "123456789012"
STATE_MACHINE = f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:OrderSaga"
DLQ_URL = f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/FireAndForget-SourceDlq"
DLQ_ARN = f"arn:aws:sqs:{REGION}:{ACCOUNT}:FireAndForget-SourceDlq"
SOURCE_URL = f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/FireAndForget-SourceQueue"
SOURCE_ARN = f"arn:aws:sqs:{REGION}:{ACCOUNT}:FireAndForget-SourceQueue"
DELIVERIES = "FireAndForget-DeliveriesTable"
NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
OUTPUTS = {"SourceQueueUrl": SOURCE_URL, "SourceDlqUrl": DLQ_URL, "StateMachineArn": STATE_MACHINE,
           "DeliveriesTableName": DELIVERIES, "ReconcilerFunctionName": "FireAndForget-Reconciler"}
OPERATOR = f"arn:aws:sts::{ACCOUNT}:assumed-role/Operator/jane"
SERVICES = ("cloudformation", "sqs", "stepfunctions", "pipes", "cloudwatch", "dynamodb", "sts")


class Clock:
    """The clock --rate runs on, moved only by the waits it asks for; `now` follows it."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.waits: list[float] = []

    def monotonic(self) -> float:
        return self.seconds

    def sleep(self, seconds: float) -> None:
        self.waits.append(round(seconds, 6))
        self.seconds += seconds

    def now(self) -> datetime:
        return NOW + timedelta(seconds=self.seconds)

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(fire_and_forget.cli.guard, "monotonic", self.monotonic)
        monkeypatch.setattr(fire_and_forget.cli.guard, "sleep", self.sleep)
        monkeypatch.setattr(fire_and_forget.cli.cli_common, "now", self.now)


@pytest.fixture
def stubbed() -> Iterator[dict[str, Stubber]]:
    """Stubbed clients for every service ff-ops calls, handed to the CLI instead of real ones."""
    clients = {name: boto3.client(name, region_name=REGION) for name in SERVICES}  # type: ignore[call-overload]
    stubbers = {name: Stubber(client) for name, client in clients.items()}
    for stubber in stubbers.values():
        stubber.activate()
    yield stubbers
    for stubber in stubbers.values():
        stubber.assert_no_pending_responses()
        stubber.deactivate()


@pytest.fixture
def stubbed_cli(stubbed: dict[str, Stubber], monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    clients = Clients(REGION, lambda service: stubbed[service].client)
    monkeypatch.setattr(fire_and_forget.cli.cli_common, "connect", lambda **_: clients)
    monkeypatch.setattr(fire_and_forget.cli.cli_common, "now", lambda: NOW)
    return CliRunner()


def execution_arn(name: str) -> str:
    return f"arn:aws:states:{REGION}:{ACCOUNT}:execution:OrderSaga:{name}"


def stack_outputs(stubbed: dict[str, Stubber], outputs: dict[str, str] | None = None) -> None:
    stubbed["cloudformation"].add_response("describe_stacks", {"Stacks": [{
        "StackName": "FireAndForget", "StackStatus": "UPDATE_COMPLETE", "CreationTime": NOW,
        "Outputs": [{"OutputKey": k, "OutputValue": v} for k, v in (outputs or OUTPUTS).items()]}]},
        {"StackName": "FireAndForget"})


def caller(stubbed: dict[str, Stubber]) -> None:
    """The audit's first line asks who is calling, once."""
    stubbed["sts"].add_response("get_caller_identity", {"UserId": "AROAEXAMPLE:jane", "Account": ACCOUNT,
                                                        "Arn": OPERATOR}, {})


def listed(name: str, status: str, stopped: datetime) -> dict[str, Any]:
    return {"executionArn": execution_arn(name), "stateMachineArn": STATE_MACHINE, "name": name, "status": status,
            "startDate": stopped - timedelta(minutes=5), "stopDate": stopped}


def described(name: str, status: str, stopped: datetime, error: str | None = None, cause: str | None = None,
              redrive_status: str = "REDRIVABLE", reason: str | None = None) -> dict[str, Any]:
    """An execution the pipe started: its input is the batch of one SQS record, messageId `msg-<name>`."""
    batch = [{"messageId": f"msg-{name}", "body": json.dumps({"orderId": name})}]
    response = listed(name, status, stopped) | {"input": json.dumps(batch), "redriveCount": 0,
                                                "redriveStatus": redrive_status}
    if error:
        response["error"] = error
    if cause:
        response["cause"] = cause
    if reason:
        response["redriveStatusReason"] = reason
    return response


def claim(dynamodb: Stubber, name: str, stage: str | None = None, owner: str | None = None) -> None:
    """The deliveries table's row of `msg-<name>`: claimed by its execution (or `owner`), with the Reconciler's
    `reconciliation` stage when given."""
    item = {"executionArn": {"S": owner or execution_arn(name)}}
    if stage is not None:
        item["reconciliation"] = {"S": stage}
    dynamodb.add_response("get_item", {"Item": item}, {
        "TableName": DELIVERIES, "Key": {"messageId": {"S": f"msg-{name}"}}, "ConsistentRead": True,
        "ProjectionExpression": "executionArn, reconciliation"})


def describe(sfn: Stubber, response: dict[str, Any]) -> None:
    sfn.add_response("describe_execution", response, {"executionArn": response["executionArn"]})


def audit_lines(text: str) -> list[dict[str, Any]]:
    """The audit lines among a command's stderr (or a log file's lines)."""
    return [json.loads(line) for line in text.splitlines()
            if line.startswith("{") and '"ff-ops/audit/v1"' in line]
