"""The template passes cfn-lint, cdk-nag and the ASL schema, and equals what `cdk synth` writes."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk import aws_sqs as sqs

from app import CATALOG_STACK_NAME
from fire_and_forget.construct.compliance import add_compliance_checks
from fire_and_forget.construct.request_response import InvocationType
from fire_and_forget.construct.workflow import render_definition
from stacks.catalog.stack import ASL_FILE as CATALOG_ASL
from stacks.config import AppConfig
from stacks.orders.stack import ASL_FILE, COMPENSATIONS, left_out
from tests.infra import request_response_app
from tests.support.cdk import (
    MAKE_SYNTH_OUTPUT,
    REPO,
    STACK_NAME,
    load_template,
    made_since_the_last_change,
    synthesize,
)
from tests.support.cfn_lint import cfn_lint

NODE_BIN = REPO / "node_modules" / ".bin"


def test_cfn_lint_reports_nothing_on_any_stack(cloud_assembly: Path) -> None:
    """The app's two stacks and the REQUEST_RESPONSE variant of the catalog (tests/infra/request_response_app.py)."""
    templates = [*(cloud_assembly / f"{stack}.template.json" for stack in (STACK_NAME, CATALOG_STACK_NAME)),
                 request_response_app.assembly() / f"{request_response_app.STACK_NAME}.template.json"]
    assert all(template.is_file() for template in templates)
    assert cfn_lint(templates) == ""


def test_cfn_lint_reports_nothing_on_the_app_with_every_option(full_assembly: Path) -> None:
    """Every channel, the carrier's callback entry point and its answerer (tests/support/cdk.py's FULL_CONTEXT):
    synth ran the cdk-nag packs on it; cfn-lint reads what they do not (the function URL, its two permissions)."""
    template = full_assembly / f"{STACK_NAME}.template.json"
    assert "AWS::Lambda::Url" in template.read_text(encoding="utf-8")
    assert cfn_lint([template]) == ""


def test_cfn_lint_reports_a_finding_and_honours_the_repository_s_settings(tmp_path: Path) -> None:
    """The check above can fail: a property its resource type does not have is reported (E3002), with the file and
    the rule; a redundant DependsOn (W3005, which .cfnlintrc.yaml ignores for CDK's own) is not."""
    queue = {"Type": "AWS::SQS::Queue", "Properties": {}}
    template = {"Resources": {"Queue": queue, "Second": {**queue, "DependsOn": "Queue",
                                                         "Properties": {"RedrivePolicy": {
                                                             "deadLetterTargetArn": {"Fn::GetAtt": ["Queue", "Arn"]},
                                                             "maxReceiveCount": 3}}}}}
    clean = tmp_path / "clean.template.json"
    clean.write_text(json.dumps(template), encoding="utf-8")
    assert cfn_lint([clean]) == ""

    template["Resources"]["Queue"]["Properties"] = {"VisibilityTimeoutSecond": 30}
    broken = tmp_path / "broken.template.json"
    broken.write_text(json.dumps(template), encoding="utf-8")
    findings = cfn_lint([clean, broken])
    assert "E3002" in findings and "broken.template.json" in findings and "clean.template.json" not in findings
    assert "W3005" not in findings


