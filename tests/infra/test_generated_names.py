"""Step Functions names are at most 80 characters, and CloudFormation names an unnamed state machine
`<stack name>-<logical id>-<12 characters>` (API_StateMachineListItem, "Maximum length of 80"). moto does not
truncate and neither may AWS, so both examples' names must fit, and a stack name too long must fail synth."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_stepfunctions as sfn

from fire_and_forget.construct.pipeline import GENERATED_SUFFIX, MAX_STATE_MACHINE_NAME, _GeneratedNamesFit
from tests.support.cdk import CATALOG_STACK_NAME, STACK_NAME
from tests.support.template import of_type


@pytest.mark.parametrize(("fixture", "stack"), [("template", STACK_NAME), ("catalog_template", CATALOG_STACK_NAME)])
def test_every_generated_state_machine_name_fits(fixture: str, stack: str, request: pytest.FixtureRequest) -> None:
    template: dict[str, Any] = request.getfixturevalue(fixture)
    machines = of_type(template, "AWS::StepFunctions::StateMachine")
    assert len(machines) == 1  # the workflow (the rule's announcer is gone: the Reconciler is a function)
    for logical_id, machine in machines.items():
        assert "StateMachineName" not in machine["Properties"], logical_id  # generated: replaceable
        assert len(stack) + 1 + len(logical_id) + GENERATED_SUFFIX <= MAX_STATE_MACHINE_NAME, logical_id


def _machine_in(stack_name: str) -> tuple[cdk.Stack, sfn.StateMachine]:
    stack = cdk.Stack(cdk.App(), stack_name)
    body = sfn.DefinitionBody.from_chainable(sfn.Pass(stack, "P"))
    machine = sfn.StateMachine(stack, "Machine", definition_body=body)
    return stack, machine


def test_a_stack_name_too_long_for_the_generated_names_is_refused_with_the_length_to_use() -> None:
    stack, machine = _machine_in("S" * 70)
    (problem,) = _GeneratedNamesFit(stack, (machine,)).validate()
    assert "over Step Functions' 80" in problem and "use a stack name of at most" in problem


def test_a_stack_name_that_fits_passes() -> None:
    stack, machine = _machine_in("FireAndForget")
    assert _GeneratedNamesFit(stack, (machine,)).validate() == []
