"""Test drivers: call the handlers the way the state machine does, and inject AWS faults at the client."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from arrange_shipping.handler import handler as arrange_shipping
from cancel_shipment.handler import handler as cancel_shipment
from charge_payment.handler import handler as charge_payment
from common import aws
from common.errors import DuplicateDelivery, DuplicateOrder, SagaError, TransientError
from refund_payment.handler import handler as refund_payment
from release_inventory.handler import handler as release_inventory
from reserve_inventory.handler import handler as reserve_inventory
from tests.support import events

MAX_ATTEMPTS = 5  # the first try plus the ASL Retry on TransientError (MaxAttempts 4)


@dataclass
class Outcome:
    status: str  # SUCCEEDED, FAILED or DUPLICATE
    error: str | None = None
    context: dict[str, Any] | None = None
    compensations: list[dict[str, Any]] = field(default_factory=list)


class SagaDriver:
    """Runs reserve -> charge -> ship and, on a failure, the compensations the ASL runs.

    ArrangeShippingFailed -> CancelShipment -> RefundPayment -> ReleaseInventory; a failure before ArrangeShipping
    starts at RefundPayment.
    """

    def __init__(self, lambda_context: Any) -> None:
        self.context = lambda_context

    def run(self, record: dict[str, Any], execution_arn: str) -> Outcome:
        step = "reserve"
        try:
            context = self._retrying(reserve_inventory, events.reserve_input(record, execution_arn))
            step = "charge"
            context = self._retrying(charge_payment, context)
            step = "ship"
            context = self._retrying(arrange_shipping, context)
        except (DuplicateDelivery, DuplicateOrder) as duplicate:
            return Outcome("DUPLICATE", error=type(duplicate).__name__)
        except (SagaError, TransientError) as error:
            undo = self.compensate(record, execution_arn, shipping_failed=step == "ship")
            return Outcome("FAILED", error=type(error).__name__, compensations=undo)
        return Outcome("SUCCEEDED", context=context)

    def compensate(self, record: dict[str, Any], execution_arn: str, *, shipping_failed: bool) -> list[dict[str, Any]]:
        undo = events.compensation_input(record, execution_arn)
        steps = [cancel_shipment] if shipping_failed else []
        return [self._retrying(step, undo) for step in [*steps, refund_payment, release_inventory]]

    def _retrying(self, handler: Callable[[dict[str, Any], Any], dict[str, Any]], event: dict[str, Any]) -> Any:
        for attempt in range(1, MAX_ATTEMPTS + 1):
            try:
                # A round trip through JSON, as Step Functions passes state: nothing non-serializable may leak.
                return json.loads(json.dumps(handler(json.loads(json.dumps(event)), self.context)))
            except TransientError:
                if attempt == MAX_ATTEMPTS:
                    raise
        raise AssertionError("unreachable")


@contextmanager
def faults(
    operation: str, code: str, *, table: str | None = None, times: int = 1, after_write: bool = False
) -> Iterator[Counter[str]]:
    """Make the next ``times`` calls of a DynamoDB ``operation`` (on ``table``) fail with error ``code``.

    ``after_write`` lets the first faulted call reach DynamoDB, like a response lost after the write committed;
    later faults fail before the write.
    Yields a counter of the faults raised.
    """
    client = aws.dynamodb()
    real = getattr(client, operation)
    raised: Counter[str] = Counter()

    def faulty(**kwargs: Any) -> Any:
        if raised[code] < times and (table is None or _touches(kwargs, table)):
            raised[code] += 1
            if after_write and raised[code] == 1:
                real(**kwargs)
            status = 500 if code in {"InternalServerError", "ServiceUnavailable"} else 400
            raise ClientError(
                {"Error": {"Code": code, "Message": "injected"}, "ResponseMetadata": {"HTTPStatusCode": status}},
                operation,
            )
        return real(**kwargs)

    setattr(client, operation, faulty)
    try:
        yield raised
    finally:
        setattr(client, operation, real)


def _touches(kwargs: dict[str, Any], table: str) -> bool:
    if kwargs.get("TableName") == table:
        return True
    actions = kwargs.get("TransactItems", [])
    return any(next(iter(action.values())).get("TableName") == table for action in actions)


def emitted_metrics(stdout: str) -> Counter[str]:
    """Sum of every EMF metric the handlers printed (Powertools Metrics writes EMF JSON lines to stdout)."""
    totals: Counter[str] = Counter()
    for line in stdout.splitlines():
        if not line.startswith("{") or '"_aws"' not in line:
            continue
        document = json.loads(line)
        for directive in document["_aws"]["CloudWatchMetrics"]:
            for metric in directive["Metrics"]:
                value = document[metric["Name"]]
                totals[metric["Name"]] += int(sum(value) if isinstance(value, list) else value)
    return totals
