"""What the construct refuses or derives for self-healing at synth: the undo mapping, the compensation payload the
Reconciler relies on, the alert subject bound, the transient errors read from the definition, and the resources."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest

from fire_and_forget.construct import WiringError, Workflow
from fire_and_forget.construct.workflow import COMPENSATION_PAYLOAD, retried_errors
from tests.pipeline import minimal
from tests.pipeline.minimal import TASK

UNDO_STATE = "UndoWork"


def with_compensation(payload: dict[str, Any]) -> dict[str, Any]:
    """The minimal definition whose failure path runs UndoWork before ClaimFailure."""
    definition = minimal.valid_definition()
    definition["States"]["WorkFailed"]["Next"] = UNDO_STATE
    definition["States"][UNDO_STATE] = {
        "Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "TimeoutSeconds": 30,
        "Parameters": {"FunctionName": f"${{{UNDO_STATE}FunctionArn}}", "Payload": payload},
        "ResultPath": "$.compensation.undoWork",
        "Retry": [{"ErrorEquals": ["TransientError", "Lambda.Unknown"], "MaxAttempts": 3}],
        "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.compensation.undoWork", "Next": "ClaimFailure"}],
        "Next": "ClaimFailure",
    }
    return definition


def build(tmp_path: Path, definition: dict[str, Any], *, undo: dict[str, str] | None = None,
          title: str = "Minimal") -> cdk.Stack:
    scope = minimal.stack()
    flow = Workflow(title=title, definition_file=minimal.write(tmp_path, definition),
                    functions={TASK: minimal.function(scope), UNDO_STATE: minimal.function(scope, UNDO_STATE)},
                    claims_delivery=TASK, compensations=(UNDO_STATE,),
                    undo={TASK: UNDO_STATE} if undo is None else undo)
    minimal.pipeline_from(scope, flow)
    return scope


def template(scope: cdk.Stack) -> dict[str, Any]:
    return scope.node.root.synth().get_stack_by_name(scope.stack_name).template  # type: ignore[attr-defined,no-any-return]


def test_the_reconciler_gets_the_compensations_in_step_order_with_their_functions(tmp_path: Path) -> None:
    resources = template(build(tmp_path, with_compensation(dict(COMPENSATION_PAYLOAD))))["Resources"]
    (reconciler,) = [r for lid, r in resources.items()
                     if r["Type"] == "AWS::Lambda::Function" and lid.startswith("PipelineHealingReconciler")]
    compensations = reconciler["Properties"]["Environment"]["Variables"]["COMPENSATIONS"]
    assert TASK in json.dumps(compensations) and UNDO_STATE in json.dumps(compensations)
    types = [r["Type"] for r in resources.values()]
    assert types.count("AWS::Scheduler::Schedule") == 2 and types.count("AWS::Lambda::EventSourceMapping") == 1


def test_a_compensation_sending_another_payload_is_refused(tmp_path: Path) -> None:
    with pytest.raises(WiringError, match="compensation 'UndoWork' must send Payload"):
        build(tmp_path, with_compensation({"record.$": "$$.Execution.Input[0]"}))


def test_undo_naming_no_function_or_no_compensation_is_refused(tmp_path: Path) -> None:
    definition = with_compensation(dict(COMPENSATION_PAYLOAD))
    with pytest.raises(WiringError, match="which are not its functions"):
        build(tmp_path, definition, undo={"Nowhere": UNDO_STATE})
    scope = minimal.stack()
    with pytest.raises(WiringError, match="must also be listed in compensations"):
        Workflow(title="Minimal", definition_file=minimal.write(tmp_path, definition),
                 functions={TASK: minimal.function(scope), UNDO_STATE: minimal.function(scope, UNDO_STATE)},
                 claims_delivery=TASK, undo={TASK: UNDO_STATE})


def test_a_title_and_state_name_too_long_for_an_sns_subject_are_refused(tmp_path: Path) -> None:
    definition = minimal.valid_definition()
    long_state = "W" * 50
    definition["States"][long_state] = definition["States"].pop("WorkFailed")
    definition["States"][TASK]["Catch"][1]["Next"] = long_state
    with pytest.raises(WiringError, match="alert subject for state 'W{50}' would be 113 characters"):
        scope = minimal.stack()
        flow = minimal.workflow(scope, minimal.write(tmp_path, definition), title="T" * 30)
        minimal.pipeline_from(scope, flow)


def test_transient_errors_are_each_tasks_own_retried_names() -> None:
    definition = with_compensation(dict(COMPENSATION_PAYLOAD))
    definition["States"][TASK]["Retry"] = [{"ErrorEquals": ["TransientError"]}, {"ErrorEquals": ["States.ALL"]}]
    assert retried_errors(definition) == {TASK: frozenset({"TransientError"}),
                                          UNDO_STATE: frozenset({"TransientError", "Lambda.Unknown"})}
