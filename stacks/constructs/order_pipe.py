"""The EventBridge Pipe that starts one order saga execution per SQS message, fire-and-forget."""

from __future__ import annotations

from typing import Literal

from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_pipes as pipes
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from stacks.config import AppConfig
from stacks.constructs.defaults import log_group

InvocationType = Literal["FIRE_AND_FORGET", "REQUEST_RESPONSE"]


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


class OrderPipe(Construct):
    """SQS source (batch size 1, no filter) to a Step Functions target, with a least-privilege role and logs.

    There is deliberately no `filter_criteria`: a pipe deletes the SQS messages its filter does not match,
    which would lose them without a trace.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: AppConfig,
        source_queue: sqs.IQueue,
        source_key: kms.IKey,
        state_machine: sfn.IStateMachine,
        workflow_type: sfn.StateMachineType,
        invocation_type: InvocationType = "FIRE_AND_FORGET",
    ) -> None:
        super().__init__(scope, construct_id)
        check_invocation_type(workflow_type, invocation_type)
        self.log_group = log_group(self, "Logs", config=config)
        self.role = iam.Role(self, "Role", assumed_by=iam.ServicePrincipal("pipes.amazonaws.com"))
        # Exactly what the Pipes SQS poller uses: grant_consume_messages would add ChangeMessageVisibility
        # and GetQueueUrl, which the pipe never calls.
        source_queue.grant(self.role, "sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes")
        source_key.grant_decrypt(self.role)
        state_machine.grant_start_execution(self.role)
        self.log_group.grant_write(self.role)

        self.pipe = pipes.CfnPipe(
            self,
            "Pipe",
            role_arn=self.role.role_arn,
            description="Starts one order saga execution per order message (FIRE_AND_FORGET)",
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
