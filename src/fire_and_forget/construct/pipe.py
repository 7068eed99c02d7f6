"""The EventBridge Pipe that starts one workflow execution per SQS message: FIRE_AND_FORGET (Standard) or
REQUEST_RESPONSE (Express, the pipe waits for the result)."""

from __future__ import annotations

import jsii
from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_pipes as pipes
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct, IValidation

from fire_and_forget.construct.defaults import log_group
from fire_and_forget.construct.request_response import REQUEST_RESPONSE, InvocationType
from fire_and_forget.construct.settings import PipelineSettings

__all__ = ["InvalidPipeTarget", "InvocationType", "Pipe", "check_invocation_type"]


class InvalidPipeTarget(ValueError):
    """The pipe's invocation type cannot start this kind of state machine."""


def check_invocation_type(workflow_type: sfn.StateMachineType, invocation_type: InvocationType) -> None:
    """Refuse at synth time what AWS would refuse only at deploy time."""
    if workflow_type == sfn.StateMachineType.STANDARD and invocation_type == "REQUEST_RESPONSE":
        raise InvalidPipeTarget(
            "A pipe can start a STANDARD state machine only with invocation type FIRE_AND_FORGET: "
            "REQUEST_RESPONSE waits for the result, which only EXPRESS workflows (at most 5 minutes) return "
            "synchronously, and AWS rejects the pipe at deploy time. Use FIRE_AND_FORGET and handle failures "
            "inside the workflow, or switch to an EXPRESS workflow."
        )
    if workflow_type == sfn.StateMachineType.EXPRESS and invocation_type != REQUEST_RESPONSE:
        raise InvalidPipeTarget(
            "This pipeline starts an EXPRESS state machine only with invocation type REQUEST_RESPONSE. AWS accepts "
            "FIRE_AND_FORGET for Express (an asynchronous Express execution), but such an execution runs at least "
            "once, keeps no history but its logs, sends no status-change events and cannot be redriven: nothing of "
            "the FIRE_AND_FORGET safety net could see its failures. Use REQUEST_RESPONSE, so that the source queue "
            "keeps the message until the execution succeeded, or a STANDARD workflow with FIRE_AND_FORGET."
        )


class Pipe(Construct):
    """SQS source (batch size 1, no filter) to a Step Functions target, with a least-privilege role and logs.

    FIRE_AND_FORGET starts a STANDARD workflow (StartExecution) and the message is deleted once it started;
    REQUEST_RESPONSE runs an EXPRESS workflow (StartSyncExecution) and the message is deleted once it succeeded.

    There is deliberately no `filter_criteria`: a pipe deletes the SQS messages its filter does not match,
    which would lose them without a trace. A validation refuses one added later (an escape hatch, an Aspect).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: PipelineSettings,
        source_queue: sqs.IQueue,
        source_key: kms.IKey,
        state_machine: sfn.IStateMachine,
        workflow_type: sfn.StateMachineType,
        description: str,
        invocation_type: InvocationType = "FIRE_AND_FORGET",
    ) -> None:
        super().__init__(scope, construct_id)
        check_invocation_type(workflow_type, invocation_type)
        self.log_group = log_group(self, "Logs", settings=settings)
        self.role = iam.Role(self, "Role", assumed_by=iam.ServicePrincipal("pipes.amazonaws.com"))
        # Exactly what the Pipes SQS poller uses: grant_consume_messages would add ChangeMessageVisibility
        # and GetQueueUrl, which the pipe never calls.
        source_queue.grant(self.role, "sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes")
        source_key.grant_decrypt(self.role)
        # StartExecution for FIRE_AND_FORGET, StartSyncExecution for REQUEST_RESPONSE
        # (PipeTargetStateMachineParameters).
        if invocation_type == REQUEST_RESPONSE:
            state_machine.grant_start_sync_execution(self.role)
        else:
            state_machine.grant_start_execution(self.role)
        self.log_group.grant_write(self.role)

        self.pipe = pipes.CfnPipe(
            self,
            "Pipe",
            role_arn=self.role.role_arn,
            description=description,
            source=source_queue.queue_arn,
            source_parameters=pipes.CfnPipe.PipeSourceParametersProperty(
                sqs_queue_parameters=pipes.CfnPipe.PipeSourceSqsQueueParametersProperty(batch_size=1),
            ),
            target=state_machine.state_machine_arn,
            target_parameters=pipes.CfnPipe.PipeTargetParametersProperty(
                step_function_state_machine_parameters=pipes.CfnPipe.PipeTargetStateMachineParametersProperty(
                    invocation_type=invocation_type,
                ),
            ),
            log_configuration=pipes.CfnPipe.PipeLogConfigurationProperty(
                level="ERROR",
                cloudwatch_logs_log_destination=pipes.CfnPipe.CloudwatchLogsLogDestinationProperty(
                    log_group_arn=self.log_group.log_group_arn,
                ),
            ),
        )
        # The role's policy must exist before the pipe starts polling, or its first receives fail.
        policy = self.role.node.try_find_child("DefaultPolicy")
        if policy is not None:
            self.pipe.node.add_dependency(policy)
        self.node.add_validation(_NoFilter(self.pipe))


@jsii.implements(IValidation)
class _NoFilter:
    """At synth: a body filter would make the pipe delete every message it does not match.

    It reads the L1's SourceParameters (a raw `add_property_override` is not visible to a construct; the template
    test tests/infra/test_pipe.py checks every synthesized pipe for FilterCriteria as well)."""

    def __init__(self, pipe: pipes.CfnPipe) -> None:
        self._pipe = pipe

    def validate(self) -> list[str]:
        source = self._pipe.source_parameters
        resolved = Stack.of(self._pipe).resolve(source) if source is not None else {}
        if _has_filter(resolved):
            return ["The pipe has FilterCriteria: EventBridge Pipes deletes every SQS message a filter does not "
                    "match, so those messages would be lost without a trace. Remove the filter and let the workflow "
                    "decide (a Choice state that ends quietly), or filter before the message is sent."]
        return []


def _has_filter(value: object) -> bool:
    if isinstance(value, dict):
        return any(key in ("FilterCriteria", "filterCriteria") or _has_filter(inner) for key, inner in value.items())
    return False
