"""The construct refuses wrong wiring at synth, each time with a message that says what to change.

Each test breaks the smallest valid pipeline (tests/pipeline/minimal.py) in one place. The workflow contract is
docs/construct.md, "The workflow contract"; the refusals are listed there, "What it refuses at synth".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_pipes as pipes

from fire_and_forget.construct import FireAndForgetPipeline, PipelineSettings, WiringError, Workflow
from tests.pipeline import minimal
from tests.pipeline.minimal import TASK


def refused(tmp_path: Path, definition: dict[str, Any]) -> str:
    """The WiringError the pipeline raises for `definition`, as text."""
    scope = minimal.stack()
    with pytest.raises(WiringError) as raised:
        minimal.pipeline(scope, minimal.write(tmp_path, definition))
    return str(raised.value)


def test_the_minimal_pipeline_is_accepted(tmp_path: Path) -> None:
    # Given the valid definition every other test breaks, when it is built and synthesized, then nothing refuses it.
    scope = minimal.stack()
    minimal.pipeline(scope, minimal.write(tmp_path, minimal.valid_definition()))
    template = scope.node.root.synth().get_stack_by_name("Minimal").template  # type: ignore[attr-defined]
    assert "AWS::Pipes::Pipe" in {resource["Type"] for resource in template["Resources"].values()}


def test_a_task_without_a_catch_for_states_all_is_refused(tmp_path: Path) -> None:
    definition = minimal.valid_definition()
    definition["States"][TASK]["Catch"] = [
        c for c in definition["States"][TASK]["Catch"] if c["ErrorEquals"] != ["States.ALL"]
    ]
    message = refused(tmp_path, definition)
    assert f"Task '{TASK}' has no Catch for States.ALL" in message
    assert "outside 'ClaimFailure', unrecorded" in message
    assert "docs/construct.md" in message


def test_a_catch_that_never_reaches_claim_failure_is_refused(tmp_path: Path) -> None:
    # WorkFailed still leads to ClaimFailure, but the Catch goes around it to a Fail state of its own.
    definition = minimal.valid_definition()
    definition["States"]["GiveUp"] = {"Type": "Fail", "Error": "GaveUp"}
    definition["States"][TASK]["Catch"][1]["Next"] = "GiveUp"
    message = refused(tmp_path, definition)
    assert f"Task '{TASK}': its States.ALL Catch never reaches 'ClaimFailure'" in message


def test_a_task_without_timeout_seconds_is_refused(tmp_path: Path) -> None:
    # Lambda tasks get the settings' TimeoutSeconds written in; any other Task must carry its own.
    definition = minimal.valid_definition()
    definition["States"][TASK]["Next"] = "Record"
    del definition["States"][TASK]["End"]
    definition["States"]["Record"] = {
        "Type": "Task",
        "Resource": "arn:aws:states:::dynamodb:putItem",
        "Parameters": {"TableName": "t", "Item": {"id": {"S.$": "$.id"}}},
        "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$", "Next": "WorkFailed"}],
        "End": True,
    }
    message = refused(tmp_path, definition)
    assert "Task 'Record' has no TimeoutSeconds: a hung call would hold the execution for a year" in message


def test_a_definition_that_never_goes_to_claim_failure_is_refused(tmp_path: Path) -> None:
    definition = minimal.valid_definition()
    definition["States"]["WorkFailed"] = {"Type": "Fail", "Error": "WorkFailed"}
    message = refused(tmp_path, definition)
    assert "no state goes to the failure entry 'ClaimFailure': end every Catch path there" in message


@pytest.mark.parametrize("tail_state", ["HandleFailure", "ClaimFailure", "NotifyFailure", "FailureRecorded"])
def test_a_state_named_like_a_tail_state_is_refused(tmp_path: Path, tail_state: str) -> None:
    definition = minimal.valid_definition()
    definition["States"][tail_state] = {"Type": "Succeed"}
    message = refused(tmp_path, definition)
    assert f"states {tail_state} bear names of the construct's failure tail: rename them" in message


def test_the_claiming_task_without_a_duplicate_delivery_catch_is_refused(tmp_path: Path) -> None:
    definition = minimal.valid_definition()
    definition["States"][TASK]["Catch"] = definition["States"][TASK]["Catch"][1:]
    message = refused(tmp_path, definition)
    assert (
        f"Task '{TASK}' claims the delivery but does not Catch DuplicateDelivery into "
        "'DuplicateDeliveryIgnored': a redelivered message would be processed twice"
    ) in message


def test_a_duplicate_delivery_catch_elsewhere_than_the_quiet_end_is_refused(tmp_path: Path) -> None:
    # Into the failure path instead: every redelivery would be recorded and announced as a failure.
    definition = minimal.valid_definition()
    definition["States"][TASK]["Catch"][0]["Next"] = "WorkFailed"
    message = refused(tmp_path, definition)
    assert "does not Catch DuplicateDelivery into 'DuplicateDeliveryIgnored'" in message


def test_claims_delivery_naming_a_missing_function_is_refused(tmp_path: Path) -> None:
    scope = minimal.stack()
    with pytest.raises(WiringError) as raised:
        minimal.workflow(scope, minimal.write(tmp_path, minimal.valid_definition()), claims_delivery="Claim")
    assert (
        f"claims_delivery names 'Claim', which is not one of its functions ({TASK}). Name the entry task whose "
        "function claims the message."
    ) in str(raised.value)


@pytest.mark.parametrize("title", ["", "Resize: images", "x" * 41, "Thumbnails 'v2'"])
def test_a_bad_title_is_refused(tmp_path: Path, title: str) -> None:
    scope = minimal.stack()
    with pytest.raises(WiringError) as raised:
        minimal.workflow(scope, minimal.write(tmp_path, minimal.valid_definition()), title=title)
    assert f"Workflow title {title!r}: use 1 to 40 letters, digits, spaces, '-', '_' or '.'" in str(raised.value)


@pytest.mark.parametrize("name", ["", "Thumbnails", "1st", "thumb_nails", "t" * 33])
def test_a_bad_pipeline_name_is_refused(tmp_path: Path, name: str) -> None:
    scope = minimal.stack()
    with pytest.raises(WiringError) as raised:
        minimal.pipeline(scope, minimal.write(tmp_path, minimal.valid_definition()), name=name)
    assert f"Pipeline name {name!r}: use 1 to 32 lowercase letters, digits or '-', starting with a letter" in str(
        raised.value
    )


def test_a_bad_message_key_is_refused(tmp_path: Path) -> None:
    scope = minimal.stack()
    with pytest.raises(WiringError) as raised:
        minimal.pipeline(scope, minimal.write(tmp_path, minimal.valid_definition()), message_key="body.id")
    assert "message_key 'body.id': name one top-level field of the message body" in str(raised.value)


def test_a_body_filter_set_on_the_pipe_fails_synth(tmp_path: Path) -> None:
    # Given a pipeline whose L1 pipe gets a filter afterwards (an escape hatch), when the app synthesizes,
    # then the construct's validation fails the synth with the reason.
    scope = minimal.stack()
    pipeline = minimal.pipeline(scope, minimal.write(tmp_path, minimal.valid_definition()))
    pipeline.pipe.source_parameters = pipes.CfnPipe.PipeSourceParametersProperty(
        sqs_queue_parameters=pipes.CfnPipe.PipeSourceSqsQueueParametersProperty(batch_size=1),
        filter_criteria=pipes.CfnPipe.FilterCriteriaProperty(
            filters=[pipes.CfnPipe.FilterProperty(pattern='{"body": {"kind": ["thumbnail"]}}')]
        ),
    )
    with pytest.raises(RuntimeError) as raised:
        scope.node.root.synth()  # type: ignore[attr-defined]
    message = str(raised.value)
    assert "Validation failed" in message
    assert "The pipe has FilterCriteria: EventBridge Pipes deletes every SQS message a filter does not match" in message
    assert "Remove the filter and let the workflow decide" in message


def _second_workflow(scope: cdk.Stack, definition_file: Path) -> Workflow:
    return Workflow(title="Second", definition_file=definition_file,
                    functions={TASK: minimal.function(scope, "Second")}, claims_delivery=TASK)


def test_a_second_pipeline_in_the_same_stack_is_refused(tmp_path: Path) -> None:
    scope = minimal.stack()
    definition_file = minimal.write(tmp_path, minimal.valid_definition())
    minimal.pipeline(scope, definition_file)
    second = _second_workflow(scope, definition_file)
    with pytest.raises(WiringError) as raised:
        FireAndForgetPipeline(scope, "Second", **minimal.props(second, name="second"))
    assert (
        "Minimal already holds a FireAndForgetPipeline with outputs (Minimal/Pipeline): ff-ops finds a pipeline by "
        "its stack's outputs, so a second one in the same stack sets emit_outputs=False" in str(raised.value)
    )


def test_a_second_pipeline_without_outputs_shares_the_stack(tmp_path: Path) -> None:
    """Two pipelines in one stack synthesize when the second emits no outputs: only the first is ff-ops's."""
    scope = minimal.stack()
    definition_file = minimal.write(tmp_path, minimal.valid_definition())
    minimal.pipeline(scope, definition_file)
    second = _second_workflow(scope, definition_file)
    FireAndForgetPipeline(scope, "Second", **minimal.props(second, name="second", emit_outputs=False))
    template = scope.node.root.synth().get_stack_by_name("Minimal").template  # type: ignore[attr-defined]
    machines = [r for r in template["Resources"].values() if r["Type"] == "AWS::StepFunctions::StateMachine"]
    assert len(machines) == 2
    assert set(template["Outputs"]) >= {"SourceQueueUrl", "StateMachineArn"}
    assert not [key for key in template["Outputs"] if "Second" in key]


