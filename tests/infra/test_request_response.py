"""REQUEST_RESPONSE mode: an Express workflow the pipe waits for, with the source queue as its safety net.

The template tests read the test-only app (tests/infra/request_response_app.py, synthesized once, compliance packs
on); the refusals are checked on the functions and on the smallest pipeline (tests/pipeline/minimal.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_stepfunctions as sfn
from pydantic import ValidationError

from fire_and_forget.construct import PipelineSettings
from fire_and_forget.construct.pipe import InvalidPipeTarget, check_invocation_type
from fire_and_forget.construct.request_response import (
    EXPRESS_MAX_SECONDS,
    ExpressWorkflowError,
    TimeoutMismatch,
    check_express_definition,
    check_timeouts,
    visibility_timeout_seconds,
    with_returned_tail,
)
from fire_and_forget.runtime.deliveries import STALE_AFTER_VARIABLE
from tests.infra import request_response_app
from tests.pipeline import minimal

RR = "REQUEST_RESPONSE"


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return request_response_app.template()


def of_type(template: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {lid: res for lid, res in template["Resources"].items() if res["Type"] == kind}


def only(template: dict[str, Any], kind: str) -> dict[str, Any]:
    (resource,) = of_type(template, kind).values()
    return resource["Properties"]  # type: ignore[no-any-return]


def definition(template: dict[str, Any]) -> dict[str, Any]:
    """The state machine's definition (its ARNs and names are DefinitionSubstitutions)."""
    loaded: dict[str, Any] = json.loads(only(template, "AWS::StepFunctions::StateMachine")["DefinitionString"])
    return loaded


def policy_actions(template: dict[str, Any], role_lid_part: str) -> set[str]:
    actions: set[str] = set()
    for policy in of_type(template, "AWS::IAM::Policy").values():
        roles = [r["Ref"] for r in policy["Properties"]["Roles"]]
        if any(role_lid_part in role for role in roles):
            for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
                listed = statement["Action"]
                actions.update([listed] if isinstance(listed, str) else listed)
    return actions


def test_the_workflow_is_express_and_logs_every_event_with_its_data(template: dict[str, Any]) -> None:
    machine = only(template, "AWS::StepFunctions::StateMachine")
    assert machine["StateMachineType"] == "EXPRESS"
    # Express keeps no history: the log, at ALL with the data, is the only record of why an execution failed.
    assert machine["LoggingConfiguration"]["Level"] == "ALL"
    assert machine["LoggingConfiguration"]["IncludeExecutionData"] is True


def test_the_workflow_times_out_within_express_and_the_queue_hides_a_message_six_times_as_long(
    template: dict[str, Any],
) -> None:
    timeout = definition(template)["TimeoutSeconds"]
    assert timeout == PipelineSettings().express_timeout_seconds <= EXPRESS_MAX_SECONDS
    queues = of_type(template, "AWS::SQS::Queue")
    (source,) = [q["Properties"] for q in queues.values() if "RedrivePolicy" in q["Properties"]]
    assert source["VisibilityTimeout"] == 6 * timeout


def test_a_message_that_fails_max_receive_count_times_ends_in_the_source_dlq(template: dict[str, Any]) -> None:
    queues = of_type(template, "AWS::SQS::Queue")
    (source,) = [q["Properties"] for q in queues.values() if "RedrivePolicy" in q["Properties"]]
    redrive = source["RedrivePolicy"]
    assert redrive["maxReceiveCount"] == PipelineSettings().max_receive_count
    assert "SourceDlq" in redrive["deadLetterTargetArn"]["Fn::GetAtt"][0]
    # No failure DLQ: the source queue and its DLQ are the only queues.
    assert len(queues) == 2


def test_the_pipe_waits_for_the_result_with_start_sync_execution_only(template: dict[str, Any]) -> None:
    pipe = only(template, "AWS::Pipes::Pipe")
    assert pipe["TargetParameters"] == {"StepFunctionStateMachineParameters": {"InvocationType": RR}}
    actions = policy_actions(template, "PipelinePipeRole")
    assert "states:StartSyncExecution" in actions
    assert "states:StartExecution" not in actions


