"""FireAndForgetPipeline: a workflow run from SQS by an EventBridge Pipe, with the safety net of its mode around it:
FIRE_AND_FORGET (Standard workflow, recovery in and around it) or REQUEST_RESPONSE (Express, the queue recovers)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import jsii
from aws_cdk import CfnOutput, Stack
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_pipes as pipes
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct, IValidation

from fire_and_forget.construct.alert_path import AlertPath
from fire_and_forget.construct.code import RUNTIME
from fire_and_forget.construct.completion_webhook import CompletionWebhook, EndingReads
from fire_and_forget.construct.dependencies_layer import DependenciesLayer
from fire_and_forget.construct.execution_events import ExecutionEvents
from fire_and_forget.construct.failure_handling import FailureHandling
from fire_and_forget.construct.healing import HealedResources, Healing
from fire_and_forget.construct.messaging_key import MessagingKey
from fire_and_forget.construct.monitoring import Monitoring
from fire_and_forget.construct.monitoring_metrics import MonitoredResources, WorkflowMetrics
from fire_and_forget.construct.notifications import ChatNotifications
from fire_and_forget.construct.operator_policy import OperatedResources, OperatorPolicy
from fire_and_forget.construct.pipe import Pipe
from fire_and_forget.construct.request_response import (
    REQUEST_RESPONSE,
    InvocationType,
    lambda_timeout_seconds,
    visibility_timeout_seconds,
    workflow_timeout_seconds,
)
from fire_and_forget.construct.request_response_alarms import RequestResponseAlarms
from fire_and_forget.construct.settings import PipelineSettings
from fire_and_forget.construct.source_queue import SourceQueue
from fire_and_forget.construct.task_resources import encrypted_table
from fire_and_forget.construct.tickets import OpsCenterTickets
from fire_and_forget.construct.workflow import WiringError, Workflow, WorkflowStateMachine, retried_errors
from fire_and_forget.runtime.deliveries import STALE_AFTER_VARIABLE
from fire_and_forget.runtime.outputs import Output
from fire_and_forget.runtime.tail import HANDLED_FAILURE_ERROR

# The outputs ff-ops and the offline rehearsal find a pipeline by (fire_and_forget.runtime.outputs).
OUTPUT_KEYS = tuple(key.value for key in Output if key is not Output.COMPENSATION_STATES)


@dataclass(frozen=True)
class PipelineProps:
    """What the pipeline is built from: the keyword arguments of FireAndForgetPipeline, one field each, with the
    same names and defaults. Only `name`, `workflow`, `metrics` and `message_key` have no default."""

    name: str
    """The pipeline's id in the failure record, in alerts and in the names of its functions: lowercase letters,
    digits and '-'."""
    workflow: Workflow
    """The Standard workflow to run per message: its ASL file, the functions its tasks call, the task that claims
    the delivery and the compensations (Workflow)."""
    metrics: WorkflowMetrics
    """The CloudWatch namespace and service the workflow's handlers publish to, and their outcome metrics: the
    alarms and the dashboard read them."""
    message_key: str
    """The top-level field of a message body that names the work it is about ("requestId"): ff-ops selects and
    labels failed messages by it (output MessageKeyField); a message without it is still processed."""
    settings: PipelineSettings = field(default_factory=PipelineSettings)
    """Timeouts, retries, retention, alarms, healing and alert settings (PipelineSettings; the defaults are
    documented in docs/construct.md)."""
    key: kms.IKey | None = None
    """The customer-managed KMS key of the queues, the topic and the deliveries table: give the one your tables
    use, or leave it out and the pipeline makes one (`.key`)."""
    invocation_type: InvocationType = "FIRE_AND_FORGET"
    """The pipeline's mode, the one prop that chooses it (docs/construct.md, "The two modes"). FIRE_AND_FORGET: a
    Standard workflow, the message deleted once the execution started, recovery by the failure tail, the rule, the
    Reconciler and the Redriver. REQUEST_RESPONSE: an Express workflow the pipe waits for, the message deleted once
    it succeeded, recovery by the source queue (visibility timeout, maxReceiveCount, source DLQ)."""
    outputs: Mapping[str, str] = field(default_factory=dict)
    """Extra stack outputs (a table the operators or the rehearsal read), beside the pipeline's own (OUTPUT_KEYS)."""
    layer: lambda_.ILayerVersion | None = None
    """The dependencies layer (Powertools) of the pipeline's own functions, the Reconciler and the Redriver: give
    your tasks' DependenciesLayer, or leave it out and the pipeline builds one."""
    emit_outputs: bool = True
    """Whether the pipeline writes its stack outputs (fixed keys, which ff-ops finds it by): a second pipeline in
    the same stack sets False."""


