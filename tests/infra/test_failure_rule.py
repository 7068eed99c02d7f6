"""The EventBridge rule: what it matches (evaluated with moto's faithful pattern matcher), where it delivers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from moto.events.models import EventPattern

from tests.support.template import event_pattern, of_type, one, ref_or_att

EVENTS = Path(__file__).resolve().parents[1] / "events" / "status_change"
OUR_MACHINE = "arn:aws:states:us-east-1:123456789012:stateMachine:OrderSaga"


@pytest.fixture(scope="module")
def rule(template: dict[str, Any]) -> dict[str, Any]:
    props: dict[str, Any] = one(template, "AWS::Events::Rule", "PipelineExecutionEventsRule")[1]["Properties"]
    return props


@pytest.fixture(scope="module")
def pattern(template: dict[str, Any]) -> EventPattern:
    """The rule's own pattern, with the state machine's ARN filled in as the sample events carry it."""
    machine_id, _ = one(template, "AWS::StepFunctions::StateMachine", "PipelineWorkflow")
    _, resource = one(template, "AWS::Events::Rule", "PipelineExecutionEventsRule")
    variables = resource["Properties"]["EventPattern"]["Fn::Sub"][1]
    assert variables == {"StateMachineArn": {"Ref": machine_id}}
    return EventPattern.load(json.dumps(event_pattern(resource, {"StateMachineArn": OUR_MACHINE})))


@pytest.mark.parametrize(
    ("sample", "announced"),
    [
        ("failed_unhandled", True),
        ("failed_in_handle_failure", True),
        ("failed_error_null", True),  # a Fail state without Error: `"error": null`
        ("failed_error_missing", True),  # the other reading of the documentation: no error field at all
        ("timed_out", True),
        ("aborted", True),
        ("failed_handled", False),  # HandleFailure already announced it: exactly once
        ("succeeded", False),
        ("running", False),
        ("failed_other_state_machine", False),
    ],
)
def test_rule_announces_exactly_what_handle_failure_did_not(
    pattern: EventPattern, sample: str, announced: bool
) -> None:
    event = json.loads((EVENTS / f"{sample}.json").read_text(encoding="utf-8"))
    assert pattern.matches_event(event) is announced


def test_rule_keeps_every_event_for_the_reconciler(template: dict[str, Any], rule: dict[str, Any]) -> None:
    """One target since the self-healing: the failure-events queue, which the Reconciler consumes; it compensates,
    records and (if a person is needed) announces, so nothing else may announce the same event."""
    queue_id, _ = one(template, "AWS::SQS::Queue", "PipelineExecutionEventsFailureEventsQueue")
    dlq_id, _ = one(template, "AWS::SQS::Queue", "PipelineExecutionEventsTargetDlq")
    targets = {ref_or_att(t["Arn"]): t for t in rule["Targets"]}
    assert set(targets) == {queue_id}
    (target,) = targets.values()
    assert ref_or_att(target["DeadLetterConfig"]["Arn"]) == dlq_id
    assert target["RetryPolicy"] == {"MaximumEventAgeInSeconds": 86400, "MaximumRetryAttempts": 185}
    assert "InputTransformer" not in target and "Input" not in target  # the queue keeps the whole event
    mappings = [m["Properties"] for m in of_type(template, "AWS::Lambda::EventSourceMapping").values()
                if ref_or_att(m["Properties"]["EventSourceArn"]) == queue_id]
    assert len(mappings) == 1
    assert str(ref_or_att(mappings[0]["FunctionName"])).startswith("PipelineHealingReconcilerFunction")
