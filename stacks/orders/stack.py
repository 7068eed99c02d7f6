"""The order example: the order saga's tasks and tables, run by one FireAndForgetPipeline."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from constructs import Construct

from fire_and_forget.construct import (
    CallbackEntryPoint,
    FireAndForgetPipeline,
    MessagingKey,
    PipelineSettings,
    Workflow,
)
from fire_and_forget.construct import render_definition as render_workflow
from stacks.config import AppConfig, ConfigError
from stacks.orders.tasks import ORDER_METRICS, SagaTasks

ASL_FILE = Path(__file__).resolve().parents[2] / "statemachines" / "orders" / "order_saga.asl.json"
# The undo steps, in the order the saga runs them (the reverse of the steps they undo).
COMPENSATIONS = ("CancelShipment", "RefundPayment", "ReleaseInventory")
# Which compensation undoes which step: the reconciler runs them, last step first, for an execution that stopped
# outside the failure tail (timed out, aborted, or failed inside the tail).
UNDO = {"ReserveInventory": "ReleaseInventory", "ChargePayment": "RefundPayment", "ArrangeShipping": "CancelShipment"}
# `make smoke` stocks one item of its own (SMOKE-<run id>) in the inventory table and deletes it afterwards.
SMOKE_STOCK = ["dynamodb:PutItem", "dynamodb:DeleteItem"]
CLAIMS_DELIVERY = "ReserveInventory"
# The steps that tell an order's caller how far it went (accepted, reserved, charged, awaiting carrier, shipped), each
# on its message's row (fire_and_forget.runtime.status): BookCarrier only where the deployment has it.
REPORTS_PROGRESS = ("ReserveInventory", "ChargePayment", "BookCarrier", "ArrangeShipping")
# The step that waits for the carrier's own answer (ff:carrierConfirmation), and what a carrier's failure may say.
BOOK_CARRIER = "BookCarrier"
CARRIER_ERRORS = ("CarrierDeclined",)


def left_out(config: AppConfig | PipelineSettings) -> tuple[str, ...]:
    """The optional states of the saga file this deployment goes without."""
    return () if isinstance(config, AppConfig) and config.carrier_confirmation else (BOOK_CARRIER,)


def carrier_timeout_seconds() -> int:
    """How long the saga waits for the carrier: BookCarrier's TimeoutSeconds in the saga file."""
    seconds: int = json.loads(ASL_FILE.read_text(encoding="utf-8"))["States"][BOOK_CARRIER]["TimeoutSeconds"]
    return seconds


# What the rest of the saga gets besides the carrier's wait: the execution timeout it has without the step.
REST_OF_THE_SAGA_MINUTES = 60


def check_carrier_wait(config: AppConfig, wait_seconds: int) -> None:
    """The execution must outlast BookCarrier's wait (`wait_seconds`) and leave the rest of the saga its hour, or it
    would time out, uncaught, while the carrier still has time: refused with the key to raise (the construct's own
    check would say it in the workflow's terms, and only for the wait itself)."""
    wait_minutes = -(-wait_seconds // 60)
    if config.execution_timeout_minutes < wait_minutes + REST_OF_THE_SAGA_MINUTES:
        raise ConfigError([
            f"ff:executionTimeoutMinutes: must be longer than the {wait_minutes} minutes ff:carrierConfirmation "
            f"waits for the carrier (BookCarrier's TimeoutSeconds), {wait_minutes + REST_OF_THE_SAGA_MINUTES} or more "
            f"(got {config.execution_timeout_minutes})"])


def render_definition(config: PipelineSettings) -> dict[str, Any]:
    """The order saga's definition as deployed with `config` (the failure tail included, placeholders unfilled)."""
    return render_workflow(ASL_FILE, config, compensations=COMPENSATIONS, claims_delivery=CLAIMS_DELIVERY,
                           leave_out=left_out(config))


class OrderStack(Stack):
    """SQS -> Pipe (FIRE_AND_FORGET) -> order saga -> the pipeline's failure tail; the tables and the tasks; with
    ff:carrierConfirmation, the carrier's inbox and the entry point its answers come through."""

    def __init__(self, scope: Construct, construct_id: str, *, config: AppConfig, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        carrier_wait = carrier_timeout_seconds()
        if config.carrier_confirmation:
            check_carrier_wait(config, carrier_wait)
        # One key for the tables and the pipeline's queues and topic: the orders hold addresses and payment tokens.
        key = MessagingKey(self, "MessagingKey", settings=config).key
        tasks = SagaTasks(self, "SagaTasks", config=config, key=key, carrier_timeout_seconds=carrier_wait)
        carrier = self._carrier_answers(config, tasks, key) if config.carrier_confirmation else None
        self.pipeline = FireAndForgetPipeline(
            self,
            "Pipeline",
            name="orders",
            message_key="orderId",
            workflow=Workflow(
                title="Order saga",
                definition_file=ASL_FILE,
                functions=tasks.functions,
                claims_delivery=CLAIMS_DELIVERY,
                compensations=COMPENSATIONS,
                undo=UNDO,
                leave_out=left_out(config),
                reports_progress=tuple(state for state in REPORTS_PROGRESS if state in tasks.functions),
            ),
            metrics=ORDER_METRICS,
            settings=config,
            key=key,
            layer=tasks.layer,
            outputs={f"{name}TableName": table.table_name for name, table in tasks.tables.items()},
        )
        self._let_operators_smoke_test(tasks)
        if carrier is not None:
            carrier.answer_for(self.pipeline)

    def _carrier_answers(self, config: AppConfig, tasks: SagaTasks, key: kms.IKey) -> CallbackEntryPoint:
        """The entry point the carrier answers through; BookCarrier keeps its token in the entry point's table."""
        answerers = [iam.ArnPrincipal(config.carrier_answerer_arn)] if config.carrier_answerer_arn else []
        carrier = CallbackEntryPoint(self, "CarrierAnswers", title="Carrier", settings=config, key=key,
                                     layer=tasks.layer, accepted_errors=CARRIER_ERRORS, answerers=answerers)
        carrier.grant_hand_over(tasks.functions[BOOK_CARRIER])
        assert tasks.carrier_requests is not None
        for principal in answerers:
            tasks.carrier_requests.grant_consume_messages(principal)
        return carrier

    def _let_operators_smoke_test(self, tasks: SagaTasks) -> None:
        """`make smoke` sends a real order through, so it stocks the one sku that order buys, and only that."""
        policy = self.pipeline.operator_policy
        policy.add_statements(
            iam.PolicyStatement(sid="StockTheSmokeItem", actions=SMOKE_STOCK,
                                resources=[tasks.tables["Inventory"].table_arn]),
            iam.PolicyStatement(
                sid="UseTheKeyThroughDynamoDbForTheSmokeItem",
                actions=["kms:Decrypt", "kms:GenerateDataKey"],
                resources=[self.pipeline.key.key_arn],
                conditions={"StringEquals": {"kms:ViaService": f"dynamodb.{self.region}.{self.url_suffix}"}},
            ),
        )
