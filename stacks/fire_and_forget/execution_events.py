"""The EventBridge rule that announces the failures Catch cannot see: timeouts, aborts, unhandled errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from aws_cdk import Duration, Fn
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from stacks.fire_and_forget.compliance import acknowledge
from stacks.fire_and_forget.defaults import dead_letter_queue, state_machine_log_group
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


ANNOUNCER_ASL = Path(__file__).resolve().parent / "asl" / "announce_execution_failure.asl.json"


class ExecutionEvents(Construct):
    """Rule on the workflow's status changes, to the announcer and the failure-events queue.

    The announcer is an Express state machine rather than an SNS target: an input transformer can only publish one
    text to every subscriber, while the announcement must be plain text in e-mail and a custom-notification card in
    Slack, which takes Publish's MessageStructure "json". `.announcer` is exposed for alarms.
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
        alerts_topic: sns.ITopic,
        workflow_title: str,
    ) -> None:
        super().__init__(scope, construct_id)
        self.failure_events_queue = dead_letter_queue(self, "FailureEventsQueue", key=key, config=config)
        self.target_dlq = dead_letter_queue(self, "TargetDlq", key=key, config=config)
        self.rule = events.Rule(
            self,
            "Rule",
            description=f"Announces {workflow_title} executions that ended TIMED_OUT, ABORTED or FAILED unannounced",
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
        self.announcer = self._announcer(config, key, alerts_topic, workflow_title)
        self.rule.add_target(
            targets.SfnStateMachine(
                self.announcer,
                dead_letter_queue=self.target_dlq,
                retry_attempts=TARGET_RETRY_ATTEMPTS,
                max_event_age=TARGET_MAX_EVENT_AGE,
            )
        )
        self.rule.add_target(
            targets.SqsQueue(
                self.failure_events_queue,
                dead_letter_queue=self.target_dlq,
                retry_attempts=TARGET_RETRY_ATTEMPTS,
                max_event_age=TARGET_MAX_EVENT_AGE,
            )
        )

    def _announcer(self, config: PipelineSettings, key: kms.IKey, alerts_topic: sns.ITopic,
                   workflow_title: str) -> sfn.StateMachine:
        """AnnounceExecutionFailure: formats the event and publishes it once, per protocol, to the alerts topic."""
        announcer = sfn.StateMachine(
            self,
            "Announcer",  # short: CloudFormation names it <stack>-<logical id>-<suffix>, at most 80 characters
            state_machine_type=sfn.StateMachineType.EXPRESS,
            # Inline, like the workflow's: from_file would make it an S3 asset.
            definition_body=sfn.DefinitionBody.from_string(ANNOUNCER_ASL.read_text(encoding="utf-8")),
            definition_substitutions={
                "AlertsTopicArn": alerts_topic.topic_arn,
                "EnvironmentName": config.environment_name,
                "WorkflowTitle": workflow_title,
            },
            tracing_enabled=True,
            logs=sfn.LogOptions(
                destination=state_machine_log_group(self, "AnnouncerLogs", config=config),
                level=sfn.LogLevel.ALL,
                include_execution_data=config.include_execution_data,
            ),
        )
        announcer.add_to_role_policy(iam.PolicyStatement(actions=["sns:Publish"], resources=[alerts_topic.topic_arn]))
        key.grant(announcer, "kms:GenerateDataKey", "kms:Decrypt")  # Publish to the SSE-KMS topic
        acknowledge(
            announcer, "AwsSolutions-IAM5[Resource::*]",
            "Only the CloudWatch Logs vended-delivery actions (logs:CreateLogDelivery and friends) and X-Ray "
            "trace writes, which AWS requires on Resource '*'.",
        )
        return announcer
