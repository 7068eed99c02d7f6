"""The caller's completion webhook: one POST to the caller's URL per message whose outcome became final.

The deliveries table's stream (new and old images) feeds an EventBridge Pipe: its filter keeps the records whose new
image records an outcome or a reconciled failure, its enrichment (fire_and_forget.healing.completion) turns each into
the message's final status or nothing, and its target, an EventBridge API destination, POSTs it with an API key header
whose value the connection reads from the caller's Secrets Manager secret. docs/design.md, "The completion webhook",
cites the pages behind each setting.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aws_cdk import Duration, SecretValue
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_pipes as pipes
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from fire_and_forget.construct.code import healing_code
from fire_and_forget.construct.compliance import acknowledge
from fire_and_forget.construct.defaults import dead_letter_queue, log_group
from fire_and_forget.construct.healing import executions_of
from fire_and_forget.construct.settings import PipelineSettings
from fire_and_forget.construct.task_resources import task_function
from fire_and_forget.runtime.healing_policy import HealingPolicy

# A stream record is kept 24 hours (DynamoDB Streams); the pipe retries a batch it could not deliver until the record
# is that old, then hands the batch's description to the DLQ.
STREAM_RETENTION = Duration.hours(24)
RETRY_ATTEMPTS = 185  # as many as EventBridge gives a rule's target; the record's age ends them first
ENRICHMENT_TIMEOUT = Duration.seconds(30)


def settled_filters() -> list[dict[str, Any]]:
    """The pipe's filters (a record passes when one matches): its new image records an outcome, or a summary of the
    Reconciler's. Two filters rather than one `$or`: FilterCriteria ORs its filters by definition. The enrichment
    decides the rest (newly settled, the caller's current attempt, final)."""
    return [{"eventName": ["INSERT", "MODIFY"], "dynamodb": {"NewImage": {name: {"S": [{"exists": True}]}}}}
            for name in ("outcome", "summary")]


@dataclass(frozen=True)
class EndingReads:
    """What a function reading the stream's endings (fire_and_forget.healing.endings) is given: the pipeline's
    settings and layer, the deliveries table and its key, the workflow whose executions it describes, the healing
    policy that says what is final, and its Powertools service and namespace."""

    settings: PipelineSettings
    table: dynamodb.Table
    key: kms.IKey
    state_machine: sfn.StateMachine
    policy: HealingPolicy
    layer: lambda_.ILayerVersion
    service: str
    metrics_namespace: str


def ending_reader(scope: Construct, name: str, *, handler: str, timeout: Duration, description: str,
                  why_no_dlq: str, reads: EndingReads,
                  environment: Mapping[str, str] | None = None) -> lambda_.Function:
    """A function of the healing code that reads endings: what `endings` calls and nothing more (GetItem on the
    deliveries table, decrypt with its key, DescribeExecution on the workflow's executions), its environment
    (the table, the policy, `environment`), and `timeout`."""
    function = task_function(
        scope, name, handler=handler, code=healing_code(), layer=reads.layer, settings=reads.settings,
        description=description, why_no_dlq=why_no_dlq,
        environment={"POWERTOOLS_SERVICE_NAME": reads.service, "POWERTOOLS_METRICS_NAMESPACE": reads.metrics_namespace,
                     "DELIVERIES_TABLE_NAME": reads.table.table_name, **reads.policy.to_environment(),
                     **(environment or {})})
    cfn_function = function.node.default_child
    assert isinstance(cfn_function, lambda_.CfnFunction)
    cfn_function.timeout = int(timeout.to_seconds())
    reads.table.grant(function, "dynamodb:GetItem")
    reads.key.grant_decrypt(function)
    executions, finding = executions_of(reads.state_machine)
    function.add_to_role_policy(iam.PolicyStatement(actions=["states:DescribeExecution"], resources=[executions]))
    role = function.role
    assert role is not None
    acknowledge(role, finding, "DescribeExecution on the state machine's executions, whose names are generated: the "
                               "caller's message id a redriven copy carries is in its execution's input.")
    return function


class CompletionWebhook(Construct):
    """The stream pipe, its enrichment function, the API destination and its connection, and the pipe's DLQ:
    `.pipe`, `.function`, `.destination`, `.connection`, `.dlq`. The pipeline's Monitoring alarms on the DLQ and on
    the pipe's failed executions (CompletionWebhookUndelivered, CompletionWebhookFailing)."""

    def __init__(self, scope: Construct, construct_id: str, *, reads: EndingReads) -> None:
        super().__init__(scope, construct_id)
        settings, table, key = reads.settings, reads.table, reads.key
        url, secret = settings.completion_webhook_url, settings.completion_webhook_secret_arn
        assert url is not None and secret is not None, "CompletionWebhook needs completion_webhook_url and _secret_arn"
        if table.table_stream_arn is None:
            raise ValueError("CompletionWebhook reads the deliveries table's stream: create the table with "
                             "StreamViewType.NEW_AND_OLD_IMAGES")
        self.connection = events.Connection(
            self, "Connection",
            description="The caller's completion webhook: an API key header, its value from the caller's secret",
            authorization=events.Authorization.api_key(settings.completion_webhook_header,
                                                       SecretValue.secrets_manager(secret)),
        )
        self.destination = events.ApiDestination(
            self, "Destination",
            description="POSTs each message's final status to the caller's URL",
            connection=self.connection,
            endpoint=url,
            http_method=events.HttpMethod.POST,
            rate_limit_per_second=settings.completion_webhook_rate_per_second,
        )
        self.function = ending_reader(
            self, "Notices", handler="fire_and_forget.healing.completion.handler", timeout=ENRICHMENT_TIMEOUT,
            description="Turns settled deliveries rows into completion notices for the webhook",
            why_no_dlq="The webhook's pipe invokes it synchronously as its enrichment: a batch that fails is retried "
                       "by the pipe, then described in the pipe's DLQ (CompletionWebhookDlq).",
            reads=reads)

        self.dlq = dead_letter_queue(self, "Dlq", key=key, settings=settings)
        self.log_group = log_group(self, "Logs", settings=settings)
        self.role = iam.Role(self, "Role", assumed_by=iam.ServicePrincipal("pipes.amazonaws.com"))
        # DescribeStream, GetRecords, GetShardIterator on the stream, kms:Decrypt with the table's key, and
        # ListStreams, which names no resource (eb-pipes-permissions.html lists the four).
        table.grant_stream_read(self.role)
        acknowledge(self.role, "AwsSolutions-IAM5[Resource::*]",
                    "dynamodb:ListStreams only, which takes no resource; the stream's own calls name its ARN.")
        # The enrichment and the target, by their ARNs only (grant_invoke would add the function's versions).
        self.role.add_to_policy(iam.PolicyStatement(actions=["lambda:InvokeFunction"],
                                                    resources=[self.function.function_arn]))
        self.role.add_to_policy(iam.PolicyStatement(actions=["events:InvokeApiDestination"],
                                                    resources=[self.destination.api_destination_arn]))
        # A producer of the encrypted DLQ: SendMessage, and the key's data key for it (sqs-key-management.html).
        self.dlq.grant(self.role, "sqs:SendMessage")
        key.grant(self.role, "kms:GenerateDataKey", "kms:Decrypt")
        self.log_group.grant_write(self.role)
        self.pipe = pipes.CfnPipe(
            self, "Pipe",
            role_arn=self.role.role_arn,
            description="Each message's final status to the caller's completion webhook",
            source=table.table_stream_arn,
            source_parameters=pipes.CfnPipe.PipeSourceParametersProperty(
                dynamo_db_stream_parameters=pipes.CfnPipe.PipeSourceDynamoDBStreamParametersProperty(
                    starting_position="TRIM_HORIZON",
                    batch_size=1,
                    maximum_retry_attempts=RETRY_ATTEMPTS,
                    maximum_record_age_in_seconds=int(STREAM_RETENTION.to_seconds()),
                    dead_letter_config=pipes.CfnPipe.DeadLetterConfigProperty(arn=self.dlq.queue_arn),
                ),
                filter_criteria=pipes.CfnPipe.FilterCriteriaProperty(
                    filters=[pipes.CfnPipe.FilterProperty(pattern=json.dumps(pattern, separators=(",", ":")))
                             for pattern in settled_filters()]),
            ),
            enrichment=self.function.function_arn,
            target=self.destination.api_destination_arn,
            target_parameters=pipes.CfnPipe.PipeTargetParametersProperty(
                http_parameters=pipes.CfnPipe.PipeTargetHttpParametersProperty(
                    header_parameters={"Content-Type": "application/json"}),
            ),
            log_configuration=pipes.CfnPipe.PipeLogConfigurationProperty(
                level="ERROR",
                cloudwatch_logs_log_destination=pipes.CfnPipe.CloudwatchLogsLogDestinationProperty(
                    log_group_arn=self.log_group.log_group_arn),
            ),
        )
        policy_resource = self.role.node.try_find_child("DefaultPolicy")
        if policy_resource is not None:
            self.pipe.node.add_dependency(policy_resource)
