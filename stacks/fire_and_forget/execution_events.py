"""The EventBridge rule that hands what Catch cannot see (timeouts, aborts, unhandled errors) to the reconciler."""

from __future__ import annotations

import json
from typing import Any

from aws_cdk import Duration, Fn
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_kms as kms
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from stacks.fire_and_forget.defaults import dead_letter_queue
from stacks.fire_and_forget.healing import failure_events_queue
from stacks.fire_and_forget.settings import PipelineSettings

STATUS_CHANGE = "Step Functions Execution Status Change"
TARGET_RETRY_ATTEMPTS = 185  # EventBridge's maximum; with the 24 h event age this rides out long outages
TARGET_MAX_EVENT_AGE = Duration.hours(24)


def failure_event_pattern(state_machine_arn: str, handled_error: str) -> dict[str, Any]:
    """TIMED_OUT and ABORTED executions, and FAILED ones that HandleFailure did not already announce.

    A FAILED event carries the execution's error name in `detail.error`; a Fail state without an Error leaves it
    null. EventBridge's documentation does not say whether `anything-but` matches a null or a missing field, so
    both are matched explicitly. The pattern is plain JSON: CDK's EventPattern drops a `None` and writes `[]`,
    which EventBridge rejects ("Empty arrays are not allowed").
    """
    return {
        "source": ["aws.states"],
        "detail-type": [STATUS_CHANGE],
        "detail": {
            "stateMachineArn": [state_machine_arn],
            "$or": [
                {"status": ["TIMED_OUT", "ABORTED"]},
                {"status": ["FAILED"], "error": [{"anything-but": [handled_error]}]},
                {"status": ["FAILED"], "error": [None]},
                {"status": ["FAILED"], "error": [{"exists": False}]},
            ],
        },
    }


def pattern_property(pattern: dict[str, Any], variables: dict[str, str]) -> str:
    """The pattern as the JSON string CloudFormation accepts for EventPattern (a string keeps its nulls).

    Deploy-time values (an ARN) stand in the pattern as `${Name}` and are filled in by Fn::Sub, so no CDK token
    is ever serialized inside the JSON text.
    """
    return Fn.sub(json.dumps(pattern, separators=(",", ":")), variables)


class ExecutionEvents(Construct):
    """Rule on the workflow's status changes, to the failure-events queue the Reconciler consumes.

    The rule announces nothing itself: the Reconciler compensates, records and then announces the failure once, with
    its final state (docs/design.md, "Self-healing"). `.failure_events_queue`, `.reconciler_dlq`, `.target_dlq`.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: PipelineSettings,
        key: kms.IKey,
        state_machine: sfn.IStateMachine,
        handled_error: str,
        workflow_title: str,
    ) -> None:
        super().__init__(scope, construct_id)
        self.failure_events_queue, self.reconciler_dlq = failure_events_queue(self, key=key, config=config)
        self.target_dlq = dead_letter_queue(self, "TargetDlq", key=key, config=config)
        self.rule = events.Rule(
            self,
            "Rule",
            description=f"Sends {workflow_title} executions that ended TIMED_OUT, ABORTED or FAILED unrecorded to "
                        "the reconciler",
            # Replaced below by the JSON-string pattern; the L2 insists on having one at construction.
            event_pattern=events.EventPattern(source=["aws.states"]),
        )
        cfn_rule = self.rule.node.default_child
        assert isinstance(cfn_rule, events.CfnRule)
        cfn_rule.add_property_override(
            "EventPattern",
            pattern_property(
                failure_event_pattern("${StateMachineArn}", handled_error),
                {"StateMachineArn": state_machine.state_machine_arn},
            ),
        )
        self.rule.add_target(
            targets.SqsQueue(
                self.failure_events_queue,
                dead_letter_queue=self.target_dlq,
                retry_attempts=TARGET_RETRY_ATTEMPTS,
                max_event_age=TARGET_MAX_EVENT_AGE,
            )
        )
