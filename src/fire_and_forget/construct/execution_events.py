"""The EventBridge rule that hands what Catch cannot see (timeouts, aborts, unhandled errors) to the reconciler."""

from __future__ import annotations

import json
from typing import Any

import jsii
from aws_cdk import Duration, Fn, Names, Stack
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk.interfaces import aws_events as events_refs
from constructs import Construct

from fire_and_forget.construct.defaults import dead_letter_queue
from fire_and_forget.construct.healing import failure_events_queue
from fire_and_forget.construct.settings import PipelineSettings

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


EVENTBRIDGE_PRINCIPAL = "events.amazonaws.com"
# What a producer of an SSE-KMS queue calls (sqs-key-management.html), EventBridge delivering included.
QUEUE_PRODUCER_KEY_ACTIONS = ["kms:Decrypt", "kms:GenerateDataKey*"]


def eventbridge_to_this_accounts_queues(stack: Stack) -> iam.PolicyStatement:
    """The key statement: EventBridge may use the key for the data keys SQS makes for this account's queues in this
    region, and for nothing else.

    AWS documents the aws:SourceAccount / aws:SourceArn keys of EventBridge's KMS requests one way for some deliveries
    and the other way for others: EventBridge's page on customer managed keys recommends them in the key policy
    (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-encryption-key-policy.html), SNS's says they are not
    supported in a key policy for EventBridge to an encrypted topic
    (https://docs.aws.amazon.com/sns/latest/dg/sns-key-management.html#compatibility-with-aws-services), and no SQS
    page says which holds for EventBridge to an encrypted queue. So nothing here requires them: the required binding
    is the encryption context SQS binds every data key to (the queue's ARN, kms:EncryptionContext:aws:sqs:arn), and
    aws:SourceAccount and kms:ViaService (which KMS documents for requests on behalf of an account's principals, not
    a service's) narrow it wherever a request carries them (...IfExists), refusing nothing that lacks them.

    The context is bounded to this account and region, not to the rule's two queues: their ARNs would make the key
    depend on queues that depend on it. Which rule may send to which queue is the queue policies' (aws:SourceArn).
    """
    return iam.PolicyStatement(
        sid="AllowEventBridgeToThisAccountsQueues",
        principals=[iam.ServicePrincipal(EVENTBRIDGE_PRINCIPAL)],
        actions=QUEUE_PRODUCER_KEY_ACTIONS,
        resources=["*"],  # in a key policy "*" means this key
        conditions={
            "StringLike": {"kms:EncryptionContext:aws:sqs:arn": stack.format_arn(service="sqs", resource="*")},
            "StringEqualsIfExists": {
                "aws:SourceAccount": stack.account,
                # KMS names a service `<service>.<region>.amazonaws.com` in every partition (conditions-kms.html).
                "kms:ViaService": f"sqs.{stack.region}.amazonaws.com",
            },
        },
    )


@jsii.implements(events.IRuleTarget)
class QueueOfOneRule:
    """An SQS rule target, with its target DLQ, whose queue policies let exactly the rule send (aws:SourceArn).

    CDK's `targets.SqsQueue` binds an SSE-KMS queue's statement to aws:SourceAccount only (the flag
    @aws-cdk/aws-events:eventsTargetQueueSameAccount; to nothing without it), so that any rule of the account could
    write to it: it puts the same condition into the key policy, where the rule's ARN would make the key, the rule
    and the queue depend on each other. Here only the queue policies name the rule
    (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-use-resource-based.html#eb-sqs-permissions), and
    ExecutionEvents gives EventBridge the key (`eventbridge_to_this_accounts_queues`).
    """

    def __init__(self, queue: sqs.IQueue, *, dead_letter_queue: sqs.IQueue, retry_attempts: int,
                 max_event_age: Duration) -> None:
        self.queue = queue
        self.dead_letter_queue = dead_letter_queue
        self.retry_attempts = retry_attempts
        self.max_event_age = max_event_age

    def bind(self, rule: events_refs.IRuleRef, _id: str | None = None) -> events.RuleTargetConfig:
        rule_arn = events.CfnRule.arn_for_rule(rule)
        for queue in (self.queue, self.dead_letter_queue):
            queue.add_to_resource_policy(iam.PolicyStatement(
                sid=f"AllowEventRule{Names.node_unique_id(rule.node)}",
                principals=[iam.ServicePrincipal(EVENTBRIDGE_PRINCIPAL)],
                actions=["sqs:SendMessage"],
                resources=[queue.queue_arn],
                conditions={"ArnEquals": {"aws:SourceArn": rule_arn}},
            ))
        return events.RuleTargetConfig(
            arn=self.queue.queue_arn,
            dead_letter_config=events.CfnRule.DeadLetterConfigProperty(arn=self.dead_letter_queue.queue_arn),
            retry_policy=events.CfnRule.RetryPolicyProperty(
                maximum_retry_attempts=self.retry_attempts,
                maximum_event_age_in_seconds=int(self.max_event_age.to_seconds()),
            ),
            target_resource=self.queue,
        )


class ExecutionEvents(Construct):
    """Rule on the workflow's status changes, to the failure-events queue the Reconciler consumes.

    The rule announces nothing itself: the Reconciler compensates, records and then announces the failure once, with
    its final state (docs/design.md, "The status-change rule and "announced exactly once"" and "Who announces").
    `.failure_events_queue`, `.reconciler_dlq`, `.target_dlq`.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: PipelineSettings,
        key: kms.IKey,
        state_machine: sfn.IStateMachine,
        handled_error: str,
        workflow_title: str,
    ) -> None:
        super().__init__(scope, construct_id)
        self.failure_events_queue, self.reconciler_dlq = failure_events_queue(self, key=key, settings=settings)
        self.target_dlq = dead_letter_queue(self, "TargetDlq", key=key, settings=settings)
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
        # The rule's queues and their DLQ copies are SSE-KMS: EventBridge needs the key, whichever the pipeline uses.
        key.add_to_resource_policy(eventbridge_to_this_accounts_queues(Stack.of(self)))
        self.rule.add_target(
            QueueOfOneRule(
                self.failure_events_queue,
                dead_letter_queue=self.target_dlq,
                retry_attempts=TARGET_RETRY_ATTEMPTS,
                max_event_age=TARGET_MAX_EVENT_AGE,
            )
        )
