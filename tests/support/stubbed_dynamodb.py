"""A DynamoDB client on botocore's Stubber, with the adapters' clocks fixed: exact requests and staged answers."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from common import inventory, order_ledger, payments, shipments, status_change
from fire_and_forget.runtime import deliveries

NOW = 1_767_225_600
# The order and attempt every stubbed request names, and the cancellation reasons TransactWriteItems reports.
ORDER, ATTEMPT = "ord-1", "msg-1"
CCF = {"Code": "ConditionalCheckFailed"}
NONE = {"Code": "None"}


def charge_item(status: str) -> dict[str, Any]:
    """The payments row of ORDER's charge by ATTEMPT, in `status`, as DynamoDB returns it."""
    return {
        "pk": {"S": f"ORDER#{ORDER}"},
        "chargeId": {"S": "ch_1"},
        "attemptId": {"S": ATTEMPT},
        "amount": {"N": "25.00"},
        "currency": {"S": "USD"},
        "status": {"S": status},
    }


def stubbed(monkeypatch: pytest.MonkeyPatch) -> Iterator[Stubber]:
    """Yields the Stubber of a fresh client; every staged response must have been used by the end."""
    clock = SimpleNamespace(time=lambda: NOW + 0.75)  # a fraction, so int() is needed to make a valid N
    for module in (inventory, order_ledger, payments, shipments, status_change, deliveries):
        monkeypatch.setattr(module, "time", clock)
    client = boto3.client("dynamodb", region_name="us-east-1")
    with Stubber(client) as stubber:
        yield stubber
        stubber.assert_no_pending_responses()


def client_of(stub: Stubber) -> Any:
    """The stubbed DynamoDB client (typed Any: boto3 returns a BaseClient to the type checker)."""
    return stub.client
