"""The template passes cfn-lint, cdk-nag and the ASL schema, and equals what `cdk synth` writes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_sqs as sqs

from stacks.compliance import add_compliance_checks
from stacks.constructs.order_saga import ASL_FILE
from tests.support.cdk import REPO, STACK_NAME, load_template

NODE_BIN = REPO / "node_modules" / ".bin"


def test_cfn_lint_reports_nothing(cloud_assembly: Path) -> None:
    result = subprocess.run(
        # The venv's cfn-lint: a bare name may find a pyenv shim that refuses under .python-version.
        [str(Path(sys.executable).parent / "cfn-lint"), str(cloud_assembly / f"{STACK_NAME}.template.json")],
        cwd=REPO, capture_output=True, text=True, check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_asl_file_validates_against_the_schema() -> None:
    result = subprocess.run(
        [str(NODE_BIN / "asl-validator"), "--json-path", str(ASL_FILE)],
        capture_output=True, text=True, check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_nag_packs_fail_synth_on_an_unacknowledged_finding(tmp_path: Path) -> None:
    """The packs really run: the same checks on a queue with no DLQ and no TLS policy stop synth."""
    app = cdk.App(outdir=str(tmp_path))
    sqs.Queue(cdk.Stack(app, "Careless"), "Queue")
    add_compliance_checks(app)
    with pytest.raises(Exception, match="AwsSolutions-SQS4"):
        app.synth()


def test_in_process_template_equals_cdk_synth(template: dict[str, Any], tmp_path: Path) -> None:
    env = os.environ | {"CDK_DISABLE_CLI_TELEMETRY": "1", "CDK_DISABLE_VERSION_CHECK": "1"}
    result = subprocess.run(
        [str(NODE_BIN / "cdk"), "synth", "--quiet", "--output", str(tmp_path)],
        cwd=REPO, capture_output=True, text=True, check=False, env=env,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert load_template(tmp_path) == template
    # cdk.json sets every flag recommended for a new app on purpose, so synth has nothing to warn about.
    assert "feature flags are not configured" not in result.stdout + result.stderr


def test_acknowledgments_are_few_scoped_and_reasoned() -> None:
    """Every acknowledged finding is listed here: a new one must be added on purpose, with its reason."""
    from app import build_app
    from tests.support.cdk import cdk_context

    app = build_app(cdk_context())
    acknowledged: dict[tuple[str, str], str] = {}
    for construct in app.node.find_all():
        for entry in construct.node.metadata:
            if entry.type == "aws:cdk:acknowledged-rules":
                for rule, reason in entry.data.items():
                    acknowledged[(construct.node.path.removeprefix(f"{STACK_NAME}/"), rule)] = reason
    functions = ("ReserveInventory", "ChargePayment", "ArrangeShipping", "CancelShipment", "RefundPayment",
                 "ReleaseInventory")
    queues = ("SourceQueue/SourceDlq", "FailureHandling/FailureDlq", "ExecutionEvents/FailureEventsQueue",
              "ExecutionEvents/TargetDlq")
    expected = (
        {(f"SagaTasks/{f}Function", "Serverless::Serverless-LambdaDLQ") for f in functions}
        | {(f"SagaTasks/{f}Role", "AwsSolutions::AwsSolutions-IAM5[Resource::*]") for f in functions}
        | {(f"SagaTasks/{f}Function", rule) for f in functions
           for rule in ("AwsSolutions::AwsSolutions-L1", "Serverless::Serverless-LambdaLatestVersion")}
        | {(f"SagaTasks/{f}Role", f"AwsSolutions::AwsSolutions-IAM5[Action::{action}]")
           for f in functions for action in ("kms:GenerateDataKey*", "kms:ReEncrypt*")}
        | {(sm, "AwsSolutions::AwsSolutions-IAM5[Resource::*]")
           for sm in ("OrderSaga/StateMachine", "ExecutionEvents/AnnounceExecutionFailure")}
        | {(q, "AwsSolutions::AwsSolutions-SQS3") for q in queues}
        | {(q, "Serverless::Serverless-SQSRedrivePolicy") for q in queues}
        | {("OperatorPolicy/Policy", f"AwsSolutions::AwsSolutions-IAM5[Resource::{resource}]") for resource in (
            "*", "arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:"
                 "<OrderSagaStateMachine15260A25.Name>:*",
            f"arn:<AWS::Partition>:cloudformation:<AWS::Region>:<AWS::AccountId>:stack/{STACK_NAME}/*")}
    )
    assert set(acknowledged) == expected
    for key, reason in acknowledged.items():
        assert len(reason) >= 40, key