class FireAndForgetPipeline(Construct):
    """SQS -> Pipe -> the workflow -> its tail. FIRE_AND_FORGET (the default): a Standard workflow, its failure tail
    and the rule for what Catch cannot see; REQUEST_RESPONSE: an Express workflow whose failures return the message
    to the source queue (`invocation_type`).

    Takes its props as keywords, as CDK constructs do; each is documented on PipelineProps. Exposes what it creates:
    `.source_queue`, `.source_dlq`, `.pipe`, `.state_machine`, `.failure_dlq`, `.alerts_topic`, `.alarms`,
    `.dashboard`, `.deliveries_table`, `.key`, `.operator_policy`, `.completion_webhook` (None unless
    `settings.completion_webhook_url`), `.tickets` (None unless `settings.ops_center_tickets`), and `.props`; in
    REQUEST_RESPONSE mode `.failure_dlq`, `.composite_alarm` and `.dashboard` are None and `.operator_policy` grants
    only the commands that mode has (`status`, `source-dlq redrive`). Its outputs have fixed keys,
    which is how ff-ops finds it: one pipeline per stack emits them.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        name: str,
        workflow: Workflow,
        metrics: WorkflowMetrics,
        message_key: str,
        settings: PipelineSettings | None = None,
        key: kms.IKey | None = None,
        invocation_type: InvocationType = "FIRE_AND_FORGET",
        outputs: Mapping[str, str] | None = None,
        layer: lambda_.ILayerVersion | None = None,
        emit_outputs: bool = True,
    ) -> None:
        props = PipelineProps(
            name=name, workflow=workflow, metrics=metrics, message_key=message_key,
            settings=settings or PipelineSettings(), key=key, invocation_type=invocation_type,
            outputs=dict(outputs or {}), layer=layer, emit_outputs=emit_outputs,
        )  # fmt: skip
        super().__init__(scope, construct_id)
        self.props = props
        stack = Stack.of(self)
        self.emits_outputs: bool = props.emit_outputs
        others = [c for c in stack.node.find_all() if isinstance(c, FireAndForgetPipeline) and c is not self
                  and c.emits_outputs]
        if others and props.emit_outputs:
            raise WiringError(f"{stack.stack_name} already holds a FireAndForgetPipeline with outputs "
                              f"({others[0].node.path}): ff-ops finds a pipeline by its stack's outputs, so a second "
                              "one in the same stack sets emit_outputs=False (or goes into a stack of its own).")
        _check_name(props.name)
        _check_message_key(props.message_key)
        settings = props.settings
        self.key: kms.IKey = props.key or MessagingKey(self, "MessagingKey", settings=settings).key
        mode = props.invocation_type
        returns = mode == REQUEST_RESPONSE
        workflow_timeout = workflow_timeout_seconds(settings, mode)
        source = SourceQueue(self, "SourceQueue", key=self.key, settings=settings,
                             visibility_timeout_seconds=visibility_timeout_seconds(settings, mode, workflow_timeout))
        failure = FailureHandling(self, "FailureHandling", key=self.key, settings=settings, failure_dlq=not returns)
        self.source_queue: sqs.Queue = source.queue
        self.source_dlq: sqs.Queue = source.dead_letter_queue
        self.failure_dlq: sqs.Queue | None = failure.failure_dlq
        self.alerts_topic: sns.Topic = failure.alerts_topic
        self.deliveries_table = self._deliveries_table(props)

        workflow = props.workflow
        machine = WorkflowStateMachine(
            self,
            "Workflow",
            workflow=workflow,
            settings=settings,
            pipeline_name=props.name,
            failure_dlq=self.failure_dlq,
            alerts_topic=self.alerts_topic,
            key=self.key,
            deliveries_table=self.deliveries_table,
            invocation_type=mode,
        )
        self.state_machine: sfn.StateMachine = machine.state_machine
        pipe = Pipe(
            self,
            "Pipe",
            settings=settings,
            description=f"Starts one {workflow.title} execution per SQS message ({mode})",
            source_queue=self.source_queue,
            source_key=self.key,
            state_machine=self.state_machine,
            workflow_type=machine.state_machine_type,
            invocation_type=mode,
        )
        self.pipe: pipes.CfnPipe = pipe.pipe
        self.alarms: dict[str, cw.Alarm] = {}
        self.composite_alarm: cw.CompositeAlarm | None = None
        self.dashboard: cw.Dashboard | None = None
        if returns:
            self.operator_policy: iam.ManagedPolicy = self._request_response_net(props, stack)
        else:
            self.operator_policy = self._fire_and_forget_net(props, stack, source, failure, machine)
        self.node.add_validation(_GeneratedNamesFit(stack, (self.state_machine,)))

    def _request_response_net(self, props: PipelineProps, stack: Stack) -> iam.ManagedPolicy:
        """REQUEST_RESPONSE: the source queue is the safety net. No status-change rule (Express workflows send no
        such events), no Reconciler and no Redriver (they read and redrive Standard executions), no failure DLQ. The
        operator policy grants what ff-ops does in this mode: status and the source DLQ's redrive."""
        settings = props.settings
        # A timed-out Express execution's claim is taken over once it cannot be running any more: the workflow's
        # TimeoutSeconds, plus the longest invocation it may have started just before (runtime/deliveries.py).
        functions = [f for f in props.workflow.functions.values() if f is not None]
        stale_after = workflow_timeout_seconds(settings, REQUEST_RESPONSE) + max(
            (lambda_timeout_seconds(f) for f in functions), default=0)
        props.workflow.functions[props.workflow.claims_delivery].add_environment(STALE_AFTER_VARIABLE, str(stale_after))
        ChatNotifications(self, "Notifications", settings=settings, topic=self.alerts_topic)
        alarms = RequestResponseAlarms(
            self, "Monitoring", settings=settings.alarms, state_machine=self.state_machine, source_dlq=self.source_dlq,
            alerts_topic=self.alerts_topic, title=props.workflow.title, max_receive_count=settings.max_receive_count,
            runbook_url=settings.runbook_url,
        )
        self.alarms = alarms.alarms
        operator_policy = OperatorPolicy(
            self, "OperatorPolicy",
            resources=OperatedResources(
                stack_name=stack.stack_name, source_queue=self.source_queue, source_dlq=self.source_dlq,
                failure_dlq=None, watched_queues=(self.source_queue, self.source_dlq),
                state_machine=self.state_machine, pipe_arn=self.pipe.attr_arn, key=self.key,
                deliveries_table=self.deliveries_table,
            ),
        ).policy
        outputs: dict[Output, str] = {
            Output.PIPELINE_NAME: props.name,
            Output.INVOCATION_TYPE: REQUEST_RESPONSE,
            Output.OPERATOR_POLICY_ARN: operator_policy.managed_policy_arn,
            Output.SOURCE_QUEUE_URL: self.source_queue.queue_url,
            Output.SOURCE_DLQ_URL: self.source_dlq.queue_url,
            Output.ALERTS_TOPIC_ARN: self.alerts_topic.topic_arn,
            Output.STATE_MACHINE_ARN: self.state_machine.state_machine_arn,
            Output.PIPE_NAME: self.pipe.ref,
            Output.PIPE_ARN: self.pipe.attr_arn,
            Output.DELIVERIES_TABLE_NAME: self.deliveries_table.table_name,
            Output.MESSAGE_KEY_FIELD: props.message_key,
        }
        self._emit(props, outputs)
        return operator_policy

    def _fire_and_forget_net(self, props: PipelineProps, stack: Stack, source: SourceQueue,
                             failure: FailureHandling, machine: WorkflowStateMachine) -> iam.ManagedPolicy:
        """FIRE_AND_FORGET: the failure tail's DLQ and topic, the status-change rule, the healing functions, the
        alarms and dashboard, the operator policy."""
        settings = props.settings
        workflow = props.workflow
        assert self.failure_dlq is not None
        execution_events = ExecutionEvents(
            self,
            "ExecutionEvents",
            settings=settings,
            key=self.key,
            state_machine=self.state_machine,
            handled_error=HANDLED_FAILURE_ERROR,
            workflow_title=workflow.title,
        )
        layer = props.layer or DependenciesLayer(self, "Dependencies", runtime=RUNTIME).layer
        self.healing = Healing(
            self,
            "Healing",
            settings=settings,
            reconciler_dlq=execution_events.reconciler_dlq,
            resources=HealedResources(
                pipeline_name=props.name,
                title=workflow.title,
                message_key=props.message_key,
                state_machine=self.state_machine,
                source_queue=self.source_queue,
                source_dlq=self.source_dlq,
                failure_dlq=self.failure_dlq,
                failure_events_queue=execution_events.failure_events_queue,
                alerts_topic=self.alerts_topic,
                deliveries_table=self.deliveries_table,
                key=self.key,
                layer=layer,
                metrics_namespace=props.metrics.namespace,
                compensations=tuple((step, state, workflow.functions[state])
                                    for step, state in workflow.ordered_undo(machine.definition)),
                transient_errors=retried_errors(machine.definition),
                task_timeouts={state: lambda_timeout_seconds(function)
                               for state, function in workflow.functions.items()},
                source_max_message_bytes=source.max_message_size_bytes,
            ),
        )
        ChatNotifications(self, "Notifications", settings=settings, topic=self.alerts_topic)
        # The stream's readers: what each message's ending is, to the caller's URL and to the people on call.
        reads = EndingReads(settings=settings, table=self.deliveries_table, key=self.key,
                            state_machine=self.state_machine, policy=self.healing.policy, layer=layer,
                            service=self.healing.service, metrics_namespace=props.metrics.namespace)
        self.completion_webhook = None if settings.completion_webhook_url is None else CompletionWebhook(
            self, "CompletionWebhook", reads=reads)
        self.tickets = None if not settings.ops_center_tickets else OpsCenterTickets(
            self, "Tickets", reads=reads, pipeline_name=props.name, title=workflow.title,
            message_key=props.message_key)
        alert_path = AlertPath(self, "AlertPath", settings=settings)
        monitoring = Monitoring(
            self,
            "Monitoring",
            settings=settings.alarms,
            alerts_topic=self.alerts_topic,
            alert_path_topic=alert_path.topic,
            runbook_url=settings.runbook_url,
            resources=MonitoredResources(
                state_machine=self.state_machine,
                source_queue=self.source_queue,
                source_dlq=self.source_dlq,
                failure_dlq=self.failure_dlq,
                failure_events_queue=execution_events.failure_events_queue,
                rule_target_dlq=execution_events.target_dlq,
                pipe_name=self.pipe.ref,
                rule=execution_events.rule,
                functions=dict(workflow.functions),
                metrics=props.metrics,
                title=workflow.title,
                undelivered_alerts=failure.undelivered_alerts,
                healing=self.healing,
                completion_webhook=self.completion_webhook,
                tickets=self.tickets,
            ),
        )
        self.alarms = monitoring.alarms
        self.composite_alarm = monitoring.composite
        self.dashboard = monitoring.dashboard
        operator_policy = OperatorPolicy(
            self,
            "OperatorPolicy",
            resources=OperatedResources(
                stack_name=stack.stack_name,
                source_queue=self.source_queue,
                source_dlq=self.source_dlq,
                failure_dlq=self.failure_dlq,
                watched_queues=(self.source_queue, self.source_dlq, self.failure_dlq,
                                execution_events.failure_events_queue, execution_events.target_dlq,
                                self.healing.reconciler_dlq, self.healing.schedule_dlq,
                                *(() if self.completion_webhook is None else (self.completion_webhook.dlq,)),
                                *(() if self.tickets is None else (self.tickets.dlq,))),
                state_machine=self.state_machine,
                pipe_arn=self.pipe.attr_arn,
                key=self.key,
                deliveries_table=self.deliveries_table,
                tickets=self.tickets is not None,
            ),
        ).policy

        outputs: dict[Output, str] = {
            Output.PIPELINE_NAME: props.name,
            Output.INVOCATION_TYPE: props.invocation_type,
            Output.SOURCE_QUEUE_URL: self.source_queue.queue_url,
            Output.SOURCE_DLQ_URL: self.source_dlq.queue_url,
            Output.FAILURE_DLQ_URL: self.failure_dlq.queue_url,
            Output.FAILURE_EVENTS_QUEUE_URL: execution_events.failure_events_queue.queue_url,
            Output.EVENT_TARGET_DLQ_URL: execution_events.target_dlq.queue_url,
            Output.ALERTS_TOPIC_ARN: self.alerts_topic.topic_arn,
            Output.ALERT_PATH_TOPIC_ARN: alert_path.topic.topic_arn,
            Output.STATE_MACHINE_ARN: self.state_machine.state_machine_arn,
            Output.PIPE_NAME: self.pipe.ref,
            Output.PIPE_ARN: self.pipe.attr_arn,
            Output.FAILURE_RULE_NAME: execution_events.rule.rule_name,
            Output.DASHBOARD_NAME: self.dashboard.dashboard_name,
            Output.OPERATOR_POLICY_ARN: operator_policy.managed_policy_arn,
            Output.DELIVERIES_TABLE_NAME: self.deliveries_table.table_name,
            Output.MESSAGE_KEY_FIELD: props.message_key,
            Output.RECONCILER_DLQ_URL: self.healing.reconciler_dlq.queue_url,
            Output.SCHEDULE_DLQ_URL: self.healing.schedule_dlq.queue_url,
            Output.RECONCILER_FUNCTION_NAME: self.healing.reconciler.function_name,
            Output.REDRIVER_FUNCTION_NAME: self.healing.redriver.function_name,
            # ff-ops classifies failure records by the same HealingPolicy the Redriver applies.
            Output.HEALING_POLICY: stack.to_json_string(self.healing.policy.to_environment()),
        }
        if workflow.compensations:  # `ff-ops trace` lists these states as the compensations an execution ran
            outputs[Output.COMPENSATION_STATES] = ",".join(workflow.compensations)
        self._emit(props, outputs)
        return operator_policy

    def _emit(self, props: PipelineProps, outputs: Mapping[Output, str]) -> None:
        clashing = sorted(set(outputs) & set(props.outputs))
        if clashing:
            raise WiringError(f"props.outputs {', '.join(clashing)} are the pipeline's own output keys: rename them")
        for output_id, value in (dict(outputs) | dict(props.outputs)).items() if props.emit_outputs else ():
            # At the stack's top level, under the fixed key: ff-ops reads outputs by key.
            CfnOutput(self, str(output_id), value=value).override_logical_id(str(output_id))

    def _deliveries_table(self, props: PipelineProps) -> dynamodb.Table:
        """Which execution owns each SQS messageId (the entry task's claim, and ClaimFailure's failure claim)."""
        # The completion webhook and the tickets read the rows' changes from the table's stream (both images: they act
        # on what a write changed).
        settings = props.settings
        streamed = settings.completion_webhook_url is not None or settings.ops_center_tickets
        stream = dynamodb.StreamViewType.NEW_AND_OLD_IMAGES if streamed else None
        table = encrypted_table(self, "DeliveriesTable", partition_key="messageId", key=self.key,
                                settings=props.settings, ttl_attribute="expiresAt", stream=stream)
        workflow = props.workflow
        claimer = workflow.functions[workflow.claims_delivery]
        table.grant_read_write_data(claimer)
        claimer.add_environment("DELIVERIES_TABLE_NAME", table.table_name)
        # As long as the idempotency records: a duplicate cannot outlive the claim.
        claimer.add_environment("DELIVERY_CLAIM_TTL_SECONDS", str(props.settings.idempotency_expiry_seconds))
        for option, wanted in (("completion_webhook_url", settings.completion_webhook_url is not None),
                               ("ops_center_tickets", settings.ops_center_tickets)):
            if wanted and props.invocation_type == REQUEST_RESPONSE:
                raise WiringError(f"{option} is for FIRE_AND_FORGET: in REQUEST_RESPONSE the pipe waits for the "
                                  "execution, and the source queue keeps the message until it succeeded")
            if wanted and not workflow.reports_progress:
                raise WiringError(f"Workflow {workflow.title!r}: {option} needs to know a success, which only the "
                                  "workflow's last step reports (reports_progress, AttemptProgress.mark(done=True)): "
                                  f"name the reporting states, or leave {option} unset")
        if workflow.reports_progress and props.invocation_type == REQUEST_RESPONSE:
            raise WiringError(f"Workflow {workflow.title!r}: reports_progress is for FIRE_AND_FORGET: in "
                              "REQUEST_RESPONSE the message stays in the source queue until its execution returns, "
                              "and that is its status")
        for state in workflow.reports_progress:
            reporter = workflow.functions[state]
            if state != workflow.claims_delivery:  # the claimer reads and writes the table already
                table.grant(reporter, "dynamodb:UpdateItem")
                self.key.grant_encrypt_decrypt(reporter)
                reporter.add_environment("DELIVERIES_TABLE_NAME", table.table_name)
        return table

    def grant_status_read(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let `grantee` (a caller's role) read its messages' status (fire_and_forget.runtime.status.read_status):
        GetItem on the deliveries table, and decrypt with the pipeline's key."""
        self.key.grant_decrypt(grantee)
        return self.deliveries_table.grant(grantee, "dynamodb:GetItem")


# CloudFormation names a state machine without a StateMachineName `<stack name>-<logical id>-<12 characters>`, and
# Step Functions takes at most 80 characters (API_StateMachineListItem: "Maximum length of 80").
MAX_STATE_MACHINE_NAME = 80
GENERATED_SUFFIX = 13


@jsii.implements(IValidation)
class _GeneratedNamesFit:
    """Refuse at synth a stack name so long that a generated state machine name would exceed 80 characters."""

    def __init__(self, stack: Stack, machines: tuple[sfn.StateMachine, ...]) -> None:
        self._stack = stack
        self._machines = machines

    def validate(self) -> list[str]:
        problems = []
        for machine in self._machines:
            logical_id = self._stack.resolve(self._stack.get_logical_id(machine.node.default_child))  # type: ignore[arg-type]
            length = len(self._stack.stack_name) + 1 + len(str(logical_id)) + GENERATED_SUFFIX
            if length > MAX_STATE_MACHINE_NAME:
                problems.append(
                    f"state machine {machine.node.path}: CloudFormation would name it {length} characters long "
                    f"(stack name + logical id), over Step Functions' {MAX_STATE_MACHINE_NAME}: use a stack name of at "
                    f"most {len(self._stack.stack_name) - (length - MAX_STATE_MACHINE_NAME)} characters"
                )
        return problems


def _check_message_key(field_name: str) -> None:
    if not (0 < len(field_name) <= 64 and field_name.replace("_", "").replace("-", "").isalnum()):
        raise WiringError(f"message_key {field_name!r}: name one top-level field of the message body, such as "
                          "'requestId' (letters, digits, '_' or '-', at most 64 characters).")


def _check_name(name: str) -> None:
    if not (0 < len(name) <= 32 and name[0].isalpha() and all(c.islower() or c.isdigit() or c == "-" for c in name)):
        raise WiringError(f"Pipeline name {name!r}: use 1 to 32 lowercase letters, digits or '-', starting with a "
                          "letter (it is written into every failure record).")
