"""`smoke`: three orders through a deployed stack, every outcome the pattern promises checked, then cleaned up.

The run sends a valid order, an invalid one and one that fails after two steps (its country is served by no
carrier, so ArrangeShipping refuses it and the saga compensates CancelShipment, RefundPayment, ReleaseInventory),
waits for each outcome, and checks it: the valid one succeeded and left no failure record; each failed one has its
failure-DLQ record (right error, right state, the original body unchanged), its alert (NotifyFailure's publish,
with SNS's message id) and exactly the compensations it is owed, in the order the saga runs them.

It creates, and removes, only its own things: one inventory item for a sku of its own (so the valid order does
not draw on real stock), and its failure records, recognised by message id and run id. Other messages it reads in
the failure DLQ are made visible again at once. The orders' rows in the ledger tables (reservation, payment,
shipment) stay, under order ids starting with `smoke-`: they are the audit trail of what the run did.

Between two looks the run calls `pause`; against AWS it sleeps, and the offline rehearsal replaces it with a pump.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import boto3

from demos.orders.smoke_checks import Case, Check, evaluate
from demos.orders.smoke_watch import RECORD_STATE, Tracked, Watch
from fire_and_forget.cli import RETRIES, Clients

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_stepfunctions import SFNClient

    from fire_and_forget.cli.stack import DeployedStack

DEFAULT_TIMEOUT_SECONDS = 300.0
DEFAULT_POLL_SECONDS = 5.0
RUN_ATTRIBUTE = "smokeRun"
CASE_ATTRIBUTE = "smokeCase"
# Executions are dated by Step Functions' clock, the run by this machine's: allow for some skew.
CLOCK_SKEW = timedelta(minutes=5)
# ISO 3166-1 reserves ZZ for user assignment: no country has it, so no deployment serves it.
UNSERVED_COUNTRY = "ZZ"
STOCK = 10


@dataclass(frozen=True)
class SmokeClients:
    sqs: SQSClient
    sfn: SFNClient
    dynamodb: DynamoDBClient


@dataclass(frozen=True)
class SmokeRequest:
    run_id: str
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS
    poll_seconds: float = DEFAULT_POLL_SECONDS
    country: str = "US"  # where the valid order ships: a served country of the deployment
    visibility_timeout: int = 30


@dataclass
class Cleanup:
    records_deleted: int = 0
    foreign_restored: int = 0  # other messages of the failure DLQ read and made visible again
    sku: str = ""
    sku_removed: bool = False
    left: list[str] = field(default_factory=list)


@dataclass
class SmokeResult:
    run_id: str
    timeout_seconds: float
    elapsed_seconds: float
    timed_out: bool
    orders: list[Tracked]
    checks: list[Check]
    cleanup: Cleanup

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(check.passed for check in self.checks)


def smoke_clients(clients: Clients, profile: str | None) -> SmokeClients:
    """The run's clients: ff-ops' own, plus DynamoDB for the run's inventory item (same region and profile)."""
    session = boto3.Session(region_name=clients.region or None, profile_name=profile)
    return SmokeClients(clients.sqs, clients.sfn, session.client("dynamodb", config=RETRIES))


def pause(seconds: float) -> None:
    """The wait between two looks; the offline tests replace it with one that drives the rehearsal."""
    time.sleep(seconds)


def new_run_id() -> str:
    return uuid.uuid4().hex[:12]


def smoke_bodies(run_id: str, sku: str, country: str) -> dict[Case, str]:
    """The three message bodies; every order id carries the run id."""

    def order(case: Case, ship_to: str) -> str:
        return json.dumps(
            {
                "orderId": f"smoke-{run_id}-{case}",
                "customerId": f"smoke-{run_id}",
                "items": [{"sku": sku, "quantity": 1}],
                "payment": {"amount": "1.00", "currency": "USD", "paymentToken": "tok_smoke_test"},
                "shippingAddress": {
                    "name": "Smoke Test",
                    "line1": "1 Smoke Test Road",
                    "city": "Testville",
                    "postalCode": "00000",
                    "country": ship_to,
                },
            }
        )

    # Invalid on purpose: no items, payment or address, and a field the schema forbids.
    invalid = json.dumps({"orderId": f"smoke-{run_id}-{Case.INVALID}", "smokeRun": run_id})
    return {
        Case.VALID: order(Case.VALID, country),
        Case.INVALID: invalid,
        Case.COMPENSATED: order(Case.COMPENSATED, UNSERVED_COUNTRY),
    }


