"""Reach a saga state quickly: run the earlier steps for real so later-step tests start from stored state."""

from __future__ import annotations

from typing import Any

from arrange_shipping.handler import handler as arrange_shipping
from charge_payment.handler import handler as charge_payment
from reserve_inventory.handler import handler as reserve_inventory
from tests.handlers.account import Account
from tests.support import events

ARN = events.load("reserve_inventory_input")["executionArn"]  # the execution compensation_input names by default


def reserved(account: Account, lambda_context: Any, record: dict[str, Any], arn: str = ARN) -> dict[str, Any]:
    account.stock_up(SKU_RED_MUG=5, SKU_TEA_100G=3)
    context: dict[str, Any] = reserve_inventory(events.reserve_input(record, arn), lambda_context)
    return context


def charged(account: Account, lambda_context: Any, record: dict[str, Any]) -> dict[str, Any]:
    context: dict[str, Any] = charge_payment(reserved(account, lambda_context, record), lambda_context)
    return context


def shipped(account: Account, lambda_context: Any, record: dict[str, Any]) -> dict[str, Any]:
    context: dict[str, Any] = arrange_shipping(charged(account, lambda_context, record), lambda_context)
    return context
