"""Failure records as the failure tail and the Reconciler write them, for the self-healing views of ff-ops."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from fire_and_forget.runtime.healing_policy import ATTEMPT_ATTRIBUTE, FIRST_MESSAGE_ATTRIBUTE, HealingPolicy
from fire_and_forget.runtime.records import RECORD_KIND

# A policy shaped like the order saga's: ChargePayment retries a throttle, nothing retries OutOfStock.
POLICY = HealingPolicy(
    transient_errors={"ChargePayment": frozenset({"PaymentProviderUnavailable"})},
    max_attempts=3,
    cool_off_seconds=300,
    max_cool_off_seconds=3600,
)


def record_body(
    order_id: str,
    *,
    error: str,
    state: str,
    failed_at: datetime,
    attempt: int | None = None,
    manual_repair: bool = False,
    reconciliation: dict[str, Any] | None = None,
    message_id: str | None = None,
    execution_arn: str | None = None,
    cause: str | None = None,
) -> str:
    """The DLQ message body: `fire-and-forget.failure.v1`, with the redrive attributes of an automatic redrive."""
    attributes: dict[str, Any] = {"tenant": {"dataType": "String", "stringValue": "acme"}}
    if attempt is not None:
        attributes[ATTEMPT_ATTRIBUTE] = {"dataType": "Number", "stringValue": str(attempt)}
        attributes[FIRST_MESSAGE_ATTRIBUTE] = {"dataType": "String", "stringValue": f"first-{order_id}"}
    document: dict[str, Any] = {
        "kind": RECORD_KIND,
        "record": {
            "messageId": message_id or f"msg-{order_id}",
            "body": json.dumps({"orderId": order_id}),
            "messageAttributes": attributes,
        },
        "failure": {"error": error, "cause": cause or f"{error} for {order_id}", "state": state},
        "compensation": {"required": False},
        "manualRepair": manual_repair,
        "executionArn": execution_arn or f"arn:aws:states:us-east-1:123456789012:execution:Saga:{order_id}",
        "failedAt": failed_at.isoformat().replace("+00:00", "Z"),
    }
    if reconciliation is not None:
        document["reconciliation"] = reconciliation
    return json.dumps(document)


def reconciliation(status: str = "TIMED_OUT") -> dict[str, Any]:
    return {
        "status": status,
        "via": "event",
        "reconciledAt": "2026-12-01T10:05:00Z",
        "reason": "the execution timed out",
        "compensated": ["ReleaseInventory"],
    }