def run_smoke(
    clients: SmokeClients,
    stack: DeployedStack,
    request: SmokeRequest,
    *,
    wait: Callable[[float], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
    now: datetime | None = None,
    progress: Callable[[list[Tracked], float], None] | None = None,
) -> SmokeResult:
    """Send the three orders, look until each is settled or the timeout passes, check them, clean up."""
    source_url, dlq_url, machine_arn, inventory = stack.require(
        "SourceQueueUrl", "FailureDlqUrl", "StateMachineArn", "InventoryTableName"
    )
    wait = wait or pause  # looked up now, so that a replaced `pause` is the one used
    started = clock()
    deadline = started + request.timeout_seconds
    watch = Watch(
        clients.sfn,
        clients.sqs,
        machine_arn,
        dlq_url,
        RUN_ATTRIBUTE,
        request.run_id,
        since=(now or datetime.now(UTC)) - CLOCK_SKEW,
        visibility_timeout=request.visibility_timeout,
    )
    cleanup = Cleanup(sku=f"SMOKE-{request.run_id.upper()}")
    orders: list[Tracked] = []
    timed_out = False
    _seed(clients.dynamodb, inventory, cleanup.sku)
    try:
        orders = _send(clients.sqs, source_url, request, cleanup.sku)
        while True:
            watch.poll(orders)
            if all(order.settled for order in orders):
                break
            if progress is not None:
                progress(orders, clock() - started)
            remaining = deadline - clock()
            if remaining <= 0:
                timed_out = True
                watch.describe_stuck(orders)
                break
            wait(min(request.poll_seconds, remaining))
    finally:
        _clean_up(clients.dynamodb, inventory, orders, watch, cleanup)
    checks = [check for order in orders for check in evaluate(order, request.timeout_seconds)]
    return SmokeResult(
        request.run_id, request.timeout_seconds, round(clock() - started, 3), timed_out, orders, checks, cleanup
    )


def _seed(dynamodb: DynamoDBClient, table: str, sku: str) -> None:
    """Stock for the run's own sku, so the valid order reserves nothing of the real catalogue."""
    dynamodb.put_item(
        TableName=table,
        Item={"sku": {"S": sku}, "available": {"N": str(STOCK)}},
        ConditionExpression="attribute_not_exists(sku)",
    )


def _send(sqs: SQSClient, queue_url: str, request: SmokeRequest, sku: str) -> list[Tracked]:
    orders = []
    for case, body in smoke_bodies(request.run_id, sku, request.country).items():
        attributes = {RUN_ATTRIBUTE: request.run_id, CASE_ATTRIBUTE: str(case), "source": "ff-ops-smoke"}
        sent = sqs.send_message(
            QueueUrl=queue_url,
            MessageBody=body,
            MessageAttributes={
                name: {"DataType": "String", "StringValue": value} for name, value in attributes.items()
            },
        )
        orders.append(Tracked(str(case), f"smoke-{request.run_id}-{case}", sent["MessageId"], body))
    return orders


def _clean_up(dynamodb: DynamoDBClient, table: str, orders: list[Tracked], watch: Watch, cleanup: Cleanup) -> None:
    """Remove the run's sku unless one of its executions still runs (a late ReleaseInventory would need it)."""
    cleanup.records_deleted, cleanup.foreign_restored = watch.deleted, len(watch.foreign_seen)
    running = [v.arn for o in orders for v in o.executions.values() if not v.ended]
    unfound = [
        o.order_id for o in orders if o.record is None and (v := o.execution) is not None and RECORD_STATE in v.exited
    ]
    if running:
        cleanup.left.append(
            f"inventory item {cleanup.sku}: {len(running)} execution(s) still running; delete it once they end"
        )
    else:
        dynamodb.delete_item(TableName=table, Key={"sku": {"S": cleanup.sku}})
        cleanup.sku_removed = True
    cleanup.left.extend(f"failure record of {order_id}: not found to delete" for order_id in unfound)
