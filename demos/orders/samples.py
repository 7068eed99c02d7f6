"""Sample orders of every kind the pipeline must handle, and the inventory they draw on."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

# Stock the rehearsal seeds; OUT_OF_STOCK_SKU has none, so any order for it fails ReserveInventory.
CATALOG = {"SKU-RED-MUG": 10_000, "SKU-TEA-100G": 10_000, "SKU-KETTLE": 10_000, "SKU-SPOON": 10_000}
OUT_OF_STOCK_SKU = "SKU-SOLD-OUT"
UNSERVED_COUNTRY = "AQ"  # Antarctica: not in the served countries, so ArrangeShipping refuses it
DECLINED_TOKEN = "tok_decline_insufficient_funds"


class OrderKind(StrEnum):
    """What should become of an order, and why."""

    VALID = "valid"
    OUT_OF_STOCK = "out_of_stock"
    DECLINED = "declined"
    UNSERVED = "unserved"
    MALFORMED = "malformed"


@dataclass(frozen=True)
class SampleOrder:
    """A message body to send, the kind it was made as, and its order id (None when malformed)."""

    kind: OrderKind
    body: str
    order_id: str | None


def seed_inventory(dynamodb: Any, table_name: str, catalog: dict[str, int] | None = None) -> None:
    """Put the catalog's stock levels into the inventory table (what a stock system would have done)."""
    for sku, available in (catalog or CATALOG).items():
        dynamodb.put_item(TableName=table_name, Item={"sku": {"S": sku}, "available": {"N": str(available)}})
    dynamodb.put_item(TableName=table_name, Item={"sku": {"S": OUT_OF_STOCK_SKU}, "available": {"N": "0"}})


def make_order(kind: OrderKind, number: int, rng: random.Random) -> SampleOrder:
    """One order of the given kind; the same number and random state give the same order."""
    order_id = f"ord-{number:06d}"
    if kind is OrderKind.MALFORMED:
        return SampleOrder(kind, rng.choice(_MALFORMED), None)
    skus = rng.sample(sorted(CATALOG), k=rng.randint(1, 3))
    items = [{"sku": sku, "quantity": rng.randint(1, 3)} for sku in skus]
    if kind is OrderKind.OUT_OF_STOCK:
        items.append({"sku": OUT_OF_STOCK_SKU, "quantity": 1})
    order = {
        "orderId": order_id,
        "customerId": f"cust-{rng.randint(1, 500):04d}",
        "items": items,
        "payment": {
            "amount": f"{rng.randint(5, 400)}.{rng.randint(0, 99):02d}",
            "currency": rng.choice(["USD", "EUR", "GBP"]),
            "paymentToken": DECLINED_TOKEN if kind is OrderKind.DECLINED else f"tok_visa_{rng.randint(1000, 9999)}",
        },
        "shippingAddress": {
            "name": "Ada Lovelace",
            "line1": f"{rng.randint(1, 99)} St James's Square",
            "city": "London",
            "postalCode": "SW1Y 4JH",
            "country": UNSERVED_COUNTRY if kind is OrderKind.UNSERVED else rng.choice(["GB", "JP", "US", "DE"]),
        },
    }
    return SampleOrder(kind, json.dumps(order), order_id)


# Bodies a careless or hostile producer sends; each must end in the failure DLQ as InvalidOrder.
_MALFORMED = (
    "not json at all",
    "",
    "[]",
    "null",
    '{"orderId": 42}',
    '{"orderId": "ord-x", "items": []}',
    '{"orderId": "ord-x", "customerId": "c", "items": [{"sku": "SKU-RED-MUG", "quantity": -1}]}',
    json.dumps({"orderId": "o" * 5000}),
)
