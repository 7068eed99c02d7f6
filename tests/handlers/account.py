"""Reads and seeds the emulated tables by the names the functions get, so tests assert stored outcomes."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

RESERVE = "reserve_inventory.handler.handler"
CHARGE = "charge_payment.handler.handler"
SHIP = "arrange_shipping.handler.handler"


class Account:
    def __init__(self, client: Any, environments: dict[str, dict[str, str]]) -> None:
        self.client = client
        self.environments = environments
        self.inventory_table = environments[RESERVE]["INVENTORY_TABLE_NAME"]
        self.reservations_table = environments[RESERVE]["RESERVATIONS_TABLE_NAME"]
        self.deliveries_table = environments[RESERVE]["DELIVERIES_TABLE_NAME"]
        self.idempotency_table = environments[RESERVE]["IDEMPOTENCY_TABLE_NAME"]
        self.payments_table = environments[CHARGE]["PAYMENTS_TABLE_NAME"]
        self.shipments_table = environments[SHIP]["SHIPMENTS_TABLE_NAME"]
        self.orders_table = environments[RESERVE]["ORDERS_TABLE_NAME"]

    def stock_up(self, **units: int) -> None:
        """Set ``available`` per sku; keyword names use _ for -, e.g. SKU_RED_MUG=5."""
        for sku, available in units.items():
            self.set_stock(sku.replace("_", "-"), available)

    def set_stock(self, sku: str, available: int) -> None:
        self.client.put_item(
            TableName=self.inventory_table, Item={"sku": {"S": sku}, "available": {"N": str(available)}}
        )

    def stock(self, sku: str) -> int | None:
        item = self.client.get_item(TableName=self.inventory_table, Key={"sku": {"S": sku}}).get("Item")
        return int(item["available"]["N"]) if item else None

    def set_credit_limit(self, customer_id: str, limit: str) -> None:
        self.client.put_item(
            TableName=self.payments_table,
            Item={"pk": {"S": f"CUSTOMER#{customer_id}"}, "creditLimit": {"N": limit}},
        )

    def reservation(self, order_id: str) -> dict[str, Any] | None:
        return self._get(self.reservations_table, {"orderId": {"S": order_id}})

    def charge(self, order_id: str) -> dict[str, Any] | None:
        return self._get(self.payments_table, {"pk": {"S": f"ORDER#{order_id}"}})

    def shipment(self, order_id: str) -> dict[str, Any] | None:
        return self._get(self.shipments_table, {"orderId": {"S": order_id}})

    def order(self, order_id: str) -> dict[str, Any] | None:
        """The order's ledger row: which attempt owns it, and its status."""
        return self._get(self.orders_table, {"orderId": {"S": order_id}})

    def claim(self, message_id: str) -> dict[str, Any] | None:
        return self._get(self.deliveries_table, {"messageId": {"S": message_id}})

    def count(self, table: str) -> int:
        return int(self.client.scan(TableName=table, Select="COUNT")["Count"])

    def _get(self, table: str, key: dict[str, Any]) -> dict[str, Any] | None:
        item = self.client.get_item(TableName=table, Key=key, ConsistentRead=True).get("Item")
        return _plain(item) if item else None


def _plain(item: dict[str, Any]) -> dict[str, Any]:
    """DynamoDB JSON to plain values (N as Decimal) for readable assertions."""
    from boto3.dynamodb.types import TypeDeserializer

    deserializer = TypeDeserializer()
    return {key: deserializer.deserialize(value) for key, value in item.items()}


def as_decimal(value: Any) -> Decimal:
    return Decimal(str(value))
