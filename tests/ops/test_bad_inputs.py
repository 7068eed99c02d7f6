"""Messages that are not ours, stacks that do not exist or lack outputs: clear errors, exit codes, nothing deleted."""

from __future__ import annotations

import json

import boto3
from typer.testing import CliRunner

from fire_and_forget.cli.app import app
from fire_and_forget.rehearsal.rehearsal import Rehearsal
from tests.ops.helpers import depth, failed_orders, ff_ops, queued_orders

FOREIGN = ["hello, not json", json.dumps({"kind": "somebody-else.v1", "record": {"body": "{}"}}),
           json.dumps({"kind": "fire-and-forget.failure.v1", "failure": {"error": "X", "state": "Y"}})]


def put_foreign_messages(aws: Rehearsal) -> None:
    for body in FOREIGN:
        aws.sqs.send_message(QueueUrl=aws.outputs["FailureDlqUrl"], MessageBody=body)


def test_foreign_messages_are_listed_with_the_reason_and_left_alone(aws: Rehearsal, cli: CliRunner) -> None:
    (order_id,) = failed_orders(aws, 1)
    put_foreign_messages(aws)

    code, listing = ff_ops(cli, "failures", "list")

    assert code == 0
    assert [f["key"] for f in listing["failures"]] == [order_id]
    reasons = sorted(m["reason"] for m in listing["unrecognized"])
    assert reasons == sorted([
        "the body is not JSON",
        "kind is 'somebody-else.v1', not 'fire-and-forget.failure.v1'",
        "record.body (the original message) is missing",
    ])
    assert depth(aws, "FailureDlqUrl") == (4, 0)


def test_redrive_all_skips_foreign_messages_deletes_nothing_of_them_and_says_so(aws: Rehearsal,
                                                                               cli: CliRunner) -> None:
    (order_id,) = failed_orders(aws, 1)
    put_foreign_messages(aws)

    code, summary = ff_ops(cli, "failures", "redrive", "--yes", "--all")

    assert code == 8 and summary["complete"] is False
    assert summary["summary"]["unrecognized"] == 3 and summary["summary"]["redriven"] == 1
    assert queued_orders(aws, "SourceQueueUrl") == {order_id: 1}
    assert sorted(m["Body"] for m in aws.messages("FailureDlqUrl")) == sorted(FOREIGN)


def test_a_filtered_redrive_ignores_foreign_messages(aws: Rehearsal, cli: CliRunner) -> None:
    failed_orders(aws, 1)
    put_foreign_messages(aws)

    code, summary = ff_ops(cli, "failures", "redrive", "--yes", "--error", "OutOfStock")

    assert code == 0 and summary["summary"] == {
        "redriven": 1, "wouldRedrive": 0, "refusedManualRepair": 0, "unrecognized": 0, "sendFailed": 0,
        "sentNotDeleted": 0, "copyDeleted": 0, "declined": 0}
    assert depth(aws, "FailureDlqUrl") == (3, 0)


def test_unknown_stack_is_a_clear_error_with_its_exit_code(aws: Rehearsal, cli: CliRunner) -> None:
    failed_orders(aws, 1)

    human = cli.invoke(app, ["failures", "redrive", "--yes", "--all", "--stack-name", "NoSuchStack"])
    code, document = ff_ops(cli, "status", "--stack-name", "NoSuchStack")

    assert human.exit_code == 3
    assert "no stack named NoSuchStack in us-east-1" in human.stderr
    assert code == 3 and document["error"]["type"] == "StackNotFound" and document["error"]["exitCode"] == 3
    assert depth(aws, "FailureDlqUrl") == (1, 0)


def test_a_stack_without_the_outputs_names_what_is_missing(aws: Rehearsal, cli: CliRunner) -> None:
    template = {"Resources": {"Queue": {"Type": "AWS::SQS::Queue"}},
                "Outputs": {"SourceQueueUrl": {"Value": {"Ref": "Queue"}}}}
    boto3.client("cloudformation", region_name=aws.region).create_stack(
        StackName="HalfDeployed", TemplateBody=json.dumps(template))

    code, document = ff_ops(cli, "failures", "redrive", "--yes", "--all", "--stack-name", "HalfDeployed")

    assert code == 4
    assert "has no output FailureDlqUrl" in document["error"]["message"]


def test_a_bad_time_is_a_usage_error_before_any_aws_call(cli: CliRunner) -> None:
    result = cli.invoke(app, ["failures", "list", "--since", "yesterday-ish", "--region", "eu-west-3"])

    assert result.exit_code == 2
    assert "not a time: 'yesterday-ish'" in result.stderr
