"""Saga invariants over random orders, stock levels and failure points (hypothesis), on the real handlers."""

from __future__ import annotations

from collections import Counter
from contextlib import ExitStack
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.handlers.account import Account
from tests.handlers.conftest import emulated_account
from tests.handlers.saga import MAX_ATTEMPTS, SagaDriver, faults
from tests.support import events
from tests.support.wide import examples

SKUS = ["SKU-A", "SKU-B", "SKU-C", "SKU-D"]
# Where an attempt can break: business errors by input, or AWS faults at one step that either recover within
# the retries or exhaust them, before or after the write reached DynamoDB. "exhausts:ship:after" is the pivot case:
# the shipment is written, every retry fails, and CancelShipment must undo it.
PLANS = ["ok", "declined", "unserved", "over_limit", "duplicate_delivery"] + [
    f"{mode}:{step}:{when}"
    for step in ("reserve", "charge", "ship")
    for mode, when in (("recovers", "before"), ("recovers", "after"), ("exhausts", "before"), ("exhausts", "after"))
]

lines = st.lists(
    st.tuples(st.sampled_from(SKUS), st.integers(min_value=1, max_value=3)),
    min_size=1,
    max_size=3,
    unique_by=lambda t: t[0],
)
orders = st.lists(st.tuples(lines, st.sampled_from(PLANS)), min_size=1, max_size=4)
stock = st.fixed_dictionaries({sku: st.integers(min_value=0, max_value=6) for sku in SKUS})


def build_order(index: int, items: list[tuple[str, int]], plan: str) -> dict[str, Any]:
    address = {**events.order()["shippingAddress"], "country": "BR" if plan == "unserved" else "JP"}
    token = "tok_decline_do_not_honor" if plan == "declined" else "tok_visa_4242"
    amount = "9000.00" if plan == "over_limit" else "25.00"
    return events.order(
        orderId=f"ord-{index}",
        customerId=f"cust-{index % 2}",
        items=[{"sku": sku, "quantity": quantity} for sku, quantity in items],
        payment={"amount": amount, "currency": "USD", "paymentToken": token},
        shippingAddress=address,
    )


def fault_for(plan: str, account: Account) -> tuple[str, str, str, int, bool] | None:
    if ":" not in plan:
        return None
    mode, step, when = plan.split(":")
    operation, table = {
        "reserve": ("transact_write_items", account.inventory_table),
        "charge": ("put_item", account.payments_table),
        "ship": ("transact_write_items", account.shipments_table),
    }[step]
    times = 1 if mode == "recovers" else MAX_ATTEMPTS
    return operation, "ThrottlingException", table, times, when == "after"


# Plans whose order succeeds when the stock covers it: no business error, and faults the retries absorb. After a
# reserve whose write committed, the retries find the reservation and never write again, so it recovers too.
SUCCEEDING_PLANS = {"ok", "duplicate_delivery", "exhausts:reserve:after"} | {p for p in PLANS if "recovers" in p}


def expected_statuses(initial: dict[str, int], plans: list[tuple[list[tuple[str, int]], str]]) -> dict[str, str]:
    """What each order's saga must end in, from the stock left by the orders before it (they run in sequence)."""
    left = dict(initial)
    statuses = {}
    for index, (items, plan) in enumerate(plans):
        # A failed order gives back whatever it took, so only a succeeding order keeps stock.
        succeeds = plan in SUCCEEDING_PLANS and all(left[sku] >= quantity for sku, quantity in items)
        if succeeds:
            for sku, quantity in items:
                left[sku] -= quantity
        statuses[f"ord-{index}"] = "SUCCEEDED" if succeeds else "FAILED"
    return statuses


@settings(max_examples=examples(15), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(initial=stock, plans=orders)
# The pivot case always runs, whatever hypothesis draws: shipment written, ArrangeShipping exhausted, then undone.
@example(initial=dict.fromkeys(SKUS, 5), plans=[([("SKU-A", 2)], "exhausts:ship:after"), ([("SKU-A", 1)], "ok")])
def test_saga_invariants_hold_for_any_mix_of_orders_and_failures(
    template: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    lambda_context: Any,
    initial: dict[str, int],
    plans: list[tuple[list[tuple[str, int]], str]],
) -> None:
    with emulated_account(template, monkeypatch) as account:
        for sku, units in initial.items():
            account.set_stock(sku, units)
        saga = SagaDriver(lambda_context)
        outcomes = {}
        for index, (items, plan) in enumerate(plans):
            record = events.sqs_record(build_order(index, items, plan), message_id=f"msg-{index}")
            with ExitStack() as stack:
                fault = fault_for(plan, account)
                if fault is not None:
                    operation, code, table, times, after_write = fault
                    stack.enter_context(faults(operation, code, table=table, times=times, after_write=after_write))
                outcomes[f"ord-{index}"] = (saga.run(record, f"arn:exec-{index}"), items)
            if plan == "duplicate_delivery":
                assert saga.run(record, f"arn:exec-{index}-again").status == "DUPLICATE"

        # A good order must succeed: the invariants below would all hold if every order failed.
        assert {order_id: outcome.status for order_id, (outcome, _) in outcomes.items()} == expected_statuses(
            initial, plans
        )
        held: Counter[str] = Counter()
        for order_id, (outcome, items) in outcomes.items():
            if outcome.status == "SUCCEEDED":
                held.update(dict(items))
                charge, shipment, reservation = (
                    account.charge(order_id),
                    account.shipment(order_id),
                    account.reservation(order_id),
                )
                assert charge is not None and charge["status"] == "CHARGED"
                assert shipment is not None and shipment["status"] == "ARRANGED"
                assert reservation is not None and reservation["status"] == "RESERVED"
            else:
                assert outcome.status == "FAILED"
                charge = account.charge(order_id)
                shipment = account.shipment(order_id)
                # Every charge of a failed order is refunded; no active shipment exists for it.
                assert charge is None or charge["status"] == "REFUNDED", (order_id, outcome)
                assert shipment is None or shipment["status"] == "CANCELLED", (order_id, outcome)
        # Stock equals the initial stock minus what the successful orders hold.
        assert {sku: account.stock(sku) for sku in SKUS} == {sku: initial[sku] - held[sku] for sku in SKUS}
