"""Inventory port and its DynamoDB adapter: stock per sku and what each order reserved."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from botocore.exceptions import ClientError

from common.errors import OutOfStock, TransientError, aws_errors_as_transient, cancellation_reasons, error_code

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef, TransactWriteItemTypeDef

RESERVED = "RESERVED"
RELEASED = "RELEASED"


class Reservation(NamedTuple):
    """What one order holds: the lines it took from stock, and the saga attempt that took them."""

    order_id: str
    attempt_id: str
    status: str
    items: tuple[tuple[str, int], ...]

    def as_output(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "attemptId": self.attempt_id,
            "items": [{"sku": sku, "quantity": quantity} for sku, quantity in self.items],
        }


class ClaimLost(Exception):  # noqa: N818 - a signal between adapter and logic, never raised out of a handler
    """Another attempt changed the order's ledger row between the read and the reserving transaction."""


class InventoryStore(Protocol):
    def reserve(
        self, order_id: str, attempt_id: str, items: Sequence[tuple[str, int]], claim: TransactWriteItemTypeDef
    ) -> tuple[Reservation, bool]:
        """Take every line from stock and claim the order (`claim`, the ledger's action) at once; returns the
        reservation and whether this call created it. Raises ClaimLost when the ledger changed meanwhile."""
        ...

    def find_reservation(self, order_id: str) -> Reservation | None: ...

    def release(self, reservation: Reservation, hand_over: TransactWriteItemTypeDef) -> bool:
        """Give a RESERVED reservation's lines back and hand the order over (`hand_over`, the ledger's action), once;
        False when it was no longer RESERVED or no longer this attempt's."""
        ...


class DynamoDBInventory:
    """Stock in the inventory table (``available`` per ``sku``), reservations keyed by ``orderId``."""

    def __init__(self, client: DynamoDBClient, inventory_table: str, reservations_table: str) -> None:
        self._client = client
        self._inventory = inventory_table
        self._reservations = reservations_table

    def reserve(
        self, order_id: str, attempt_id: str, items: Sequence[tuple[str, int]], claim: TransactWriteItemTypeDef
    ) -> tuple[Reservation, bool]:
        takes: list[TransactWriteItemTypeDef] = [
            {
                "Update": {
                    "TableName": self._inventory,
                    "Key": {"sku": {"S": sku}},
                    "UpdateExpression": "SET available = available - :q",
                    # Also false for an unknown sku: an item we do not stock is out of stock.
                    "ConditionExpression": "available >= :q",
                    "ExpressionAttributeValues": {":q": {"N": str(quantity)}},
                }
            }
            for sku, quantity in items
        ]
        record: TransactWriteItemTypeDef = {
            "Put": {
                "TableName": self._reservations,
                "Item": {
                    "orderId": {"S": order_id},
                    "attemptId": {"S": attempt_id},
                    "status": {"S": RESERVED},
                    "items": {"L": [_line(sku, quantity) for sku, quantity in items]},
                    "reservedAt": {"N": str(int(time.time()))},
                },
                # A RELEASED reservation may be taken again by a later attempt (operator redrive); a RESERVED
                # one means this order already holds stock, from a retry of this attempt or an earlier one.
                "ConditionExpression": "attribute_not_exists(orderId) OR #status = :released",
                "ExpressionAttributeNames": {"#status": "status"},
                "ExpressionAttributeValues": {":released": {"S": RELEASED}},
            }
        }
        try:
            with aws_errors_as_transient("reserving stock"):
                self._client.transact_write_items(TransactItems=[*takes, record, claim])
        except ClientError as error:
            return self._explain_cancellation(error, order_id, attempt_id, items), False
        return Reservation(order_id, attempt_id, RESERVED, tuple(items)), True

    def _explain_cancellation(
        self, error: ClientError, order_id: str, attempt_id: str, items: Sequence[tuple[str, int]]
    ) -> Reservation:
        if error_code(error) != "TransactionCanceledException":
            raise error
        codes = [reason.get("Code", "None") for reason in cancellation_reasons(error)]
        # The ledger's claim is the last action: another attempt claimed the order first; the caller decides again.
        if len(codes) == len(items) + 2 and codes[-1] == "ConditionalCheckFailed":
            raise ClaimLost(order_id)
        # Then the reservation record: if it already exists, nothing more may be taken from stock.
        if len(codes) == len(items) + 2 and codes[-2] == "ConditionalCheckFailed":
            existing = self.find_reservation(order_id)
            if existing is not None and existing.status == RESERVED and existing.attempt_id == attempt_id:
                return existing
            raise TransientError(f"reservation of order {order_id} changed while reserving; retry") from error
        for (sku, quantity), code in zip(items, codes, strict=False):
            if code == "ConditionalCheckFailed":
                raise OutOfStock(sku, quantity) from None
        raise error

    def find_reservation(self, order_id: str) -> Reservation | None:
        with aws_errors_as_transient("reading the reservation"):
            response = self._client.get_item(
                TableName=self._reservations, Key={"orderId": {"S": order_id}}, ConsistentRead=True
            )
        item = response.get("Item")
        if item is None:
            return None
        lines = tuple(
            (line["M"]["sku"]["S"], int(line["M"]["quantity"]["N"])) for line in item.get("items", {}).get("L", [])
        )
        return Reservation(order_id, item["attemptId"]["S"], item["status"]["S"], lines)

    def release(self, reservation: Reservation, hand_over: TransactWriteItemTypeDef) -> bool:
        mark: TransactWriteItemTypeDef = {
            "Update": {
                "TableName": self._reservations,
                "Key": {"orderId": {"S": reservation.order_id}},
                "UpdateExpression": "SET #status = :released, releasedAt = :now",
                # Only the attempt that took the stock gives it back, and only once.
                "ConditionExpression": "#status = :reserved AND attemptId = :attempt",
                "ExpressionAttributeNames": {"#status": "status"},
                "ExpressionAttributeValues": {
                    ":released": {"S": RELEASED},
                    ":reserved": {"S": RESERVED},
                    ":attempt": {"S": reservation.attempt_id},
                    ":now": {"N": str(int(time.time()))},
                },
            }
        }
        returns: list[TransactWriteItemTypeDef] = [
            {
                "Update": {
                    "TableName": self._inventory,
                    "Key": {"sku": {"S": sku}},
                    "UpdateExpression": "ADD available :q",
                    "ExpressionAttributeValues": {":q": {"N": str(quantity)}},
                }
            }
            for sku, quantity in reservation.items
        ]
        try:
            with aws_errors_as_transient("releasing stock"):
                self._client.transact_write_items(TransactItems=[mark, hand_over, *returns])
        except ClientError as error:
            codes = [reason.get("Code") for reason in cancellation_reasons(error)]
            if error_code(error) == "TransactionCanceledException" and "ConditionalCheckFailed" in codes[:2]:
                return False  # released meanwhile by a concurrent compensation, or the order is not ours any more
            raise
        return True


def _line(sku: str, quantity: int) -> AttributeValueTypeDef:
    return {"M": {"sku": {"S": sku}, "quantity": {"N": str(quantity)}}}
