"""The order example where Lambda's concurrency and DynamoDB's item contention decide, not only StartExecution
(demos/orders/load.py, LIMITS_SMALL; LIMITS_FULL under `make wide`):

- a burst that exhausts Lambda's concurrency: 10 slots (the default 1,000 at 1/100) against invocations of 2 s, 13
  orders started at once (the StartExecution bucket at 1/100) and 3 a second after, so that 18 would run at once;
- a flash sale on one hot item, StartExecution raised to 1,000 a second (1/100: 13 orders start at once, then 10 a
  second, invocations of 0.1 s): each reservation a transaction that holds the SKU's item for 0.05 s and writes two
  units to its partition, which serves 10 a second (1,000 at 1/100).

The checks keep books apart from the accounting and from the models they check: how many invocations ran at once is
counted from each invocation's start on the clock, not from the slots' code; what was reserved, charged and shipped
is read from the tables against the bodies sent.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest

from demos.orders.load import FLASH_SKU, LIMITS_FULL, LIMITS_SMALL, Outcome, run
from demos.orders.samples import CATALOG
from fire_and_forget.rehearsal import Invocation
from tests.support.wide import WIDE

OVERLOAD, CONTENDED = LIMITS_FULL if WIDE else LIMITS_SMALL


@pytest.fixture(scope="module")
def overload(cloud_assembly: Path) -> Outcome:
    return run(cloud_assembly, OVERLOAD, OVERLOAD.readings[0])


@pytest.fixture(scope="module")
def contended(cloud_assembly: Path) -> Outcome:
    return run(cloud_assembly, CONTENDED, CONTENDED.readings[0])


def most_at_once(invocations: list[Invocation], seconds: float) -> int:
    """The most invocations running at one moment, each from its start for `seconds`."""
    starts = sorted(i.started_at for i in invocations if i.started_at is not None)
    span = timedelta(seconds=seconds)
    return max((sum(1 for other in starts if start <= other < start + span) for start in starts), default=0)


def reserved_units(outcome: Outcome) -> Counter[str]:
    """Units each SKU lost, from the inventory table against the stock seeded."""
    seeded = {**CATALOG, FLASH_SKU: outcome.scenario.stock or 0}
    return Counter({item["sku"]: seeded[item["sku"]] - int(item["available"])
                    for item in outcome.tables["InventoryTableName"] if item["sku"] in seeded})


def test_an_exhausted_lambda_throttles_and_every_order_still_succeeds_once(overload: Outcome) -> None:
    result, limit = overload.result, OVERLOAD.concurrency
    assert limit is not None and limit.limit == 10
    assert overload.lambda_throttles > 0  # the concurrency bound: invocations were refused
    assert most_at_once(overload.invocations, OVERLOAD.invocation_seconds) <= limit.limit
    assert result.quiet and result.ledger.balanced
    # Nothing waits for a person because of load alone: every order succeeded, none was announced.
    assert result.places == {"succeeded": result.messages}
    assert sum(fate.announcements for fate in result.ledger.fates.values()) == 0
    # The books from the tables: each order charged once and standing charged, shipped once, its units reserved once.
    orders = {json.loads(body)["orderId"]: json.loads(body) for body in overload.bodies.values()}
    payments = overload.tables["PaymentsTableName"]
    assert sorted(p["pk"] for p in payments if p["status"] == "CHARGED") == sorted(f"ORDER#{o}" for o in orders)
    assert sorted(s["orderId"] for s in overload.tables["ShipmentsTableName"] if s["status"] == "ARRANGED") \
        == sorted(orders)
    wanted: Counter[str] = Counter()
    for order in orders.values():
        for line in order["items"]:
            wanted[line["sku"]] += int(line["quantity"])
    assert reserved_units(overload) == wanted


def test_throttles_are_retried_apart_from_other_transient_errors_and_cost_transitions(overload: Outcome) -> None:
    # Each throttled attempt is one more billed transition (a retry); none is an invocation of the function.
    result = overload.result
    assert result.usage.transitions > 3 * result.messages
    ran = Counter(invocation.task for invocation in overload.invocations)
    assert ran["ChargePayment"] >= result.messages and ran["ArrangeShipping"] >= result.messages


def test_reservations_on_one_hot_item_are_retried_and_exactly_the_stock_is_sold(contended: Outcome) -> None:
    result, stock = contended.result, CONTENDED.stock
    assert stock is not None and result.messages > stock
    assert contended.conflicts > 0  # transactions on the SKU's item met and were cancelled (TransactionConflict)
    assert contended.partition_throttles > 0  # and its partition ran out of write units (ThrottlingError)
    retried = [i for i in contended.invocations if i.task == "ReserveInventory" and i.error_type == "TransientError"]
    assert len(retried) >= contended.conflicts + contended.partition_throttles  # each one a transient error, retried
    assert (contended.sold, contended.left, contended.charged) == (stock, 0, stock)  # none oversold, each paid once
    assert result.places == {"succeeded": stock, "failure DLQ": result.messages - stock}
    errors = Counter(fate.error for fate in result.ledger.fates.values() if fate.error)
    assert errors == {"OutOfStock": result.messages - stock}  # a conflict never ends an order
    assert result.quiet and result.ledger.balanced
    assert reserved_units(contended)[FLASH_SKU] == stock
