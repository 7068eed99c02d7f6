"""The order ledger: one row per orderId saying which attempt owns the order's effects, and in which state.

An attempt is one SQS message (its messageId) run by the one execution that claimed that message. The first attempt
to claim an order owns its reservation, charge and shipment; every other attempt of the same order learns the state
here and does nothing (see docs/handlers.md, "Ownership across attempts").
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from botocore.exceptions import ClientError

from common.errors import DuplicateOrder, OrderConflict, aws_errors_as_transient, error_code

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import TransactWriteItemTypeDef

ACTIVE = "ACTIVE"  # the owner is in flight
COMPLETED = "COMPLETED"  # the owner arranged the shipment
COMPENSATED = "COMPENSATED"  # the owner failed and undid everything; a later attempt may take the order over

CLAIM = "claim"  # nobody holds the order: claim it
TAKE_OVER = "take-over"  # the owner failed and compensated: claim it from that owner
OWN = "own"  # this attempt already owns it (a retry of this attempt's step)


class OrderEntry(NamedTuple):
    order_id: str
    fingerprint: str
    attempt_id: str
    execution_arn: str
    status: str

    def owned_by(self, attempt_id: str, execution_arn: str) -> bool:
        return self.attempt_id == attempt_id and self.execution_arn == execution_arn


def fingerprint(order: Mapping[str, Any]) -> str:
    """sha256 of the validated order in canonical JSON: the same order sent twice has the same fingerprint."""
    canonical = json.dumps(order, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def decide(entry: OrderEntry | None, order_fingerprint: str, attempt_id: str, execution_arn: str) -> str:
    """What ReserveInventory does about the ledger: CLAIM, TAKE_OVER or OWN; raises OrderConflict or DuplicateOrder."""
    if entry is None:
        return CLAIM
    if entry.fingerprint != order_fingerprint:
        raise OrderConflict(
            f"order {entry.order_id} was already received with a different body (by message {entry.attempt_id});"
            " send a changed order under a new orderId"
        )
    if entry.owned_by(attempt_id, execution_arn) and entry.status == ACTIVE:
        return OWN
    if entry.status == COMPENSATED and entry.attempt_id != attempt_id:
        return TAKE_OVER
    state = "in flight" if entry.status == ACTIVE else entry.status.lower()
    raise DuplicateOrder(f"order {entry.order_id} is owned by message {entry.attempt_id} ({state}); this copy ends")


class DynamoDBOrderLedger:
    """Rows ``{orderId, fingerprint, attemptId, executionArn, status}`` in the orders table."""

    def __init__(self, client: DynamoDBClient, table: str) -> None:
        self._client = client
        self._table = table

    def find(self, order_id: str) -> OrderEntry | None:
        with aws_errors_as_transient("reading the order ledger"):
            response = self._client.get_item(
                TableName=self._table, Key={"orderId": {"S": order_id}}, ConsistentRead=True
            )
        item = response.get("Item")
        if item is None:
            return None
        return OrderEntry(
            order_id=order_id,
            fingerprint=item["fingerprint"]["S"],
            attempt_id=item["attemptId"]["S"],
            execution_arn=item["executionArn"]["S"],
            status=item["status"]["S"],
        )

    def claim_item(
        self, order_id: str, order_fingerprint: str, attempt_id: str, execution_arn: str, previous: OrderEntry | None
    ) -> TransactWriteItemTypeDef:
        """The transaction action that makes this attempt the owner: a first claim, or a take-over from `previous`
        (which must still be COMPENSATED by the same attempt, else another attempt was faster)."""
        now = {"N": str(int(time.time()))}
        if previous is None:
            return {
                "Put": {
                    "TableName": self._table,
                    "Item": {
                        "orderId": {"S": order_id},
                        "fingerprint": {"S": order_fingerprint},
                        "attemptId": {"S": attempt_id},
                        "executionArn": {"S": execution_arn},
                        "status": {"S": ACTIVE},
                        "claimedAt": now,
                    },
                    "ConditionExpression": "attribute_not_exists(orderId)",
                }
            }
        return {
            "Update": {
                "TableName": self._table,
                "Key": {"orderId": {"S": order_id}},
                "UpdateExpression": "SET attemptId = :attempt, executionArn = :execution, #status = :active, "
                "claimedAt = :now",
                "ConditionExpression": "#status = :compensated AND attemptId = :previous AND fingerprint = :fp",
                "ExpressionAttributeNames": {"#status": "status"},
                "ExpressionAttributeValues": {
                    ":attempt": {"S": attempt_id},
                    ":execution": {"S": execution_arn},
                    ":active": {"S": ACTIVE},
                    ":compensated": {"S": COMPENSATED},
                    ":previous": {"S": previous.attempt_id},
                    ":fp": {"S": order_fingerprint},
                    ":now": now,
                },
            }
        }

    def transition_item(
        self, order_id: str, attempt_id: str, execution_arn: str, *, to: str, allowed_from: tuple[str, ...]
    ) -> TransactWriteItemTypeDef:
        """The transaction action moving the owner's row to `to`; fails unless this attempt owns it."""
        sources = {f":from{index}": {"S": status} for index, status in enumerate(allowed_from)}
        return {
            "Update": {
                "TableName": self._table,
                "Key": {"orderId": {"S": order_id}},
                "UpdateExpression": "SET #status = :to, changedAt = :now",
                "ConditionExpression": f"attemptId = :attempt AND executionArn = :execution AND #status IN "
                f"({', '.join(sources)})",
                "ExpressionAttributeNames": {"#status": "status"},
                "ExpressionAttributeValues": {
                    ":to": {"S": to},
                    ":attempt": {"S": attempt_id},
                    ":execution": {"S": execution_arn},
                    ":now": {"N": str(int(time.time()))},
                    **sources,
                },
            }
        }

    def hand_over(self, entry: OrderEntry) -> bool:
        """ACTIVE/COMPLETED -> COMPENSATED for the owner, alone; False when the row was no longer this owner's."""
        update = self.transition_item(
            entry.order_id, entry.attempt_id, entry.execution_arn, to=COMPENSATED, allowed_from=(ACTIVE, COMPLETED)
        )["Update"]
        try:
            with aws_errors_as_transient("handing the order over"):
                self._client.update_item(**update)
        except ClientError as error:
            if error_code(error) == "ConditionalCheckFailedException":
                return False
            raise
        return True
