"""Proof by exploration: every interleaving of two or three attempts of one order, with a fault at any step.

Attempts: a producer's resend (same body, new message), a duplicate SQS delivery (same message, second execution,
arriving at any point), redrive copies of a failed message (an interrupted `ff-ops failures redrive` sends two), and
a conflicting resend (same orderId, another body). Bound of the suite: two attempts, or the original plus two redrive
copies, and at most one fault per run. `make explore` runs three attempts and two faults (EXPLORE_FAULTS=2).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from moto.dynamodb.models import dynamodb_backends

from arrange_shipping.handler import handler as arrange_shipping
from cancel_shipment.handler import handler as cancel_shipment
from charge_payment.handler import handler as charge_payment
from refund_payment.handler import handler as refund_payment
from release_inventory.handler import handler as release_inventory
from reserve_inventory.handler import handler as reserve_inventory
from tests.handlers.account import Account
from tests.handlers.books import check_books, waits_for_an_automatic_retry
from tests.handlers.conftest import FakeLambdaContext, emulated_account
from tests.handlers.explorer import (
    DISTINCT_FAULTS,
    Attempt,
    Explorer,
    Fault,
    Run,
    World,
    order_states,
    quiet_handlers,
)
from tests.support import events

HANDLERS = {
    "ReserveInventory": reserve_inventory,
    "ChargePayment": charge_payment,
    "ArrangeShipping": arrange_shipping,
    "CancelShipment": cancel_shipment,
    "RefundPayment": refund_payment,
    "ReleaseInventory": release_inventory,
}
STOCK = {"SKU-A": 5, "SKU-B": 5}
ORDER = events.order(orderId="ord-x", items=[{"sku": "SKU-A", "quantity": 2}, {"sku": "SKU-B", "quantity": 1}])
CONFLICTING = {**ORDER, "items": [{"sku": "SKU-A", "quantity": 3}]}

SCENARIOS: dict[str, list[Attempt]] = {
    "resend": [Attempt("first", "m-1", ORDER), Attempt("resend", "m-2", ORDER)],
    "duplicate-delivery": [Attempt("first", "m-1", ORDER), Attempt("twin", "m-1", ORDER)],
    "interrupted-redrive": [
        Attempt("first", "m-1", ORDER),
        Attempt("redrive-1", "r-1", ORDER, after_failure_of="m-1"),
        Attempt("redrive-2", "r-2", ORDER, after_failure_of="m-1"),
    ],
    "conflict": [Attempt("first", "m-1", ORDER), Attempt("conflict", "m-2", CONFLICTING)],
}
# The suite's fault kinds per scenario. A conflicting body is refused at its first step whoever comes first, so the
# interleavings that matter there are the owner's faults while the other attempt arrives: one fault kind that leaves
# a write behind (LOST) covers them; `make explore` runs every kind on every scenario.
SUITE_FAULTS: dict[str, tuple[Fault, ...]] = dict.fromkeys(SCENARIOS, DISTINCT_FAULTS) | {"conflict": (Fault.LOST,)}
# Bench only (make explore): three attempts at once.
LARGE_SCENARIOS: dict[str, list[Attempt]] = {
    "resend-and-twin": [Attempt("first", "m-1", ORDER), Attempt("twin", "m-1", ORDER), Attempt("resend", "m-2", ORDER)],
    "twin-and-redrive": [
        Attempt("first", "m-1", ORDER),
        Attempt("twin", "m-1", ORDER),
        Attempt("redrive-1", "r-1", ORDER, after_failure_of="m-1"),
    ],
    "conflict-and-resend": [
        Attempt("first", "m-1", ORDER),
        Attempt("conflict", "m-2", CONFLICTING),
        Attempt("resend", "m-3", ORDER),
    ],
}


@contextmanager
def exploring(
    account: Account,
    attempts: list[Attempt],
    max_faults: int,
    check: Any = None,
    kinds: tuple[Fault, ...] = DISTINCT_FAULTS,
    claim_outages: list[str] | None = None,
) -> Iterator[Explorer]:
    states = order_states()
    tables = {
        "inventory": account.inventory_table,
        "reservations": account.reservations_table,
        "payments": account.payments_table,
        "shipments": account.shipments_table,
        "deliveries": account.deliveries_table,
    }
    backend = dynamodb_backends["123456789012"]["us-east-1"]
    context = FakeLambdaContext()

    def reset() -> None:
        for table in backend.tables.values():
            table.items.clear()
        for sku, units in STOCK.items():
            account.set_stock(sku, units)

    def make_world() -> World:
        return World(
            states, HANDLERS, {"DeliveriesTableName": account.deliveries_table}, account.client, context, attempts
        )

    def books(run: Run) -> None:
        check_books(run, account.client, tables, STOCK, claim_outages)
        if check is not None:
            check(run)

    quiet_handlers()
    yield Explorer(make_world, reset, max_faults, books, lambda: backend.tables, kinds)


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_every_interleaving_of_one_orders_attempts_keeps_the_books(
    template: dict[str, Any], monkeypatch: pytest.MonkeyPatch, scenario: str
) -> None:
    seen: dict[str, int] = {"succeeded": 0, "dlq": 0, "faults": 0, "waiting": 0, "announced": 0}

    def tally(run: Run) -> None:
        seen["succeeded"] += any(e.end == "ArrangeShipping" for e in run.executions)
        seen["dlq"] += bool(run.dlq)
        seen["faults"] += bool(run.faults)
        seen["waiting"] += sum(1 for entry in run.dlq if waits_for_an_automatic_retry(entry))
        seen["announced"] += bool(run.announcements)

    with (
        emulated_account(template, monkeypatch) as account,
        exploring(account, SCENARIOS[scenario], max_faults=1, check=tally, kinds=SUITE_FAULTS[scenario]) as explorer,
    ):
        started = time.perf_counter()
        runs = explorer.explore()
        elapsed = time.perf_counter() - started

    print(f"\n{scenario}: {runs} interleavings ({explorer.steps} steps) in {elapsed:.1f} s; {seen}", file=sys.stderr)
    # The exploration reached both outcomes and the faulted runs, so the books were checked on each kind.
    assert runs > 20
    assert seen["succeeded"] > 0 and seen["dlq"] > 0 and seen["faults"] > 0
    # Both kinds of failure record: announced (needs a person), and waiting unannounced for an automatic retry
    # (the conflict scenario's failures are all the business error its second attempt raises).
    assert seen["announced"] > 0 and (seen["waiting"] > 0 or scenario == "conflict")


def test_the_explorer_models_the_asl_it_reads() -> None:
    # The payloads and ClaimFailure are evaluated from the ASL; these are the only paths the evaluator resolves.
    states = order_states()
    for name in ("CancelShipment", "RefundPayment", "ReleaseInventory"):
        assert states[name]["Parameters"]["Payload"] == {
            "record.$": "$$.Execution.Input[0]",
            "executionArn.$": "$$.Execution.Id",
        }
    assert states["ClaimFailure"]["Resource"].endswith(":dynamodb:updateItem")
    assert set(HANDLERS) == {n for n, s in states.items() if s.get("Resource", "").endswith(":lambda:invoke")}
    assert {Fault.CRASH, Fault.LOST, Fault.EXHAUST} <= set(Fault)


def explore_large(template: dict[str, Any], max_faults: int) -> tuple[dict[str, int], list[str]]:
    """For make explore: the suite's two-attempt scenarios with up to `max_faults` faults of the three distinct
    kinds, and the three-attempt scenarios with one fault of every kind (two faults there run for hours).

    Returns the interleavings per scenario, and the runs of the one accepted double fault (books.check_books).
    """
    counts = {}
    claim_outages: list[str] = []
    with pytest.MonkeyPatch.context() as monkeypatch, emulated_account(template, monkeypatch) as account:
        bounds: dict[str, tuple[int, tuple[Fault, ...]]] = dict.fromkeys(SCENARIOS, (max_faults, DISTINCT_FAULTS))
        bounds |= {name: (1, tuple(Fault)) for name in LARGE_SCENARIOS}
        for name, attempts in {**SCENARIOS, **LARGE_SCENARIOS}.items():
            started = time.perf_counter()
            before = len(claim_outages)
            faults, kinds = bounds[name]
            with exploring(account, attempts, faults, kinds=kinds, claim_outages=claim_outages) as explorer:
                counts[name] = explorer.explore()
            print(f"{name}: {counts[name]} interleavings ({explorer.steps} steps) in "
                  f"{time.perf_counter() - started:.0f} s; claim store down after a duplicate's crash: "
                  f"{len(claim_outages) - before}", file=sys.stderr, flush=True)
    return counts, claim_outages