def test_no_part_of_the_fire_and_forget_safety_net_is_built(template: dict[str, Any]) -> None:
    # No status-change rule (Express sends no such events), no Reconciler or Redriver and their schedules
    # (they sweep and redrive Standard executions), no dashboard. The operator policy is the mode's own
    # (tests/permissions/test_request_response_matrix.py).
    for kind in ("AWS::Events::Rule", "AWS::Scheduler::Schedule", "AWS::CloudWatch::Dashboard",
                 "AWS::CloudWatch::CompositeAlarm"):
        assert not of_type(template, kind), kind
    assert len(of_type(template, "AWS::Lambda::Function")) == 1  # the workflow's own task
    assert {"FailureDlqUrl", "FailureRuleName", "ReconcilerFunctionName", "RedriverFunctionName",
            "HealingPolicy"}.isdisjoint(template["Outputs"])
    assert template["Outputs"]["InvocationType"]["Value"] == RR
    assert "OperatorPolicyArn" in template["Outputs"]


def test_alarms_watch_the_express_executions_and_the_source_dlq(template: dict[str, Any]) -> None:
    alarms = of_type(template, "AWS::CloudWatch::Alarm").values()
    states = {a["Properties"]["MetricName"] for a in alarms if a["Properties"].get("Namespace") == "AWS/States"}
    assert states == {"ExecutionsFailed", "ExecutionsTimedOut", "ExecutionThrottled"}
    for alarm in alarms:
        props = alarm["Properties"]
        if props.get("Namespace") == "AWS/States":
            assert [d["Name"] for d in props["Dimensions"]] == ["StateMachineArn"]
        assert props["AlarmActions"] == [{"Ref": next(iter(of_type(template, "AWS::SNS::Topic")))}]
    (dlq,) = [m["MetricStat"]["Metric"] for a in alarms for m in a["Properties"].get("Metrics", [])
              if m["MetricStat"]["Metric"]["Namespace"] == "AWS/SQS"]
    assert dlq["MetricName"] == "ApproximateNumberOfMessagesVisible"
    assert "SourceDlq" in dlq["Dimensions"][0]["Value"]["Fn::GetAtt"][0]


def test_a_failed_execution_releases_its_claim_and_fails_with_the_failed_states_error(
    template: dict[str, Any],
) -> None:
    states = definition(template)["States"]
    release = states["ClaimFailure"]
    assert release["Resource"] == "arn:aws:states:::dynamodb:deleteItem"
    assert release["Parameters"]["ConditionExpression"].startswith("executionArn = :execution")
    assert states[release["Next"]] == {**states[release["Next"]], "Type": "Fail", "ErrorPath": "$.failure.error",
                                       "CausePath": "$.failure.cause"}
    assert not {"HandleFailure", "NotifyFailure", "FailureRecorded"} & set(states)
    actions = policy_actions(template, "PipelineWorkflowStateMachineRole")
    assert {"dynamodb:DeleteItem", "dynamodb:UpdateItem", "dynamodb:GetItem"} <= actions
    assert not {"dynamodb:PutItem", "sqs:SendMessage", "sns:Publish"} & actions


def test_a_duplicate_succeeds_only_when_the_claims_owner_completed_the_delivery(template: dict[str, Any]) -> None:
    states = definition(template)["States"]
    read = states["DuplicateDeliveryIgnored"]
    assert (read["Resource"], read["Parameters"]["ConsistentRead"]) == ("arn:aws:states:::dynamodb:getItem", True)
    (choice,) = states[read["Next"]]["Choices"]
    assert choice == {"Variable": "$.owner.Item.deliveredAt", "IsPresent": True, "Next": "DuplicateOfCompletedDelivery"}
    assert states["DuplicateOfCompletedDelivery"]["Type"] == "Succeed"
    # Otherwise, and when the claim cannot be read, the message is kept: never deleted unprocessed.
    returned = states[states[read["Next"]]["Default"]]
    assert (returned["Type"], returned["Error"]) == ("Fail", "DuplicateDelivery")
    assert read["Catch"][0]["Next"] == states[read["Next"]]["Default"]


def test_the_claiming_function_takes_a_claim_over_once_its_execution_cannot_be_running(
        template: dict[str, Any]) -> None:
    (function,) = [f["Properties"] for f in of_type(template, "AWS::Lambda::Function").values()
                   if "DELIVERIES_TABLE_NAME" in f["Properties"].get("Environment", {}).get("Variables", {})]
    variables = function["Environment"]["Variables"]
    workflow_timeout = definition(template)["TimeoutSeconds"]
    # The workflow's TimeoutSeconds and the longest invocation it may start just before: well under the visibility
    # timeout, so the receive after a timed-out execution owns the message.
    assert int(variables[STALE_AFTER_VARIABLE]) == workflow_timeout + function["Timeout"]
    assert int(variables[STALE_AFTER_VARIABLE]) < 6 * workflow_timeout


