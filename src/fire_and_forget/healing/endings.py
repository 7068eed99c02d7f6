"""Where a caller's message ended for good, read from the deliveries table's stream: what the completion webhook
tells the caller (fire_and_forget.healing.completion) and what opens or resolves a person's ticket
(fire_and_forget.healing.tickets).

A stream record is an *ending* when all of these hold:
- it *settled* its row: the new image records an outcome (succeeded, failed, absorbed) or a reconciled failure and the
  old image did not, so a later write on a settled row (a redrive's link, the Reconciler's last stage, a ticket's
  note) adds none;
- the row's attempt is the one the caller's message leads to now (`read_status` from the caller's id, which a
  redriven copy's execution carries in its `ffFirstMessageId` attribute): a failure already redriven is not one;
- that status is final: succeeded, absorbed, or failed with no automatic redrive to follow by the stack's
  HealingPolicy.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from fire_and_forget.runtime.healing_policy import HealingPolicy, first_message_id
from fire_and_forget.runtime.status import MessageStatus, read_status, row_from_image

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_stepfunctions import SFNClient


@dataclass(frozen=True)
class Ending:
    """A caller message's final status, and the SQS record its attempt's execution started with (None when the
    execution is gone: past Step Functions' 90-day retention, or never recorded)."""

    status: MessageStatus
    record: dict[str, Any] | None


def settled(row: Mapping[str, Any] | None) -> bool:
    """The row records how its attempt ended: an outcome, or a failure the Reconciler recorded."""
    return row is not None and ("outcome" in row or ("reconciliation" in row and "summary" in row))


def endings(records: Iterable[Mapping[str, Any]], *, dynamodb: DynamoDBClient, stepfunctions: SFNClient, table: str,
            policy: HealingPolicy) -> list[Ending]:
    """The endings a batch of the deliveries table's stream records gives, one per record at most, in sequence."""
    found = []
    for record in records:
        change = record.get("dynamodb") or {}
        new, old = row_from_image(change.get("NewImage")), row_from_image(change.get("OldImage"))
        if new is None or not settled(new) or settled(old) or not isinstance(new.get("messageId"), str):
            continue
        attempt = new["messageId"]
        started_with = _first_record(stepfunctions, new.get("executionArn"))
        caller = (first_message_id(started_with) if started_with is not None else None) or attempt
        status = read_status(dynamodb, table, caller, policy)
        if status.final and status.attempt_message_id == attempt:
            found.append(Ending(status, started_with))
    return found


def _first_record(stepfunctions: SFNClient, execution_arn: Any) -> dict[str, Any] | None:
    """The first SQS record of the execution's input (the pipe's batch): a redriven copy's carries the caller's
    message id in `ffFirstMessageId`."""
    if not isinstance(execution_arn, str):
        return None
    try:
        described = stepfunctions.describe_execution(executionArn=execution_arn)
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") == "ExecutionDoesNotExist":
            return None
        raise
    try:
        batch = json.loads(described.get("input") or "null")
    except ValueError:
        return None
    first = batch[0] if isinstance(batch, list) and batch else None
    return first if isinstance(first, dict) else None
