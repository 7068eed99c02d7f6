"""Self-healing: the Reconciler (failure-events queue + a scheduled sweep) and the Redriver (a scheduled automatic
redrive of transient failures), with their DLQs. docs/design.md, "Self-healing resources: what AWS enforces", says
why this shape, and "The healing functions (`fire_and_forget.healing`)" what the two functions do."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aws_cdk import ArnFormat, Duration, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_destinations as destinations
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_scheduler_targets as scheduler_targets
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct, IConstruct

from fire_and_forget.construct.code import healing_code
from fire_and_forget.construct.compliance import acknowledge
from fire_and_forget.construct.defaults import SQS_MAX_MESSAGE_BYTES, dead_letter_queue, encrypted_queue
from fire_and_forget.construct.settings import FAILURE_EVENTS_RETENTION_DAYS, PipelineSettings
from fire_and_forget.construct.task_resources import task_function
from fire_and_forget.runtime.healing_policy import HealingPolicy

# The reconciler reads a history, runs compensations (with in-run retries) and writes three services: more than a
# task's budget. Lambda wants the queue's visibility timeout at least the function's timeout (CreateEventSourceMapping
# refuses less); with-sqs.html recommends six times it, which is what the failure-events queue gets.
RECONCILER_TIMEOUT = Duration.seconds(120)
REDRIVER_TIMEOUT = Duration.seconds(120)
VISIBILITY_FACTOR = 6
HEALING_SERVICE_SUFFIX = "-healing"
SCHEDULE_RETRY_ATTEMPTS = 3
ASYNC_RETRY_ATTEMPTS = 2  # Lambda's own retries of a failed asynchronous run (its default, stated)
SCHEDULE_MAX_EVENT_AGE = Duration.minutes(10)  # a tick older than that is superseded by the next one


@dataclass(frozen=True)
class HealedResources:
    """What the healing acts on (the pipeline's own resources and the workflow's compensations)."""

    pipeline_name: str
    title: str
    message_key: str
    state_machine: sfn.StateMachine
    source_queue: sqs.IQueue
    source_dlq: sqs.IQueue
    failure_dlq: sqs.IQueue
    failure_events_queue: sqs.IQueue
    alerts_topic: sns.ITopic
    deliveries_table: dynamodb.ITable
    key: kms.IKey
    layer: lambda_.ILayerVersion
    metrics_namespace: str
    # (step, compensation state, its function) in the order of the steps
    compensations: tuple[tuple[str, str, lambda_.IFunction], ...]
    # each task state -> the error names its Retry retries: what "transient by class" means for this workflow
    transient_errors: Mapping[str, frozenset[str]]
    # each Lambda task state -> its function's timeout in seconds: how long an invocation it started may still run
    # after its execution stopped (the Reconciler compensates a timed-out or aborted execution only after that)
    task_timeouts: Mapping[str, int]
    # the source queue's MaximumMessageSize: a message the redrive cannot resend within it waits for a person
    source_max_message_bytes: int


def failure_events_queue(scope: Construct, *, key: kms.IKey, settings: PipelineSettings) -> tuple[sqs.Queue, sqs.Queue]:
    """The failure-events queue the Reconciler consumes, and its ReconcilerDlq for events it could not finish."""
    reconciler_dlq = dead_letter_queue(scope, "ReconcilerDlq", key=key, settings=settings)
    # Holds events not reconciled yet: kept on update and delete like every queue (encrypted_queue's removal policy),
    # as large as a dead-letter queue. Its retention is shorter than the ReconcilerDlq's, which an event reaches with
    # its original enqueue time: why 4 days, docs/design.md, "Self-healing resources: what AWS enforces".
    queue = encrypted_queue(
        scope,
        "FailureEventsQueue",
        key=key,
        settings=settings,
        max_message_size_bytes=SQS_MAX_MESSAGE_BYTES,
        retention_period=Duration.days(FAILURE_EVENTS_RETENTION_DAYS),
        visibility_timeout=Duration.seconds(RECONCILER_TIMEOUT.to_seconds() * VISIBILITY_FACTOR),
        dead_letter_queue=sqs.DeadLetterQueue(queue=reconciler_dlq, max_receive_count=settings.max_receive_count),
    )
    return queue, reconciler_dlq


class Healing(Construct):
    """`.reconciler`, `.redriver` (functions), `.reconciler_dlq`, `.schedule_dlq`, `.sweep`, `.redrive_schedule`,
    `.policy` (the HealingPolicy both functions and the failure tail apply), `.service` (the metrics' dimension)."""

    def __init__(self, scope: Construct, construct_id: str, *, resources: HealedResources,
                 settings: PipelineSettings, reconciler_dlq: sqs.IQueue) -> None:
        super().__init__(scope, construct_id)
        r = resources
        healing = settings.healing
        self.policy = HealingPolicy(
            transient_errors=r.transient_errors,
            max_attempts=healing.max_attempts,
            cool_off_seconds=healing.cool_off_minutes * 60,
            max_cool_off_seconds=healing.max_cool_off_minutes * 60,
            max_message_bytes=r.source_max_message_bytes,
            source_return_per_second=healing.source_return_per_second,
        )
        self.service = f"{r.pipeline_name}{HEALING_SERVICE_SUFFIX}"
        self.redrive_every_minutes = healing.redrive_every_minutes
        self.reconciler_dlq = reconciler_dlq
        self.schedule_dlq = dead_letter_queue(self, "ScheduleDlq", key=r.key, settings=settings)
        code = healing_code()
        common = {
            "POWERTOOLS_SERVICE_NAME": self.service,
            "POWERTOOLS_METRICS_NAMESPACE": r.metrics_namespace,
            **self.policy.to_environment(),
        }
        self.reconciler = self._function(
            "Reconciler", "fire_and_forget.healing.reconciler.handler", code, r, settings, RECONCILER_TIMEOUT,
            "Reconciles executions that ended TIMED_OUT, ABORTED or FAILED outside the failure tail",
            {
                **common,
                "PIPELINE_NAME": r.pipeline_name,
                "ENVIRONMENT_NAME": settings.environment_name,
                "WORKFLOW_TITLE": r.title,
                "STATE_MACHINE_ARN": r.state_machine.state_machine_arn,
                "FAILURE_DLQ_URL": r.failure_dlq.queue_url,
                "ALERTS_TOPIC_ARN": r.alerts_topic.topic_arn,
                "DELIVERIES_TABLE_NAME": r.deliveries_table.table_name,
                "DELIVERY_CLAIM_TTL_SECONDS": str(settings.idempotency_expiry_seconds),
                "COMPENSATIONS": Stack.of(self).to_json_string(
                    [[step, state, function.function_arn] for step, state, function in r.compensations]),
                "TASK_TIMEOUTS": json.dumps(dict(sorted(r.task_timeouts.items())), separators=(",", ":")),
                "SWEEP_LOOKBACK_MINUTES": str(healing.sweep_lookback_minutes),
                "EXECUTION_TIMEOUT_SECONDS": str(settings.execution_timeout_minutes * 60),
            },
        )
        self._grant_reconciler(r)
        self.reconciler.add_event_source(sources.SqsEventSource(
            r.failure_events_queue, batch_size=10, report_batch_item_failures=True))
        self.redriver = self._function(
            "Redriver", "fire_and_forget.healing.redriver.handler", code, r, settings, REDRIVER_TIMEOUT,
            "Sends transient failures back to the source queue once their cool-off has passed, and what the pipe "
            "could not hand over back from the source DLQ",
            {
                **common,
                "FAILURE_DLQ_URL": r.failure_dlq.queue_url,
                "SOURCE_QUEUE_URL": r.source_queue.queue_url,
                "SOURCE_DLQ_URL": r.source_dlq.queue_url,
                "MESSAGE_KEY_FIELD": r.message_key,
                "REDRIVE_PERIOD_SECONDS": str(healing.redrive_every_minutes * 60),
                # It announces what it cannot resend, once (fire_and_forget/healing/announcements.py: a marker row).
                "PIPELINE_NAME": r.pipeline_name,
                "ENVIRONMENT_NAME": settings.environment_name,
                "WORKFLOW_TITLE": r.title,
                "ALERTS_TOPIC_ARN": r.alerts_topic.topic_arn,
                "DELIVERIES_TABLE_NAME": r.deliveries_table.table_name,
                "DELIVERY_CLAIM_TTL_SECONDS": str(settings.idempotency_expiry_seconds),
            },
        )
        r.failure_dlq.grant_consume_messages(self.redriver)
        if self.policy.returns_source_dlq:  # fire_and_forget.healing.source_return
            r.source_dlq.grant_consume_messages(self.redriver)
        r.source_queue.grant_send_messages(self.redriver)
        # The marker row's conditional update, and the announcement; the table and the topic are under the key.
        r.deliveries_table.grant(self.redriver, "dynamodb:UpdateItem")
        r.alerts_topic.grant_publish(self.redriver)
        r.key.grant(self.redriver, "kms:Decrypt", "kms:GenerateDataKey")
        self.sweep = self._schedule(
            "Sweep", self.reconciler, healing.sweep_every_minutes,
            {"sweep": {"time": scheduler.ContextAttribute.scheduled_time}},
            f"Reconciles {r.title} executions whose status-change event was missed", r.key)
        self.redrive_schedule = self._schedule(
            "Redrive", self.redriver, healing.redrive_every_minutes,
            {"time": scheduler.ContextAttribute.scheduled_time},
            f"Redrives {r.title} transient failures whose cool-off has passed", r.key)

    def _function(self, name: str, handler: str, code: lambda_.Code, r: HealedResources, settings: PipelineSettings,
                  timeout: Duration, description: str, environment: dict[str, str]) -> lambda_.Function:
        function = task_function(self, name, handler=handler, code=code, layer=r.layer, settings=settings,
                                 environment=environment, description=description)
        cfn = function.node.default_child
        assert isinstance(cfn, lambda_.CfnFunction)
        cfn.timeout = int(timeout.to_seconds())
        # Scheduler invokes asynchronously (with-eventbridge-scheduler.html): its RetryPolicy and DLQ cover only an
        # Invoke Lambda refuses; a run that fails is retried by Lambda, then goes to this on-failure destination.
        function.configure_async_invoke(on_failure=destinations.SqsDestination(self.schedule_dlq),
                                        retry_attempts=ASYNC_RETRY_ATTEMPTS)
        acknowledge(
            function, "Serverless-LambdaDLQ",
            "Invoked by an SQS event source mapping (failures stay in the queue, then its DLQ) or by EventBridge "
            "Scheduler (its target DLQ ScheduleDlq): never asynchronously by a caller that would need a Lambda DLQ.",
        )
        return function

    def _grant_reconciler(self, r: HealedResources) -> None:
        executions, finding = executions_of(r.state_machine)
        self.reconciler.add_to_role_policy(iam.PolicyStatement(
            actions=["states:DescribeExecution", "states:GetExecutionHistory"], resources=[executions]))
        self.reconciler.add_to_role_policy(iam.PolicyStatement(
            actions=["states:ListExecutions"], resources=[r.state_machine.state_machine_arn]))
        # BatchGetItem: the sweep reads which executions it already settled before describing any.
        r.deliveries_table.grant(self.reconciler, "dynamodb:GetItem", "dynamodb:UpdateItem", "dynamodb:BatchGetItem")
        r.key.grant(self.reconciler, "kms:Decrypt", "kms:GenerateDataKey")  # the table, the DLQ and the topic
        r.failure_dlq.grant_send_messages(self.reconciler)
        r.alerts_topic.grant_publish(self.reconciler)
        if r.compensations:
            # Exactly the compensation functions: grant_invoke would add every version and alias (`arn:*`).
            self.reconciler.add_to_role_policy(iam.PolicyStatement(
                actions=["lambda:InvokeFunction"],
                resources=[fn.function_arn for _step, _state, fn in r.compensations]))
        assert self.reconciler.role is not None
        acknowledge(
            self.reconciler.role, finding,
            "The executions of this one state machine: their names are generated per message, so no narrower ARN "
            "exists for DescribeExecution and GetExecutionHistory.",
        )
        acknowledge(
            self.reconciler, "Serverless-LambdaEventSourceMappingDestination",
            "An SQS event source keeps failed records in the queue; its RedrivePolicy moves them to the "
            "ReconcilerDlq after maxReceiveCount receives (alarm ReconcilerDlqNotEmpty). Lambda's on-failure "
            "destinations are for stream and Kafka sources.",
        )

    def _schedule(self, name: str, function: lambda_.IFunction, minutes: int, payload: dict[str, object],
                  description: str, key: kms.IKey) -> scheduler.Schedule:
        role = iam.Role(self, f"{name}Role", assumed_by=iam.ServicePrincipal(
            "scheduler.amazonaws.com", conditions={"StringEquals": {"aws:SourceAccount": Stack.of(self).account}}))
        # Scheduler sends the dead-letter event with this role (configuring-schedule-dlq.html) and the ScheduleDlq is
        # SSE-KMS: a producer needs GenerateDataKey and Decrypt on the key (SQS sqs-key-management.html).
        key.grant(role, "kms:GenerateDataKey", "kms:Decrypt")
        return scheduler.Schedule(
            self,
            name,
            description=description,
            schedule=scheduler.ScheduleExpression.expression(rate_expression(minutes)),
            target=InvokeUnqualified(
                function,
                input=scheduler.ScheduleTargetInput.from_text(json.dumps(payload)),
                retry_attempts=SCHEDULE_RETRY_ATTEMPTS,
                max_event_age=SCHEDULE_MAX_EVENT_AGE,
                dead_letter_queue=self.schedule_dlq,
                role=role,
            ),
        )


class InvokeUnqualified(scheduler_targets.LambdaInvoke):
    """A schedule's Lambda target whose role may invoke the function's unqualified ARN and nothing else.

    The schedule invokes the unqualified function. LambdaInvoke's own grant, `grant_invoke`, adds `<function ARN>:*`
    beside it: every version and alias of the function, each a resource of its own
    (https://docs.aws.amazon.com/lambda/latest/dg/lambda-api-permissions-ref.html).
    """

    def __init__(self, function: lambda_.IFunction, **props: Any) -> None:
        super().__init__(function, **props)
        self.unqualified_arn = function.function_arn

    def _add_target_action_to_role(self, role: iam.IRole) -> None:
        role.add_to_principal_policy(
            iam.PolicyStatement(actions=["lambda:InvokeFunction"], resources=[self.unqualified_arn]))


def rate_expression(minutes: int) -> str:
    """`rate(N minutes)`, singular for 1 (schedule-types.html: Scheduler refuses `rate(1 minutes)`)."""
    return f"rate({minutes} {'minute' if minutes == 1 else 'minutes'})"


def executions_of(state_machine: sfn.StateMachine) -> tuple[str, str]:
    """The ARN of every execution of `state_machine` (arn:...:execution:<state machine name>:*), and the cdk-nag
    AwsSolutions-IAM5 finding a statement on it raises (execution names are generated: nothing narrower exists)."""
    stack = Stack.of(state_machine)
    machine_name = stack.split_arn(state_machine.state_machine_arn, ArnFormat.COLON_RESOURCE_NAME).resource_name
    executions = stack.format_arn(service="states", resource="execution", resource_name=f"{machine_name}:*",
                                  arn_format=ArnFormat.COLON_RESOURCE_NAME)
    finding = ("AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:states:<AWS::Region>:"
               '<AWS::AccountId>:execution:{"Fn::Select":[6,{"Fn::Split":[":",{"Ref":"'
               f'{_logical_ref(state_machine)}"}}]}}]}}:*]')
    return executions, finding


def _logical_ref(resource: IConstruct) -> str:
    """The resource's logical id as cdk-nag writes it in a finding (`<LogicalId.Arn>`)."""
    stack = Stack.of(resource)
    return str(stack.resolve(stack.get_logical_id(resource.node.default_child)))  # type: ignore[arg-type]
