"""The smallest pipeline that synthesizes: one inline Lambda task, a definition given as a dict, default settings."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_lambda as lambda_

from fire_and_forget.construct import FireAndForgetPipeline, PipelineProps, Workflow, WorkflowMetrics

TASK = "Work"

# One Lambda task that honours the workflow contract: TimeoutSeconds, DuplicateDelivery to the tail's quiet end,
# States.ALL through a Pass that shapes the failure into ClaimFailure.
VALID: dict[str, Any] = {
    "StartAt": TASK,
    "States": {
        TASK: {
            "Type": "Task",
            "Resource": "arn:aws:states:::lambda:invoke",
            "Parameters": {"FunctionName": f"${{{TASK}FunctionArn}}", "Payload": {"record.$": "$$.Execution.Input[0]"}},
            "OutputPath": "$.Payload",
            "TimeoutSeconds": 30,
            "Catch": [
                {"ErrorEquals": ["DuplicateDelivery"], "ResultPath": "$", "Next": "DuplicateDeliveryIgnored"},
                {"ErrorEquals": ["States.ALL"], "ResultPath": "$", "Next": "WorkFailed"},
            ],
            "End": True,
        },
        "WorkFailed": {
            "Type": "Pass",
            "Parameters": {
                "failure": {"state": TASK, "error.$": "$.Error", "cause.$": "$.Cause"},
                "compensation": {"required": False},
                "manualRepair": False,
            },
            "Next": "ClaimFailure",
        },
    },
}


def valid_definition() -> dict[str, Any]:
    """A fresh copy of VALID, for a test to break in one place."""
    return copy.deepcopy(VALID)


def write(directory: Path, definition: dict[str, Any]) -> Path:
    path = directory / "workflow.asl.json"
    path.write_text(json.dumps(definition), encoding="utf-8")
    return path


def stack(name: str = "Minimal") -> cdk.Stack:
    # CDK's built-in CloudFormation validator costs ~7 s on its first synth and checks nothing these tests are about
    # (the examples' templates run it, and cfn-lint, elsewhere); the construct's own validations still run.
    return cdk.Stack(cdk.App(builtin_cloud_formation_validation=False), name)


def function(scope: cdk.Stack, name: str = TASK) -> lambda_.Function:
    return lambda_.Function(
        scope,
        f"{name}Function",
        runtime=lambda_.Runtime.PYTHON_3_13,
        handler="index.handler",
        code=lambda_.Code.from_inline("def handler(event, context):\n    return event\n"),
    )


def workflow(
    scope: cdk.Stack, definition_file: Path, *, title: str = "Minimal", claims_delivery: str = TASK
) -> Workflow:
    return Workflow(
        title=title,
        definition_file=definition_file,
        functions={TASK: function(scope)},
        claims_delivery=claims_delivery,
    )


def layer(scope: cdk.Stack) -> lambda_.ILayerVersion:
    """A layer by ARN: building the real DependenciesLayer runs uv, seconds per synth these tests do not need."""
    found = scope.node.try_find_child("DependenciesLayer")
    if found is not None:
        return found  # type: ignore[return-value]
    return lambda_.LayerVersion.from_layer_version_arn(
        scope, "DependenciesLayer", "arn:aws:lambda:us-east-1:123456789012:layer:dependencies:1")


def props(flow: Workflow, **overrides: Any) -> dict[str, Any]:
    """The pipeline's keyword props for `flow`, with `overrides` (checked against PipelineProps' fields)."""
    scope = cdk.Stack.of(next(iter(flow.functions.values())))
    fields: dict[str, Any] = {
        "name": "minimal",
        "message_key": "id",
        "workflow": flow,
        "metrics": WorkflowMetrics(namespace="Minimal", service="minimal"),
        "layer": layer(scope),
    }
    props = fields | overrides
    PipelineProps(**props)  # the same names and types the construct takes
    return props


def pipeline(
    scope: cdk.Stack, definition_file: Path, construct_id: str = "Pipeline", **overrides: Any
) -> FireAndForgetPipeline:
    return FireAndForgetPipeline(scope, construct_id, **props(workflow(scope, definition_file), **overrides))


def pipeline_from(scope: cdk.Stack, flow: Workflow, construct_id: str = "Pipeline",
                  **overrides: Any) -> FireAndForgetPipeline:
    return FireAndForgetPipeline(scope, construct_id, **props(flow, **overrides))
