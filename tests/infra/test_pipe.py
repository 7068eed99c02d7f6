"""The pipe: SQS batch of one, FIRE_AND_FORGET into the saga, no filter, least-privilege role, logs."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_stepfunctions as sfn

from fire_and_forget.construct.pipe import InvalidPipeTarget, Pipe, check_invocation_type
from stacks.config import AppConfig
from tests.support.template import actions, one, ref_or_att, statements


@pytest.fixture(scope="module")
def pipe(template: dict[str, Any]) -> dict[str, Any]:
    props: dict[str, Any] = one(template, "AWS::Pipes::Pipe", "PipelinePipe")[1]["Properties"]
    return props


def test_pipe_reads_the_source_queue_one_message_per_execution(template: dict[str, Any], pipe: dict[str, Any]) -> None:
    source_id, _ = one(template, "AWS::SQS::Queue", "PipelineSourceQueue4")
    assert ref_or_att(pipe["Source"]) == source_id
    assert pipe["SourceParameters"] == {"SqsQueueParameters": {"BatchSize": 1}}


def test_pipe_starts_the_standard_saga_fire_and_forget(template: dict[str, Any], pipe: dict[str, Any]) -> None:
    machine_id, machine = one(template, "AWS::StepFunctions::StateMachine", "PipelineWorkflow")
    assert ref_or_att(pipe["Target"]) == machine_id
    assert machine["Properties"]["StateMachineType"] == "STANDARD"
    assert pipe["TargetParameters"] == {"StepFunctionStateMachineParameters": {"InvocationType": "FIRE_AND_FORGET"}}


def test_pipe_has_no_filter_that_could_delete_messages(pipe: dict[str, Any]) -> None:
    assert "FilterCriteria" not in pipe.get("SourceParameters", {})
    assert "Enrichment" not in pipe


def test_pipe_logs_to_a_log_group_with_retention(template: dict[str, Any], pipe: dict[str, Any]) -> None:
    log_group_id = ref_or_att(pipe["LogConfiguration"]["CloudwatchLogsLogDestination"]["LogGroupArn"])
    assert log_group_id is not None
    assert template["Resources"][log_group_id]["Properties"]["RetentionInDays"] == 30
    assert pipe["LogConfiguration"]["Level"] == "ERROR"


def test_pipe_role_is_least_privilege(template: dict[str, Any], pipe: dict[str, Any]) -> None:
    role_id = ref_or_att(pipe["RoleArn"])
    assert role_id is not None
    granted = {(frozenset(actions(s)), ref_or_att(s["Resource"])) for s in statements(template, role_id)}
    source_id, _ = one(template, "AWS::SQS::Queue", "PipelineSourceQueue4")
    key_id, _ = one(template, "AWS::KMS::Key", "MessagingKey")
    machine_id, _ = one(template, "AWS::StepFunctions::StateMachine", "PipelineWorkflow")
    log_group_id = ref_or_att(pipe["LogConfiguration"]["CloudwatchLogsLogDestination"]["LogGroupArn"])
    assert granted == {
        (frozenset({"sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes"}), source_id),
        (frozenset({"kms:Decrypt"}), key_id),
        (frozenset({"states:StartExecution"}), machine_id),
        (frozenset({"logs:CreateLogStream", "logs:PutLogEvents"}), log_group_id),
    }
    role = template["Resources"][role_id]["Properties"]
    assert role["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {"Service": "pipes.amazonaws.com"}
    assert "ManagedPolicyArns" not in role


def test_pipe_waits_for_its_role_policy(template: dict[str, Any]) -> None:
    pipe_id, pipe_resource = one(template, "AWS::Pipes::Pipe", "PipelinePipe")
    policy_id, _ = one(template, "AWS::IAM::Policy", "PipelinePipeRoleDefaultPolicy")
    assert policy_id in pipe_resource["DependsOn"], pipe_id


def test_standard_workflow_with_request_response_is_refused_with_the_reason() -> None:
    with pytest.raises(InvalidPipeTarget, match="only with invocation type FIRE_AND_FORGET"):
        check_invocation_type(sfn.StateMachineType.STANDARD, "REQUEST_RESPONSE")


def test_express_workflow_may_use_request_response() -> None:
    check_invocation_type(sfn.StateMachineType.EXPRESS, "REQUEST_RESPONSE")
    check_invocation_type(sfn.StateMachineType.STANDARD, "FIRE_AND_FORGET")


def test_the_construct_refuses_the_combination_at_synth_time() -> None:
    stack = cdk.Stack(cdk.App())
    from aws_cdk import aws_kms as kms
    from aws_cdk import aws_sqs as sqs

    key = kms.Key(stack, "Key")
    queue = sqs.Queue(stack, "Queue")
    body = sfn.DefinitionBody.from_chainable(sfn.Pass(stack, "P"))
    machine = sfn.StateMachine(stack, "Machine", definition_body=body)
    with pytest.raises(InvalidPipeTarget):
        Pipe(
            stack,
            "Pipe",
            settings=AppConfig(),
            source_queue=queue,
            source_key=key,
            state_machine=machine,
            workflow_type=sfn.StateMachineType.STANDARD,
            description="a pipe",
            invocation_type="REQUEST_RESPONSE",
        )
    assert stack.node.try_find_child("Pipe") is None or not any(
        isinstance(child, cdk.CfnResource) and child.cfn_resource_type == "AWS::Pipes::Pipe"
        for child in stack.node.find_all()
    )
