"""The Standard order saga state machine, loaded from statemachines/order_saga.asl.json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from aws_cdk import Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from stacks.compliance import acknowledge
from stacks.config import AppConfig
from stacks.constructs.defaults import state_machine_log_group

ASL_FILE = Path(__file__).resolve().parents[2] / "statemachines" / "order_saga.asl.json"
LAMBDA_INVOKE = "arn:aws:states:::lambda:invoke"
TRANSIENT_ERROR = "TransientError"
COMPENSATIONS = ("CancelShipment", "RefundPayment", "ReleaseInventory")
# The Fail state HandleFailure ends in. The EventBridge rule ignores it: HandleFailure announced it already.
HANDLED_FAILURE_ERROR = "OrderFailed"


def render_definition(config: AppConfig, path: Path = ASL_FILE) -> dict[str, Any]:
    """The ASL file with the deployment's timeouts and transient-error backoff applied.

    Numbers cannot be CloudFormation substitutions (those are strings), so the file holds the defaults and
    this function writes the configured values into every Lambda task and its transient-error retrier.
    """
    definition: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    definition["TimeoutSeconds"] = config.execution_timeout_minutes * 60
    for name, state in definition["States"].items():
        if state.get("Resource") != LAMBDA_INVOKE:
            continue
        state["TimeoutSeconds"] = config.task_timeout_seconds
        for retrier in state.get("Retry", []):
            if TRANSIENT_ERROR in retrier["ErrorEquals"]:
                retrier.update(
                    IntervalSeconds=config.retry.interval_seconds,
                    MaxAttempts=config.retry.compensation_max_attempts if name in COMPENSATIONS
                    else config.retry.max_attempts,
                    BackoffRate=config.retry.backoff_rate,
                    MaxDelaySeconds=config.retry.max_delay_seconds,
                    JitterStrategy="FULL",
                )
    return definition


class OrderSaga(Construct):
    """STANDARD state machine with logging, X-Ray tracing and least-privilege grants to what it calls."""

    state_machine_type = sfn.StateMachineType.STANDARD

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: AppConfig,
        functions: dict[str, lambda_.IFunction],
        failure_dlq: sqs.IQueue,
        alerts_topic: sns.ITopic,
        key: kms.IKey,
        deliveries_table: dynamodb.ITable,
    ) -> None:
        super().__init__(scope, construct_id)
        substitutions = {f"{state}FunctionArn": function.function_arn for state, function in functions.items()}
        substitutions |= {
            "FailureDlqUrl": failure_dlq.queue_url,
            "AlertsTopicArn": alerts_topic.topic_arn,
            "DeliveriesTableName": deliveries_table.table_name,
            "EnvironmentName": config.environment_name,
            "Region": Stack.of(self).region,
        }
        self.log_group = state_machine_log_group(self, "Logs", config=config)
        self.state_machine = sfn.StateMachine(
            self,
            "StateMachine",
            state_machine_type=self.state_machine_type,
            definition_body=sfn.DefinitionBody.from_string(json.dumps(render_definition(config), indent=2)),
            definition_substitutions=substitutions,
            tracing_enabled=True,
            logs=sfn.LogOptions(
                destination=self.log_group,
                level=sfn.LogLevel.ALL,
                include_execution_data=config.include_execution_data,
            ),
        )
        # Hand-written where the L2 grants are wider than the workflow needs: grant_invoke adds every version
        # and alias (`arn:*`), and the queue/topic grants add kms:ReEncrypt* and kms:Encrypt.
        self.state_machine.add_to_role_policy(
            iam.PolicyStatement(
                actions=["lambda:InvokeFunction"], resources=[fn.function_arn for fn in functions.values()]
            )
        )
        self.state_machine.add_to_role_policy(
            iam.PolicyStatement(actions=["sqs:SendMessage"], resources=[failure_dlq.queue_arn])
        )
        self.state_machine.add_to_role_policy(
            iam.PolicyStatement(actions=["sns:Publish"], resources=[alerts_topic.topic_arn])
        )
        # ClaimFailure's conditional put: the first execution of a message to fail records it, once.
        deliveries_table.grant(self.state_machine, "dynamodb:PutItem")
        acknowledge(
            self.state_machine, "AwsSolutions-IAM5[Resource::*]",
            "Only the CloudWatch Logs vended-delivery actions (logs:CreateLogDelivery and friends) and X-Ray "
            "trace writes, which AWS requires on Resource '*'.",
        )
        # SendMessage and Publish to SSE-KMS resources need a data key from the shared key.
        key.grant(self.state_machine, "kms:GenerateDataKey", "kms:Decrypt")
