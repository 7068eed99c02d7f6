"""The resources a workflow's own tasks need, built the way the pipeline's are: encrypted tables with point-in-time
recovery, and Lambda functions with their own log group, role, tracing and the pattern's runtime.

An example stack builds its tables and functions with these, then hands the functions to its `Workflow`."""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import Duration
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from fire_and_forget.construct.code import RUNTIME
from fire_and_forget.construct.compliance import acknowledge
from fire_and_forget.construct.defaults import log_group, removal_policy
from fire_and_forget.construct.settings import PipelineSettings


def encrypted_table(scope: Construct, construct_id: str, *, partition_key: str, key: kms.IKey,
                    settings: PipelineSettings, ttl_attribute: str | None = None,
                    stream: dynamodb.StreamViewType | None = None) -> dynamodb.Table:
    """On-demand, encrypted with the customer-managed key, point-in-time recovery, the settings' removal policy;
    a stream of `stream`'s images when given."""
    return dynamodb.Table(
        scope,
        construct_id,
        partition_key=dynamodb.Attribute(name=partition_key, type=dynamodb.AttributeType.STRING),
        billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
        encryption=dynamodb.TableEncryption.CUSTOMER_MANAGED,
        encryption_key=key,
        point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
            point_in_time_recovery_enabled=True
        ),
        time_to_live_attribute=ttl_attribute,
        stream=stream,
        removal_policy=removal_policy(settings),
    )


STEP_FUNCTIONS_INVOKES = (
    "Step Functions invokes the tasks synchronously; a Lambda DLQ only catches asynchronous invocations. "
    "Failures are caught by the workflow and end in the failure DLQ."
)


def task_function(scope: Construct, name: str, *, handler: str, code: lambda_.Code, layer: lambda_.ILayerVersion,
                  settings: PipelineSettings, environment: Mapping[str, str], description: str,
                  why_no_dlq: str = STEP_FUNCTIONS_INVOKES) -> lambda_.Function:
    """`<name>Function` (arm64, RUNTIME, active tracing), with `<name>Logs` and `<name>Role` beside it.

    The function times out before the Task does (PipelineSettings.lambda_timeout_seconds), so the workflow sees
    the function's own timeout first. `why_no_dlq` says why it needs no Lambda DLQ (who invokes it, synchronously).
    Grants to tables are the caller's: only it knows what the task touches.
    """
    logs = log_group(scope, f"{name}Logs", settings=settings)
    # Our own role instead of AWSLambdaBasicExecutionRole: write to this function's log group only.
    role = iam.Role(scope, f"{name}Role", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
    logs.grant_write(role)
    function = lambda_.Function(
        scope,
        f"{name}Function",
        description=description,
        runtime=RUNTIME,
        architecture=lambda_.Architecture.ARM_64,
        handler=handler,
        code=code,
        layers=[layer],
        memory_size=256,
        timeout=Duration.seconds(settings.lambda_timeout_seconds),
        tracing=lambda_.Tracing.ACTIVE,
        environment={"POWERTOOLS_LOG_LEVEL": settings.log_level, **environment},
        role=role,
        log_group=logs,
    )
    acknowledge(function, "Serverless-LambdaDLQ", why_no_dlq)
    for rule in ("AwsSolutions-L1", "Serverless-LambdaLatestVersion"):
        acknowledge(
            function, rule,
            "python3.13 on purpose: the newest runtime whose Python the tests run on (these machines have no "
            "3.14), so the handlers and the layer's compiled wheels are tested on the runtime's minor version.",
        )
    # With the recommended flag createNewPoliciesWithAddToRolePolicy=false the tracing statement joins the
    # role's default policy, so the finding is on the role.
    acknowledge(
        role, "AwsSolutions-IAM5[Resource::*]",
        "Only xray:PutTraceSegments and xray:PutTelemetryRecords, which support no resource-level scoping.",
    )
    for action in ("kms:GenerateDataKey*", "kms:ReEncrypt*"):
        acknowledge(
            role, f"AwsSolutions-IAM5[Action::{action}]",
            "Added by the DynamoDB L2 grant for tables encrypted with the customer-managed key; "
            "the statement is scoped to that one key.",
        )
    return function