def test_outputs_clashing_with_the_pipelines_own_keys_are_refused(tmp_path: Path) -> None:
    scope = minimal.stack()
    with pytest.raises(WiringError) as raised:
        minimal.pipeline(
            scope,
            minimal.write(tmp_path, minimal.valid_definition()),
            outputs={"StateMachineArn": "mine", "PipelineName": "mine", "ThumbnailBucket": "fine"},
        )
    assert "props.outputs PipelineName, StateMachineArn are the pipeline's own output keys: rename them" in str(
        raised.value
    )


def _map_around_the_task(definition: dict[str, Any], *, catch: bool, inner_timeout: bool) -> dict[str, Any]:
    """The minimal definition with its task moved inside a Map state."""
    task = dict(definition["States"][TASK])
    task.pop("Catch", None)
    task["End"] = True
    task.pop("Next", None)
    if not inner_timeout:
        task["Resource"] = "arn:aws:states:::dynamodb:putItem"
        task["Parameters"] = {"TableName": "t", "Item": {"id": {"S.$": "$.id"}}}
        task.pop("TimeoutSeconds", None)
    mapped: dict[str, Any] = {
        "Type": "Map",
        "ItemProcessor": {"StartAt": "Inner", "States": {"Inner": task}},
        "End": True,
    }
    if catch:
        mapped["Catch"] = definition["States"][TASK]["Catch"]
    definition["States"][TASK] = mapped
    return definition