@pytest.mark.parametrize("mode", ["FIRE_AND_FORGET", "REQUEST_RESPONSE"])
@pytest.mark.parametrize(("asl", "compensations", "claims"), [
    (ASL_FILE, COMPENSATIONS, "ReserveInventory"), (CATALOG_ASL, (), "IndexProduct"),
], ids=["orders", "catalog"])
def test_each_example_with_the_failure_tail_validates_against_the_schema(
    asl: Path, compensations: tuple[str, ...], claims: str, mode: InvocationType, tmp_path: Path
) -> None:
    """What the state machine runs: the example's ASL with the mode's tail appended (the failure tail, or the
    returning tail with every successful end sent through DeliveryCompleted)."""
    definition = render_definition(asl, AppConfig(), compensations=compensations, claims_delivery=claims,
                                   invocation_type=mode, leave_out=left_out(AppConfig()) if asl == ASL_FILE else ())
    rendered = tmp_path / "definition.asl.json"
    rendered.write_text(json.dumps(definition), encoding="utf-8")
    result = subprocess.run(
        [str(NODE_BIN / "asl-validator"), "--json-path", str(rendered)],
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


def cli_synth(output: Path) -> tuple[Path, str]:
    """The CLI's cloud assembly and what it printed: `make synth`'s when it is current (as under `make test`, whose
    Checkov step has just run it), otherwise a synth of its own into `output`."""
    if made_since_the_last_change(REPO):
        return MAKE_SYNTH_OUTPUT, (REPO / "cdk.out.synth.log").read_text(encoding="utf-8")
    env = os.environ | {"CDK_DISABLE_CLI_TELEMETRY": "1", "CDK_DISABLE_VERSION_CHECK": "1"}
    result = subprocess.run(
        [str(NODE_BIN / "cdk"), "synth", "--quiet", "--output", str(output)],
        cwd=REPO, capture_output=True, text=True, check=False, env=env,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return output, result.stdout + result.stderr


def test_make_synth_s_assembly_is_current_only_until_something_synth_reads_changes(tmp_path: Path) -> None:
    def at(path: Path, moment: int, text: str = "") -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        os.utime(path, (moment, moment))

    at(tmp_path / "app.py", 100)
    at(tmp_path / "stacks" / "orders" / "stack.py", 110)
    at(tmp_path / "stacks" / "__pycache__" / "stack.pyc", 500)  # written by any import: not an input
    assert not made_since_the_last_change(tmp_path)  # never synthesized
    at(tmp_path / "cdk.out" / "manifest.json", 200)
    at(tmp_path / "cdk.out.synth.log", 201)
    assert made_since_the_last_change(tmp_path)
    at(tmp_path / "stacks" / "orders" / "stack.py", 300)  # edited since
    assert not made_since_the_last_change(tmp_path)
    at(tmp_path / "stacks" / "orders" / "stack.py", 110)
    at(tmp_path / "cdk.out" / "manifest.json", 250)  # an assembly newer than the CLI's output: not that synth's
    assert not made_since_the_last_change(tmp_path)
    (tmp_path / "cdk.out.synth.log").unlink()  # the last synth failed
    at(tmp_path / "cdk.out" / "manifest.json", 200)
    assert not made_since_the_last_change(tmp_path)


def test_in_process_template_equals_cdk_synth(cloud_assembly: Path, tmp_path: Path) -> None:
    assembly, printed = cli_synth(tmp_path / "cli")
    # The suite's assembly is make synth's when that is current (tests/conftest.py): then one made here compares.
    in_process = synthesize(tmp_path / "in-process") if cloud_assembly == assembly else cloud_assembly
    for stack in (STACK_NAME, CATALOG_STACK_NAME):
        assert load_template(assembly, stack) == load_template(in_process, stack)
    # cdk.json sets every flag recommended for a new app on purpose, so synth has nothing to warn about.
    assert "feature flags are not configured" not in printed


def _pipeline_acknowledgments(stack: cdk.Stack) -> set[tuple[str, str]]:
    """What every FireAndForgetPipeline acknowledges, wherever it stands (paths relative to its stack)."""
    machine = next(c for c in stack.node.find_all() if c.node.path.endswith("Pipeline/Workflow/StateMachine"))
    machine_id = stack.get_logical_id(machine.node.default_child)  # type: ignore[arg-type]
    # Terminal queues (the failure-events queue has its own DLQ now, the ReconcilerDlq).
    queues = ("Pipeline/SourceQueue/SourceDlq", "Pipeline/FailureHandling/FailureDlq",
              "Pipeline/ExecutionEvents/ReconcilerDlq", "Pipeline/ExecutionEvents/TargetDlq",
              "Pipeline/Healing/ScheduleDlq")
    executions = ('arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:{"Fn::Select":[6,'
                  f'{{"Fn::Split":[":",{{"Ref":"{machine_id}"}}]}}]}}:*')
    return (
        {("Pipeline/Workflow/StateMachine", "AwsSolutions::AwsSolutions-IAM5[Resource::*]")}
        | _task_acknowledgments("Pipeline/Healing/", ("Reconciler", "Redriver"))
        | {("Pipeline/Healing/ReconcilerFunction", "Serverless::Serverless-LambdaEventSourceMappingDestination"),
           ("Pipeline/Healing/ReconcilerRole", f"AwsSolutions::AwsSolutions-IAM5[Resource::{executions}]")}
        | {(q, "AwsSolutions::AwsSolutions-SQS3") for q in queues}
        | {(q, "Serverless::Serverless-SQSRedrivePolicy") for q in queues}
        | {("Pipeline/OperatorPolicy/Policy", f"AwsSolutions::AwsSolutions-IAM5[Resource::{resource}]")
           for resource in (
            "*", f"arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:<{machine_id}.Name>:*",
            f"arn:<AWS::Partition>:cloudformation:<AWS::Region>:<AWS::AccountId>:stack/{stack.stack_name}/*")}
    )


def _task_acknowledgments(prefix: str, functions: tuple[str, ...]) -> set[tuple[str, str]]:
    """What every task function built by task_resources.task_function acknowledges."""
    return (
        {(f"{prefix}{f}Function", "Serverless::Serverless-LambdaDLQ") for f in functions}
        | {(f"{prefix}{f}Role", "AwsSolutions::AwsSolutions-IAM5[Resource::*]") for f in functions}
        | {(f"{prefix}{f}Function", rule) for f in functions
           for rule in ("AwsSolutions::AwsSolutions-L1", "Serverless::Serverless-LambdaLatestVersion")}
        | {(f"{prefix}{f}Role", f"AwsSolutions::AwsSolutions-IAM5[Action::{action}]")
           for f in functions for action in ("kms:GenerateDataKey*", "kms:ReEncrypt*")}
    )


def test_acknowledgments_are_few_scoped_and_reasoned() -> None:
    """Every acknowledged finding is listed here: a new one must be added on purpose, with its reason."""
    from app import build_app
    from tests.support.cdk import cdk_context

    app = build_app(cdk_context())
    stacks = {stack.stack_name: stack for stack in app.node.children if isinstance(stack, cdk.Stack)}
    acknowledged: dict[tuple[str, str, str], str] = {}
    for name, stack in stacks.items():
        for construct in stack.node.find_all():
            for entry in construct.node.metadata:
                if entry.type == "aws:cdk:acknowledged-rules":
                    for rule, reason in entry.data.items():
                        acknowledged[(name, construct.node.path.removeprefix(f"{name}/"), rule)] = reason
    orders = ("ReserveInventory", "ChargePayment", "ArrangeShipping", "CancelShipment", "RefundPayment",
              "ReleaseInventory")
    expected = {
        (STACK_NAME, *ack)
        for ack in _pipeline_acknowledgments(stacks[STACK_NAME]) | _task_acknowledgments("SagaTasks/", orders)
    } | {
        (CATALOG_STACK_NAME, *ack)
        for ack in _pipeline_acknowledgments(stacks[CATALOG_STACK_NAME]) | _task_acknowledgments("", ("IndexProduct",))
    }
    assert set(acknowledged) == expected
    for key, reason in acknowledged.items():
        assert len(reason) >= 40, key
