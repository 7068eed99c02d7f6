"""Tickets for the people on call: the function that opens an OpsCenter OpsItem for each caller message that failed
for good and resolves it when a later attempt succeeds, fed by the deliveries table's stream.

docs/design.md, "Tickets in OpsCenter", cites the pages behind each setting.
"""

from __future__ import annotations

from aws_cdk import Duration, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from constructs import Construct

from fire_and_forget.construct.completion_webhook import (
    STREAM_RETENTION,
    EndingReads,
    ending_reader,
    settled_filters,
)
from fire_and_forget.construct.compliance import acknowledge
from fire_and_forget.construct.defaults import dead_letter_queue

TICKETS_TIMEOUT = Duration.seconds(60)
BATCH_SIZE = 10
RETRY_ATTEMPTS = 100  # the record's age (the stream's 24 hours) ends them first; a poison record is bisected out


class OpsCenterTickets(Construct):
    """`.function` (with its stream event source mapping) and `.dlq` (the mapping's on-failure destination)."""

    def __init__(self, scope: Construct, construct_id: str, *, reads: EndingReads, pipeline_name: str, title: str,
                 message_key: str) -> None:
        super().__init__(scope, construct_id)
        settings, table, key = reads.settings, reads.table, reads.key
        stack = Stack.of(self)
        self.function = ending_reader(
            self, "Tickets", handler="fire_and_forget.healing.tickets.handler", timeout=TICKETS_TIMEOUT,
            description="Opens an OpsCenter OpsItem per message failed for good, resolves it when a later attempt "
                        "succeeds",
            why_no_dlq="Invoked by its DynamoDB stream event source mapping, whose on-failure destination "
                       "(TicketsDlq) keeps what it could not process; never invoked asynchronously.",
            reads=reads,
            environment={"PIPELINE_NAME": pipeline_name, "ENVIRONMENT_NAME": settings.environment_name,
                         "WORKFLOW_TITLE": title, "STACK_NAME": stack.stack_name, "RUNBOOK_URL": settings.runbook_url,
                         "MESSAGE_KEY_FIELD": message_key})
        # Notes the ticket on the caller's row (the table is under the key).
        table.grant(self.function, "dynamodb:UpdateItem")
        key.grant(self.function, "kms:GenerateDataKey")
        # CreateOpsItem names no resource type; UpdateOpsItem acts on an OpsItem of this account and region
        # (list_awssystemsmanager.html). No tags are passed, so no ssm:AddTagsToResource.
        self.function.add_to_role_policy(iam.PolicyStatement(actions=["ssm:CreateOpsItem"], resources=["*"]))
        ops_items = stack.format_arn(service="ssm", resource="opsitem", resource_name="*")
        self.function.add_to_role_policy(iam.PolicyStatement(actions=["ssm:UpdateOpsItem"], resources=[ops_items]))
        role = self.function.role
        assert role is not None
        acknowledge(role, "AwsSolutions-IAM5[Resource::*]",
                    "xray:PutTraceSegments, xray:PutTelemetryRecords, ssm:CreateOpsItem and dynamodb:ListStreams, "
                    "which support no resource-level scoping.")
        acknowledge(role, "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:ssm:<AWS::Region>:<AWS::AccountId>:"
                          "opsitem/*]",
                    "UpdateOpsItem on the OpsItems it opened, whose ids OpsCenter generates.")
        self.dlq = dead_letter_queue(self, "Dlq", key=key, settings=settings)
        self.function.add_event_source(sources.DynamoEventSource(
            table,
            starting_position=lambda_.StartingPosition.TRIM_HORIZON,
            batch_size=BATCH_SIZE,
            bisect_batch_on_error=True,
            retry_attempts=RETRY_ATTEMPTS,
            max_record_age=STREAM_RETENTION,
            report_batch_item_failures=True,
            on_failure=sources.SqsDlq(self.dlq),
            filters=[lambda_.FilterCriteria.filter(pattern) for pattern in settled_filters()],
        ))