def test_a_map_without_a_catch_is_refused(tmp_path: Path) -> None:
    # A failure inside a Map's iteration fails the Map: without its own Catch, the execution ends unrecorded.
    definition = _map_around_the_task(minimal.valid_definition(), catch=False, inner_timeout=True)
    message = refused(tmp_path, definition)
    assert f"Map '{TASK}' has no Catch for States.ALL" in message


def test_a_task_inside_a_map_without_timeout_seconds_is_refused(tmp_path: Path) -> None:
    definition = _map_around_the_task(minimal.valid_definition(), catch=True, inner_timeout=False)
    message = refused(tmp_path, definition)
    assert f"Task 'Inner' (inside '{TASK}') has no TimeoutSeconds" in message


def test_reports_progress_naming_a_missing_function_is_refused(tmp_path: Path) -> None:
    scope = minimal.stack()
    path = minimal.write(tmp_path, minimal.valid_definition())
    with pytest.raises(WiringError, match="reports_progress names Ship, which are not its functions"):
        Workflow(title="Minimal", definition_file=path, functions={TASK: minimal.function(scope)},
                 claims_delivery=TASK, reports_progress=(TASK, "Ship"))


def test_reports_progress_in_request_response_is_refused(tmp_path: Path) -> None:
    # In REQUEST_RESPONSE the message waits in the source queue until its execution returns: that is its status.
    from fire_and_forget.construct.request_response import REQUEST_RESPONSE

    scope = minimal.stack()
    flow = Workflow(title="Minimal", definition_file=minimal.write(tmp_path, minimal.valid_definition()),
                    functions={TASK: minimal.function(scope)}, claims_delivery=TASK, reports_progress=(TASK,))
    with pytest.raises(WiringError, match="reports_progress is for FIRE_AND_FORGET"):
        minimal.pipeline_from(scope, flow, invocation_type=REQUEST_RESPONSE)


