"""The saga's invariants over the tables, checked after a run: what succeeded holds, what failed was undone."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from demos.orders.samples import CATALOG
from fire_and_forget.rehearsal import Ledger, Place, Rehearsal


def saga_violations(aws: Rehearsal, ledger: Ledger, bodies: dict[str, str],
                    initial_stock: dict[str, int] | None = None) -> list[str]:
    """Every broken invariant, described; empty when the books balance.

    - stock of every sku == initial stock - what the succeeded orders hold;
    - every charge of an order that did not succeed is refunded;
    - no order that did not succeed has an active shipment.
    Orders flagged for manual repair (a failed compensation, a timed-out or aborted execution) are exempt, and so
    are the skus they touch: their undoing is known to be incomplete, and the operator is told so.
    """
    succeeded, failed, held, unknown_skus = _classify(ledger, bodies)
    stock = initial_stock or CATALOG
    problems = []
    for item in aws.items("InventoryTableName"):
        sku = item["sku"]
        if sku in stock and sku not in unknown_skus and int(item["available"]) != stock[sku] - held[sku]:
            problems.append(f"{sku}: {item['available']} in stock, expected {stock[sku] - held[sku]}")
    only_failed = failed - succeeded
    for charge in aws.items("PaymentsTableName"):
        order_id = str(charge["pk"]).removeprefix("ORDER#")
        if order_id in only_failed and charge.get("status") != "REFUNDED":
            problems.append(f"{order_id}: charge {charge.get('status')} although the order failed")
    for shipment in aws.items("ShipmentsTableName"):
        if shipment["orderId"] in only_failed and shipment.get("status") != "CANCELLED":
            problems.append(f"{shipment['orderId']}: shipment {shipment.get('status')} although the order failed")
    return problems


def _classify(ledger: Ledger, bodies: dict[str, str]) -> tuple[set[str], set[str], Counter[str], set[str]]:
    """Order ids that succeeded and failed, the stock succeeded orders hold, and skus with unknown holdings."""
    succeeded: set[str] = set()
    failed: set[str] = set()
    held: Counter[str] = Counter()
    unknown_skus: set[str] = set()
    for message_id, fate in ledger.fates.items():
        order = _order(bodies.get(message_id, ""))
        if order is None:
            continue
        if fate.manual_repair:
            unknown_skus.update(item["sku"] for item in order["items"])
        elif fate.place is Place.SUCCEEDED:
            if order["orderId"] not in succeeded:  # a producer's resend of the same order holds nothing more
                held.update({item["sku"]: item["quantity"] for item in order["items"]})
            succeeded.add(order["orderId"])
        else:
            failed.add(order["orderId"])
    return succeeded, failed, held, unknown_skus


def _order(body: str) -> dict[str, Any] | None:
    try:
        order = json.loads(body)
    except ValueError:
        return None
    return order if isinstance(order, dict) and isinstance(order.get("items"), list) else None
