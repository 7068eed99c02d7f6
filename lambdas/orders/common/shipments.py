"""Shipment port and its DynamoDB adapter: one active shipment per order, cancelled only by its own attempt."""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from botocore.exceptions import ClientError

from common.errors import DuplicateOrder, TransientError, aws_errors_as_transient, cancellation_reasons, error_code
from common.status_change import undo_once

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import TransactWriteItemTypeDef

ARRANGED = "ARRANGED"
CANCELLED = "CANCELLED"
_SHIPMENT_NAMESPACE = uuid.UUID("9b1e4f7a-2c3d-4e5f-8a6b-7c8d9e0f1a2b")


class Shipment(NamedTuple):
    order_id: str
    shipment_id: str
    attempt_id: str
    carrier: str
    address: dict[str, str]
    status: str

    def as_output(self) -> dict[str, Any]:
        return {
            "shipmentId": self.shipment_id,
            "carrier": self.carrier,
            "status": self.status,
            "attemptId": self.attempt_id,
        }


class ShipmentStore(Protocol):
    def arrange(
        self, order_id: str, attempt_id: str, carrier: str, address: dict[str, str], complete: TransactWriteItemTypeDef
    ) -> tuple[Shipment, bool]:
        """Record the shipment once per order and mark the order COMPLETED (`complete`, the ledger's action) at
        once; returns it and whether this call created it. Raises DuplicateOrder if this attempt does not own it."""
        ...

    def cancel(self, order_id: str, attempt_id: str) -> Shipment | None:
        """Cancel the shipment this attempt arranged, once; None when there is nothing to cancel."""
        ...


class DynamoDBShipments:
    def __init__(self, client: DynamoDBClient, table: str) -> None:
        self._client = client
        self._table = table

    def arrange(
        self, order_id: str, attempt_id: str, carrier: str, address: dict[str, str], complete: TransactWriteItemTypeDef
    ) -> tuple[Shipment, bool]:
        shipment = Shipment(
            order_id=order_id,
            shipment_id=f"shp_{uuid.uuid5(_SHIPMENT_NAMESPACE, f'{order_id}/{attempt_id}').hex}",
            attempt_id=attempt_id,
            carrier=carrier,
            address=address,
            status=ARRANGED,
        )
        try:
            with aws_errors_as_transient("recording the shipment"):
                put: TransactWriteItemTypeDef = {"Put": {
                    "TableName": self._table,
                    "Item": {
                        "orderId": {"S": order_id},
                        "shipmentId": {"S": shipment.shipment_id},
                        "attemptId": {"S": attempt_id},
                        "carrier": {"S": carrier},
                        "address": {"M": {field: {"S": value} for field, value in address.items()}},
                        "status": {"S": ARRANGED},
                        "arrangedAt": {"N": str(int(time.time()))},
                    },
                    # One active shipment per order; a later attempt (an operator redrive) may ship again only
                    # after CancelShipment compensated the earlier one.
                    "ConditionExpression": "attribute_not_exists(orderId) OR #status = :cancelled",
                    "ExpressionAttributeNames": {"#status": "status"},
                    "ExpressionAttributeValues": {":cancelled": {"S": CANCELLED}},
                }}
                self._client.transact_write_items(TransactItems=[put, complete])
        except ClientError as error:
            if error_code(error) != "TransactionCanceledException":
                raise
            codes = [reason.get("Code") for reason in cancellation_reasons(error)]
            existing = self.find(order_id)
            # A retry of this attempt after its transaction committed: the shipment is already ours.
            if existing is not None and existing.status == ARRANGED and existing.attempt_id == attempt_id:
                return existing, False
            if codes[1:2] == ["ConditionalCheckFailed"]:
                raise DuplicateOrder(f"order {order_id} is not owned by {attempt_id}; nothing shipped") from None
            raise TransientError(f"shipment of order {order_id} changed while arranging; retry") from error
        return shipment, True

    def cancel(self, order_id: str, attempt_id: str) -> Shipment | None:
        # ARRANGED -> CANCELLED once, and only by the attempt that arranged it.
        item = undo_once(self._client, table=self._table, key={"orderId": {"S": order_id}}, done=ARRANGED,
                         undone=CANCELLED, attempt_id=attempt_id, stamp="cancelledAt",
                         action="cancelling the shipment")
        return _shipment_from_item(order_id, item) if item is not None else None

    def find(self, order_id: str) -> Shipment | None:
        with aws_errors_as_transient("reading the shipment"):
            response = self._client.get_item(
                TableName=self._table, Key={"orderId": {"S": order_id}}, ConsistentRead=True
            )
        item = response.get("Item")
        return _shipment_from_item(order_id, item) if item is not None else None


def _shipment_from_item(order_id: str, item: Any) -> Shipment:
    return Shipment(
        order_id=order_id,
        shipment_id=item["shipmentId"]["S"],
        attempt_id=item["attemptId"]["S"],
        carrier=item["carrier"]["S"],
        address={field: value["S"] for field, value in item["address"]["M"].items()},
        status=item["status"]["S"],
    )