WEBHOOK = {"completion_webhook_url": "https://example.com/hook",
           "completion_webhook_secret_arn": "arn:aws:secretsmanager:us-east-1:123456789012:secret:hook-AbCdEf"}


TICKETS = {"ops_center_tickets": True}


@pytest.mark.parametrize(("option", "settings"), [("completion_webhook_url", WEBHOOK),
                                                  ("ops_center_tickets", TICKETS)])
def test_a_stream_reader_for_a_workflow_that_reports_no_success_is_refused(
        tmp_path: Path, option: str, settings: dict[str, object]) -> None:
    # A success would never be known: only the last step's done mark records it (the webhook tells it, a ticket is
    # resolved by it).
    scope = minimal.stack()
    with pytest.raises(WiringError, match=f"{option} needs to know a success"):
        minimal.pipeline(scope, minimal.write(tmp_path, minimal.valid_definition()),
                         settings=PipelineSettings(**settings))


@pytest.mark.parametrize(("option", "settings"), [("completion_webhook_url", WEBHOOK),
                                                  ("ops_center_tickets", TICKETS)])
def test_a_stream_reader_in_request_response_is_refused(tmp_path: Path, option: str,
                                                        settings: dict[str, object]) -> None:
    from fire_and_forget.construct.request_response import REQUEST_RESPONSE

    scope = minimal.stack()
    flow = Workflow(title="Minimal", definition_file=minimal.write(tmp_path, minimal.valid_definition()),
                    functions={TASK: minimal.function(scope)}, claims_delivery=TASK)
    with pytest.raises(WiringError, match=f"{option} is for FIRE_AND_FORGET"):
        minimal.pipeline_from(scope, flow, invocation_type=REQUEST_RESPONSE, settings=PipelineSettings(**settings))


def test_a_workflow_that_reports_progress_gets_the_webhook_and_the_tickets(tmp_path: Path) -> None:
    scope = minimal.stack()
    flow = Workflow(title="Minimal", definition_file=minimal.write(tmp_path, minimal.valid_definition()),
                    functions={TASK: minimal.function(scope)}, claims_delivery=TASK, reports_progress=(TASK,))
    pipeline = minimal.pipeline_from(scope, flow, settings=PipelineSettings(**WEBHOOK, **TICKETS))
    assert pipeline.completion_webhook is not None and pipeline.tickets is not None
    assert pipeline.deliveries_table.table_stream_arn is not None


def test_a_callers_role_is_granted_reading_its_messages_status(tmp_path: Path) -> None:
    from aws_cdk import aws_iam as iam

    from tests.support.template import actions, statements

    scope = minimal.stack()
    pipeline = minimal.pipeline(scope, minimal.write(tmp_path, minimal.valid_definition()))
    caller = iam.Role(scope, "Caller", assumed_by=iam.AccountRootPrincipal())
    pipeline.grant_status_read(caller)
    template = scope.node.root.synth().get_stack_by_name("Minimal").template  # type: ignore[attr-defined]
    (role_id,) = [logical_id for logical_id, r in template["Resources"].items()
                  if r["Type"] == "AWS::IAM::Role" and logical_id.startswith("Caller")]
    granted = statements(template, role_id)
    table = next(s for s in granted if "dynamodb:GetItem" in actions(s))
    assert actions(table) == {"dynamodb:GetItem"} and "DeliveriesTable" in str(table["Resource"])
    assert any(actions(s) == {"kms:Decrypt"} for s in granted)