def test_a_fire_and_forget_claim_is_never_taken_over(cloud_assembly: Path) -> None:
    app = json.loads((cloud_assembly / "FireAndForget-Catalog.template.json").read_text(encoding="utf-8"))
    variables = [f["Properties"].get("Environment", {}).get("Variables", {})
                 for f in of_type(app, "AWS::Lambda::Function").values()]
    assert any("DELIVERIES_TABLE_NAME" in v for v in variables)
    assert not any(STALE_AFTER_VARIABLE in v for v in variables)


def test_every_successful_end_of_the_workflow_records_the_completed_delivery_first(template: dict[str, Any]) -> None:
    states = definition(template)["States"]
    assert [name for name, state in states.items() if state.get("Type") == "Succeed" or state.get("End")] == \
        ["Delivered", "DuplicateOfCompletedDelivery"]
    assert states["IndexProduct"]["Next"] == "DeliveryCompleted"  # the catalog's task ended the workflow
    mark = states["DeliveryCompleted"]
    assert mark["Resource"] == "arn:aws:states:::dynamodb:updateItem"
    assert mark["Parameters"]["ConditionExpression"] == "executionArn = :execution"  # only its own claim
    # Failing to record does not fail work already done: the message is still deleted.
    assert mark["Next"] == mark["Catch"][0]["Next"] == "Delivered"


def test_a_succeed_state_of_the_workflow_becomes_a_pass_into_the_completion_and_branch_ends_stay() -> None:
    workflow = {"StartAt": "Branch", "States": {
        "Branch": {"Type": "Parallel", "Next": "Done", "Branches": [
            {"StartAt": "Inner", "States": {"Inner": {"Type": "Pass", "End": True}}}]},
        "Done": {"Type": "Succeed", "OutputPath": "$.result"},
        "Stop": {"Type": "Fail", "Error": "Stop"}}}

    states = with_returned_tail(workflow)["States"]

    assert states["Done"] == {"Type": "Pass", "OutputPath": "$.result", "Next": "DeliveryCompleted"}
    assert states["Branch"]["Branches"][0]["States"]["Inner"] == {"Type": "Pass", "End": True}
    assert states["Stop"] == {"Type": "Fail", "Error": "Stop"}


@pytest.mark.parametrize("name", ["DeliveryCompleted", "Delivered", "DuplicateReturnedToQueue",
                                  "FailureReturnedToQueue"])
def test_a_workflow_state_named_like_the_tails_is_refused(name: str) -> None:
    with pytest.raises(ExpressWorkflowError, match=f"states {name} bear names of the REQUEST_RESPONSE tail"):
        with_returned_tail({"StartAt": name, "States": {name: {"Type": "Pass", "End": True}}})


# Refusals -------------------------------------------------------------------------------------------------------


def test_a_standard_workflow_with_request_response_is_refused() -> None:
    with pytest.raises(InvalidPipeTarget, match="only with invocation type FIRE_AND_FORGET"):
        check_invocation_type(sfn.StateMachineType.STANDARD, RR)


def test_an_express_workflow_with_fire_and_forget_is_refused() -> None:
    with pytest.raises(InvalidPipeTarget, match="EXPRESS state machine only with invocation type REQUEST_RESPONSE"):
        check_invocation_type(sfn.StateMachineType.EXPRESS, "FIRE_AND_FORGET")


@pytest.mark.parametrize(("changes", "message"), [
    ({"TimeoutSeconds": None}, "it has no TimeoutSeconds"),
    ({"TimeoutSeconds": EXPRESS_MAX_SECONDS + 1}, "TimeoutSeconds 301 is over Express's 300 s"),
], ids=["absent", "over-300"])
def test_an_express_definition_without_a_timeout_within_five_minutes_is_refused(changes: dict[str, Any],
                                                                                message: str) -> None:
    flow = minimal.valid_definition() | {"TimeoutSeconds": EXPRESS_MAX_SECONDS}
    flow |= changes
    flow = {k: v for k, v in flow.items() if v is not None}
    with pytest.raises(ExpressWorkflowError, match=message):
        check_express_definition(flow)


