"""The managed policy an operator needs to run `ff-ops` against this stack, and nothing more."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import ArnFormat, Stack, Token
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from fire_and_forget.construct.compliance import acknowledge
from fire_and_forget.runtime.status import REDRIVE_LINK_ATTRIBUTES, TICKET_ATTRIBUTES

# Every call ff-ops makes (fire_and_forget/cli/), grouped by what it is made on. SQS SSE: a receiver needs kms:Decrypt,
# a sender kms:GenerateDataKey and kms:Decrypt, and a DLQ redrive (StartMessageMoveTask) needs both sides' permissions.
READ_QUEUE = ["sqs:GetQueueAttributes"]
READ_FAILURE_DLQ = ["sqs:ReceiveMessage", "sqs:ChangeMessageVisibility", "sqs:DeleteMessage"]
REDRIVE_SOURCE_DLQ = ["sqs:StartMessageMoveTask", "sqs:ListMessageMoveTasks", "sqs:ReceiveMessage", "sqs:DeleteMessage"]
# `ff-ops source-dlq redrive` lists the source DLQ first and `ff-ops trace` reads it; each makes what it read visible
# again at once (fire_and_forget/runtime/dlq.py).
LIST_SOURCE_DLQ = ["sqs:ChangeMessageVisibility"]
SEND_TO_SOURCE = ["sqs:SendMessage"]
LIST_EXECUTIONS = ["states:ListExecutions"]
ON_EXECUTIONS = ["states:DescribeExecution", "states:GetExecutionHistory", "states:RedriveExecution"]
# `executions redrive` reads whether the Reconciler claimed an execution's message (fire_and_forget/cli/executions.py);
# the table is encrypted with the stack's key, so the read needs kms:Decrypt through DynamoDB.
READ_CLAIMS = ["dynamodb:GetItem"]
# `failures redrive` notes on the caller's row which copy carries its message's work now (runtime/status.py,
# link_redrive), and `failures discard` that the message's ticket is resolved (resolve_ticket): each an UpdateItem of
# its own attributes only, returning nothing (`_row_update`), so an operator can never write a claim (a forged
# executionArn would make a message's executions end as duplicates) nor an outcome.
UPDATE_ROW = ["dynamodb:UpdateItem"]
QUEUE_KEY = ["kms:Decrypt", "kms:GenerateDataKey"]


@dataclass(frozen=True)
class OperatedResources:
    """What ff-ops reads and redrives, as the stack built them. In REQUEST_RESPONSE mode there is no failure DLQ
    (`failure_dlq` None) and no Standard execution to list or redrive: the source DLQ is where failures wait."""

    stack_name: str
    source_queue: sqs.IQueue
    source_dlq: sqs.IQueue
    failure_dlq: sqs.IQueue | None
    watched_queues: tuple[sqs.IQueue, ...]  # every queue `status` reports, the ones above included
    state_machine: sfn.StateMachine
    pipe_arn: str
    key: kms.IKey
    deliveries_table: dynamodb.ITable
    tickets: bool = False  # OpsCenter tickets: `failures discard` resolves a discarded message's ticket


class OperatorPolicy(Construct):
    """`.policy`: attach it to the operators' role or group. Exactly ff-ops' calls, on this stack's resources: in
    REQUEST_RESPONSE mode those of `status` and `source-dlq redrive`, the only commands that apply there."""

    def __init__(self, scope: Construct, construct_id: str, *, resources: OperatedResources) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        r = resources
        statements = [
            _allow(
                "FindTheStack",
                ["cloudformation:DescribeStacks"],
                [stack.format_arn(service="cloudformation", resource="stack", resource_name=f"{r.stack_name}/*")],
            ),
            _allow("ReadQueueDepths", READ_QUEUE, [q.queue_arn for q in r.watched_queues]),
            _allow("RedriveSourceDlq", REDRIVE_SOURCE_DLQ, [r.source_dlq.queue_arn]),
            _allow("ListTheSourceDlq", LIST_SOURCE_DLQ, [r.source_dlq.queue_arn]),
            _allow("SendRedrivenMessages", SEND_TO_SOURCE, [r.source_queue.queue_arn]),
            _allow("ReadPipeState", ["pipes:DescribePipe"], [r.pipe_arn]),
            # GetMetricData has no resource-level permissions (Service Authorization Reference: Resource "*").
            _allow("ReadMetrics", ["cloudwatch:GetMetricData"], ["*"]),
            iam.PolicyStatement(
                sid="UseTheQueueKeyThroughSqs",
                actions=QUEUE_KEY,
                resources=[r.key.key_arn],
                conditions={"StringEquals": {"kms:ViaService": f"sqs.{stack.region}.{stack.url_suffix}"}},
            ),
        ]
        if r.failure_dlq is not None:
            statements += self._fire_and_forget_statements(stack, r, r.failure_dlq)
        self.policy = iam.ManagedPolicy(
            self,
            "Policy",
            description=f"Operate the {r.stack_name} fire-and-forget pipeline with ff-ops (read, redrive)",
            statements=statements,
        )
        acknowledge(
            self.policy,
            "AwsSolutions-IAM5[Resource::*]",
            "cloudwatch:GetMetricData and cloudwatch:ListMetrics support no resource-level permissions; they only "
            "read metrics",
        )
        acknowledge(
            self.policy,
            f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:cloudformation:{_region_and_account(stack)}:"
            f"stack/{r.stack_name}/*]",
            "a stack's ARN ends in an id CloudFormation generates; the pattern is this one stack name",
        )
        if r.tickets:
            acknowledge(
                self.policy,
                f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:ssm:{_region_and_account(stack)}:opsitem/*]",
                "UpdateOpsItem acts on an OpsItem's ARN, whose id OpsCenter generates; only this account's and "
                "region's",
            )
        if r.failure_dlq is not None:
            machine_id = stack.get_logical_id(r.state_machine.node.default_child)  # type: ignore[arg-type]
            acknowledge(
                self.policy,
                f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:states:{_region_and_account(stack)}:"
                f"execution:<{machine_id}.Name>:*]",
                "RedriveExecution, DescribeExecution and GetExecutionHistory act on execution ARNs, whose "
                "names are generated; the pattern is this one state machine's executions only",
            )

    @staticmethod
    def _fire_and_forget_statements(stack: Stack, r: OperatedResources,
                                    failure_dlq: sqs.IQueue) -> list[iam.PolicyStatement]:
        """The failure DLQ, the Standard executions, the healing metrics and the Reconciler's claims."""
        # RedriveExecution, DescribeExecution and GetExecutionHistory act on the execution ARN
        # (execution:<stateMachineName>:<executionName>), not on the state machine.
        executions = stack.format_arn(
            service="states",
            resource="execution",
            resource_name=f"{r.state_machine.state_machine_name}:*",
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
        return [
            _allow("ReadAndRedriveFailureDlq", READ_FAILURE_DLQ, [failure_dlq.queue_arn]),
            _allow("ListExecutions", LIST_EXECUTIONS, [r.state_machine.state_machine_arn]),
            _allow("InspectAndRedriveExecutions", ON_EXECUTIONS, [executions]),
            # `status` finds the healing functions' counts by name and `service` dimension (no output names their
            # namespace); ListMetrics has no resource-level permissions either.
            _allow("FindHealingMetrics", ["cloudwatch:ListMetrics"], ["*"]),
            _allow("ReadReconcilerClaims", READ_CLAIMS, [r.deliveries_table.table_arn]),
            _row_update("LinkRedrivenMessages", r.deliveries_table, REDRIVE_LINK_ATTRIBUTES),
            *_ticket_statements(stack, r),
            iam.PolicyStatement(
                sid="DecryptTheClaimsThroughDynamoDb",
                actions=["kms:Decrypt"],
                resources=[r.key.key_arn],
                conditions={"StringEquals": {"kms:ViaService": f"dynamodb.{stack.region}.{stack.url_suffix}"}},
            ),
            iam.PolicyStatement(
                sid="WriteTheLinksThroughDynamoDb",
                actions=["kms:GenerateDataKey"],
                resources=[r.key.key_arn],
                conditions={"StringEquals": {"kms:ViaService": f"dynamodb.{stack.region}.{stack.url_suffix}"}},
            ),
        ]


def _ticket_statements(stack: Stack, r: OperatedResources) -> list[iam.PolicyStatement]:
    """`failures discard` resolves the discarded message's OpsItem and notes it on the caller's row, on the ticket's
    attributes only (runtime/status.py, resolve_ticket)."""
    if not r.tickets:
        return []
    return [
        _allow("ResolveTicketsOfDiscardedMessages", ["ssm:UpdateOpsItem"],
               [stack.format_arn(service="ssm", resource="opsitem", resource_name="*")]),
        _row_update("NoteResolvedTickets", r.deliveries_table, TICKET_ATTRIBUTES),
    ]


def _region_and_account(stack: Stack) -> str:
    """How cdk-nag spells the ARN's region and account: the pseudo parameters of an environment-agnostic stack, the
    values of a stack bound to an environment."""
    region = "<AWS::Region>" if Token.is_unresolved(stack.region) else stack.region
    account = "<AWS::AccountId>" if Token.is_unresolved(stack.account) else stack.account
    return f"{region}:{account}"


def _row_update(sid: str, table: dynamodb.ITable, attributes: tuple[str, ...]) -> iam.PolicyStatement:
    """UpdateItem on the table that touches `attributes` only and returns nothing
    (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/specifying-conditions.html)."""
    return iam.PolicyStatement(
        sid=sid, actions=UPDATE_ROW, resources=[table.table_arn],
        conditions={"ForAllValues:StringEquals": {"dynamodb:Attributes": list(attributes)},
                    "StringEqualsIfExists": {"dynamodb:ReturnValues": ["NONE"]}})


def _allow(sid: str, actions: list[str], resources: list[str]) -> iam.PolicyStatement:
    return iam.PolicyStatement(sid=sid, actions=actions, resources=resources)
