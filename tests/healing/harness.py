"""Builds the healing explorer over an emulated account: the tables from the synthesized template, the Reconciler's
and the Redriver's settings from their functions' environments in the same template, the ASL as deployed."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import pytest

from common import aws, idempotency
from fire_and_forget.healing.reconciliation import ReconcilerSettings
from fire_and_forget.runtime.healing_policy import HealingPolicy
from tests.handlers.conftest import FakeLambdaContext, emulated_account
from tests.handlers.explorer import order_states, quiet_handlers
from tests.healing.executions import Message
from tests.healing.explorer import HealingExplorer
from tests.healing.gates import Crash, Runner
from tests.healing.services import ACCOUNT, REGION, STATE_MACHINE_ARN, Gated, Services, virtual_sqs_clock
from tests.healing.world import Config
from tests.support import events

TASK_HANDLERS = {
    "ReserveInventory": "reserve_inventory.handler.handler",
    "ChargePayment": "charge_payment.handler.handler",
    "ArrangeShipping": "arrange_shipping.handler.handler",
    "CancelShipment": "cancel_shipment.handler.handler",
    "RefundPayment": "refund_payment.handler.handler",
    "ReleaseInventory": "release_inventory.handler.handler",
}
RECONCILER = "fire_and_forget.healing.reconciler.handler"
STOCK = {"SKU-A": 5, "SKU-B": 5}
ORDER = events.order(orderId="ord-x", items=[{"sku": "SKU-A", "quantity": 2}, {"sku": "SKU-B", "quantity": 1}])
FIRST = Message("first", "m-1", ORDER)


def function_arn(logical_id: str) -> str:
    return f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{logical_id}"


def _resolve(value: Any, refs: dict[str, str]) -> str:
    """A function environment value: a string, a Ref to one of `refs`, or an Fn::Join over GetAtt of functions."""
    if isinstance(value, str):
        return value
    if "Ref" in value:
        return refs[value["Ref"]]
    if "Fn::GetAtt" in value:
        return function_arn(value["Fn::GetAtt"][0])
    separator, parts = value["Fn::Join"]
    return str(separator).join(_resolve(part, refs) for part in parts)


def _function(template: dict[str, Any], handler: str) -> dict[str, Any]:
    (props,) = [r["Properties"] for r in template["Resources"].values()
                if r["Type"] == "AWS::Lambda::Function" and r["Properties"].get("Handler") == handler]
    return dict(props)


class HandlerClient:
    """The handlers' DynamoDB client (common.aws.dynamodb): gated when a late invocation is explored call by call,
    direct otherwise (a whole invocation is then one step)."""

    def __init__(self, runner: Runner, client: Any) -> None:
        self._runner = runner
        self._client = client
        self._gated = Gated(runner, "dynamodb", client, lambda op, kw: f"{kw.get('TableName', 'transaction')}"[:24])

    def __getattr__(self, name: str) -> Any:
        actor = self._runner.current
        if actor is not None and actor.state == "dead":
            raise Crash
        if actor is not None and actor.spec.get("per_call") and not self._runner.performing:
            return getattr(self._gated, name)
        return getattr(self._client, name)


@contextmanager
def healing_explorer(template: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> Iterator[HealingExplorer]:
    with emulated_account(template, monkeypatch) as account:
        runner = Runner()
        handler_client = HandlerClient(runner, account.client)

        def dynamodb() -> Any:
            return handler_client

        dynamodb.cache_clear = lambda: None  # type: ignore[attr-defined]  # common.aws.reset() at the end
        monkeypatch.setattr(aws, "dynamodb", dynamodb)
        idempotency.reset()
        functions = {function_arn(logical): r["Properties"]["Handler"]
                     for logical, r in template["Resources"].items() if r["Type"] == "AWS::Lambda::Function"}
        tables = {"deliveries": account.deliveries_table, "inventory": account.inventory_table,
                  "reservations": account.reservations_table, "payments": account.payments_table,
                  "shipments": account.shipments_table, "orders": account.orders_table}
        services = Services(runner, account.client, tables, functions)
        services.lambda_context = FakeLambdaContext()
        variables = _function(template, RECONCILER)["Environment"]["Variables"]
        refs = {next(v["Ref"] for k, v in variables.items() if k == key): value for key, value in {
            "STATE_MACHINE_ARN": STATE_MACHINE_ARN, "FAILURE_DLQ_URL": services.dlq_url,
            "ALERTS_TOPIC_ARN": services.topic_arn, "DELIVERIES_TABLE_NAME": account.deliveries_table}.items()}
        environment = {key: _resolve(value, refs) for key, value in variables.items()} | {"AWS_REGION": REGION}
        substitutions = {"DeliveriesTableName": account.deliveries_table, "FailureDlqUrl": services.dlq_url,
                         "AlertsTopicArn": services.topic_arn, "PipelineName": environment["PIPELINE_NAME"]}
        config = Config(
            states=order_states(), substitutions=substitutions, handlers=dict(TASK_HANDLERS),
            settings=ReconcilerSettings.from_environment(environment),
            policy=HealingPolicy.from_environment(environment),
            lookback=timedelta(minutes=int(environment["SWEEP_LOOKBACK_MINUTES"])),
            longest_run=timedelta(seconds=int(environment["EXECUTION_TIMEOUT_SECONDS"])),
            order_id=str(ORDER["orderId"]))
        quiet_handlers()
        for name in ("orders-healing", "healing"):
            logging.getLogger(name).setLevel(logging.CRITICAL)
        with virtual_sqs_clock(lambda: services.model):
            yield HealingExplorer(services, config, STOCK, FIRST, account.set_stock, tables)