def test_an_express_definition_that_waits_for_a_job_is_refused() -> None:
    flow = minimal.valid_definition() | {"TimeoutSeconds": 60}
    flow["States"][minimal.TASK]["Resource"] = "arn:aws:states:::ecs:runTask.sync"
    with pytest.raises(ExpressWorkflowError, match="Request Response integrations only"):
        check_express_definition(flow)


def test_the_express_timeout_setting_stops_at_five_minutes() -> None:
    with pytest.raises(ValidationError, match="expressTimeoutSeconds|express_timeout_seconds"):
        PipelineSettings(express_timeout_seconds=EXPRESS_MAX_SECONDS + 1)


def test_the_visibility_timeout_is_the_modes_unless_configured() -> None:
    assert visibility_timeout_seconds(PipelineSettings(), "FIRE_AND_FORGET", 3600) == 300
    assert visibility_timeout_seconds(PipelineSettings(), RR, 120) == 720
    assert visibility_timeout_seconds(PipelineSettings(source_visibility_timeout_seconds=200), RR, 120) == 200


def test_a_visibility_timeout_shorter_than_the_workflow_can_run_is_refused(tmp_path: Path) -> None:
    scope = minimal.stack()
    settings = PipelineSettings(express_timeout_seconds=120, source_visibility_timeout_seconds=119)
    with pytest.raises(TimeoutMismatch, match="shorter than the Express workflow can run"):
        minimal.pipeline(scope, minimal.write(tmp_path, minimal.valid_definition()), invocation_type=RR,
                         settings=settings)


def test_a_task_timeout_longer_than_the_workflows_is_refused() -> None:
    flow = minimal.valid_definition() | {"TimeoutSeconds": 60}
    flow["States"][minimal.TASK]["TimeoutSeconds"] = 61
    with pytest.raises(TimeoutMismatch, match="Task 'Work' TimeoutSeconds 61 longer than the workflow's"):
        check_timeouts(flow, {})


def test_a_lambda_timeout_longer_than_the_workflows_is_refused(tmp_path: Path) -> None:
    scope = minimal.stack()
    slow = lambda_.Function(scope, "SlowFunction", runtime=lambda_.Runtime.PYTHON_3_13, handler="index.handler",
                            code=lambda_.Code.from_inline("def handler(event, context):\n    return event\n"),
                            timeout=cdk.Duration.seconds(200))
    flow = minimal.Workflow(title="Minimal", definition_file=minimal.write(tmp_path, minimal.valid_definition()),
                            functions={minimal.TASK: slow}, claims_delivery=minimal.TASK)
    with pytest.raises(TimeoutMismatch, match=r"the Lambda function of 'Work' \(200 s\)"):
        minimal.pipeline_from(scope, flow, invocation_type=RR,
                              settings=PipelineSettings(express_timeout_seconds=120))


def test_the_smallest_pipeline_builds_in_request_response_mode(tmp_path: Path) -> None:
    scope = minimal.stack()
    pipeline = minimal.pipeline(scope, minimal.write(tmp_path, minimal.valid_definition()), invocation_type=RR)
    assert pipeline.failure_dlq is None and pipeline.dashboard is None
    assert set(pipeline.alarms) == {"ExecutionsFailed", "ExecutionsTimedOut", "ExecutionThrottled",
                                    "SourceDlqNotEmpty"}
    statements = cdk.Stack.of(pipeline).resolve(pipeline.operator_policy.document.to_json())["Statement"]
    actions = {a for statement in statements for a in ([statement["Action"]] if isinstance(statement["Action"], str)
                                                      else statement["Action"])}
    assert "sqs:StartMessageMoveTask" in actions and not {a for a in actions if a.startswith("states:")}


def test_the_runtime_names_the_tails_duplicate_ends(template: dict[str, Any]) -> None:
    from fire_and_forget.runtime.tail import RETURNED_DUPLICATE_ENDS  # noqa: PLC0415

    states = definition(template)["States"]
    ends = {name for name, state in states.items() if state["Type"] in {"Succeed", "Fail"}
            and name.startswith("Duplicate")}
    assert ends == RETURNED_DUPLICATE_ENDS
