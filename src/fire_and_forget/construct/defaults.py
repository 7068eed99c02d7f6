"""Defaults shared by every construct: encrypted TLS-only queues, log groups with retention, removal policy."""

from __future__ import annotations

from typing import Any

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from fire_and_forget.construct.compliance import acknowledge
from fire_and_forget.construct.settings import PipelineSettings


def removal_policy(settings: PipelineSettings) -> RemovalPolicy:
    """`retain` keeps data and failed messages when a stack is updated or deleted by mistake; `destroy` suits
    throwaway stacks.

    `retain` is RETAIN_ON_UPDATE_OR_DELETE (CloudFormation's RetainExceptOnCreate): a stack whose *creation* rolls
    back holds no data yet, and plain Retain would orphan its key, tables, queues and log groups on every failed
    first deploy.
    """
    return RemovalPolicy.DESTROY if settings.removal_policy == "destroy" else RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE


def encrypted_queue(
    scope: Construct, construct_id: str, *, key: kms.IKey, settings: PipelineSettings, **props: Any
) -> sqs.Queue:
    """An SQS queue encrypted with the customer-managed key, refusing plain-HTTP requests."""
    return sqs.Queue(
        scope,
        construct_id,
        encryption=sqs.QueueEncryption.KMS,
        encryption_master_key=key,
        # Reuse a data key for 5 minutes: fewer KMS calls, the AWS default.
        data_key_reuse=Duration.minutes(5),
        enforce_ssl=True,
        removal_policy=removal_policy(settings),
        **props,
    )


# https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SendMessage.html (MessageBody: 1 MiB)
SQS_MAX_MESSAGE_BYTES = 1_048_576


def dead_letter_queue(scope: Construct, construct_id: str, *, key: kms.IKey, settings: PipelineSettings) -> sqs.Queue:
    """A terminal queue that keeps what failed for the longest time SQS allows, for inspection and redrive."""
    queue = encrypted_queue(
        scope, construct_id, key=key, settings=settings, retention_period=Duration.days(settings.dlq_retention_days),
        # SQS's maximum: whatever Step Functions, EventBridge or SNS can hand a DLQ (each capped at 256 KiB per
        # payload, plus the metadata they add) fits, so a failure is never lost to its own size.
        max_message_size_bytes=SQS_MAX_MESSAGE_BYTES,
    )
    reason = "Terminal queue: operators inspect and redrive it with ff-ops; a further DLQ would only hide messages."
    acknowledge(queue, "AwsSolutions-SQS3", reason)
    acknowledge(queue, "Serverless-SQSRedrivePolicy", reason)
    return queue


def delivering_key(scope: Construct, construct_id: str, *, description: str, sid: str, services: tuple[str, ...],
                   settings: PipelineSettings) -> kms.Key:
    """A rotating customer-managed key that AWS services may use to deliver on behalf of this account's resources.

    An encrypted topic or queue that EventBridge or CloudWatch alarms deliver to needs a customer-managed key whose
    policy lets the service use it; with the AWS-managed key the deliveries are dropped (docs/design.md, "Encryption
    and the key policy"). The
    statement requires aws:SourceAccount, as SNS's key management page asks for the services it lists (CloudWatch
    among them); for EventBridge that page says the key is not supported, so it has its own statement (MessagingKey).
    """
    key = kms.Key(scope, construct_id, description=description, enable_key_rotation=True,
                  removal_policy=removal_policy(settings))
    key.add_to_resource_policy(
        iam.PolicyStatement(
            sid=sid,
            principals=[iam.ServicePrincipal(service) for service in services],
            actions=["kms:Decrypt", "kms:GenerateDataKey*"],
            resources=["*"],  # in a key policy "*" means this key
            conditions={"StringEquals": {"aws:SourceAccount": Stack.of(scope).account}},
        )
    )
    return key


def log_group(
    scope: Construct, construct_id: str, *, settings: PipelineSettings, name: str | None = None
) -> logs.LogGroup:
    """A log group with the configured retention, so logs never pile up unbounded."""
    return logs.LogGroup(
        scope,
        construct_id,
        log_group_name=name,
        retention=log_retention(settings),
        removal_policy=removal_policy(settings),
    )


VENDED_STATES_LOGS = "/aws/vendedlogs/states/"


def state_machine_log_group(scope: Construct, construct_id: str, *, settings: PipelineSettings) -> logs.LogGroup:
    """A state machine's log group, named under /aws/vendedlogs/states/ as Step Functions asks.

    Step Functions delivers logs as a vended log source: CloudWatch Logs then grants it through one resource policy
    per account, whose 5,120-character limit fills up with other log group names; the prefix is covered by one
    statement (https://docs.aws.amazon.com/step-functions/latest/dg/cw-logs.html). The name is derived from the
    stack name and the construct path, so two stacks in one account and region never collide.
    """
    stack = Stack.of(scope)
    path_in_stack = scope.node.path.removeprefix(stack.node.path).strip("/").replace("/", "-")
    return log_group(
        scope, construct_id, settings=settings, name=f"{VENDED_STATES_LOGS}{stack.stack_name}-{path_in_stack}"
    )


_RETENTION = {
    1: logs.RetentionDays.ONE_DAY, 3: logs.RetentionDays.THREE_DAYS, 5: logs.RetentionDays.FIVE_DAYS,
    7: logs.RetentionDays.ONE_WEEK, 14: logs.RetentionDays.TWO_WEEKS, 30: logs.RetentionDays.ONE_MONTH,
    60: logs.RetentionDays.TWO_MONTHS, 90: logs.RetentionDays.THREE_MONTHS, 120: logs.RetentionDays.FOUR_MONTHS,
    150: logs.RetentionDays.FIVE_MONTHS, 180: logs.RetentionDays.SIX_MONTHS, 365: logs.RetentionDays.ONE_YEAR,
    400: logs.RetentionDays.THIRTEEN_MONTHS, 545: logs.RetentionDays.EIGHTEEN_MONTHS,
    731: logs.RetentionDays.TWO_YEARS, 1096: logs.RetentionDays.THREE_YEARS, 1827: logs.RetentionDays.FIVE_YEARS,
    2192: logs.RetentionDays.SIX_YEARS, 2557: logs.RetentionDays.SEVEN_YEARS, 2922: logs.RetentionDays.EIGHT_YEARS,
    3288: logs.RetentionDays.NINE_YEARS, 3653: logs.RetentionDays.TEN_YEARS,
}


def log_retention(settings: PipelineSettings) -> logs.RetentionDays:
    """The configured retention as CDK's enum (the settings validator already allows only these values)."""
    return _RETENTION[settings.log_retention_days]
