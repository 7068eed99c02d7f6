"""Where a caller's message stands: read from its row in the deliveries table, which the pipeline keeps anyway.

A caller that drops a message and moves on keeps the MessageId SendMessage returned. The message's row (keyed by that
id, docs/design.md "The delivery claim") already holds what the pattern knows of it, at no extra write:
- the entry step's claim: which execution owns it, and since when (`executionArn`, `claimedAt`): *accepted*;
- the failure tail's ClaimFailure: `outcome` FAILED with the failed state, the error and the manual-repair flag;
- the Reconciler's `reconciliation` and `summary`, for an execution that timed out, was stopped or failed where no
  Catch saw it.
What only the workflow knows, its steps add (`AttemptProgress`, one UpdateItem each, on the attempt's own row):
a *stage* name after each step that matters to the caller, `done` on the last (*succeeded*), or that another
attempt owns the work (*absorbed*: a producer's resend of work another message already carries). And a redrive, the
Redriver's or an operator's, notes on the caller's row which message carries the work now (`link_redrive`, through
the redrive's `redrive_links` hook), so that reading the caller's id follows the work to its latest attempt.

Every step write is conditional on the attempt still owning its row and no outcome being recorded on it: a late
invocation of an execution that was stopped, reconciled or whose failure is recorded cannot move the status back.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from fire_and_forget.runtime.errors import aws_errors_as_transient, error_code
from fire_and_forget.runtime.healing_policy import Disposition, HealingPolicy, first_message_id

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient
    from mypy_boto3_ssm.client import SSMClient

    from fire_and_forget.runtime.records import FailureRecord

FAILED = "FAILED"  # the `outcome` the failure tail's ClaimFailure writes
SUCCEEDED = "SUCCEEDED"
ABSORBED = "ABSORBED"
MAX_LINKS = 16  # redrives followed from the caller's row; the Redriver stops at its policy's max_attempts (3)
# What `link_redrive` reads and writes on the caller's row: all an operator's policy lets it touch there (the
# construct's OperatorPolicy), never the claim (executionArn) nor the outcome.
REDRIVE_LINK_ATTRIBUTES = ("messageId", "latestAttempt", "linkedAttempts", "updatedAt", "expiresAt")
# A link's row expiry when it has none yet (a caller's row always has the claim's): the construct's default
# idempotency expiry, which the claims are kept as long as.
DEFAULT_LINK_TTL_SECONDS = 15 * 24 * 3600
# What resolving a ticket writes on the caller's row (an operator's discard does it too: the OperatorPolicy allows it).
TICKET_ATTRIBUTES = ("messageId", "ticket", "resolvedTicket", "updatedAt")
TICKET_NOTE_MAX = 20 * 1024  # an OperationalData value's maximum (API_UpdateOpsItem.html)


class State(StrEnum):
    """Where a message stands, as `read_status` tells it."""

    UNKNOWN = "unknown"  # no row: not received yet (or never sent, or past the rows' expiry)
    ACCEPTED = "accepted"  # an execution owns it; no step has reported yet
    IN_PROGRESS = "in progress"  # a step reported a stage
    SUCCEEDED = "succeeded"
    FAILED = "failed"  # recorded in the failure DLQ; `retry` says whether the automatic redrive will try again
    ABSORBED = "absorbed"  # another message carries the same work (`absorbed_by`)


@dataclass(frozen=True)
class MessageStatus:
    """A message's status: its own id, and the attempt that carries its work now (itself unless redriven)."""

    message_id: str
    state: State
    attempt_message_id: str | None = None
    attempts: int = 0  # redrives of the caller's message so far (the copies linked to it, and to them)
    stage: str | None = None
    execution_arn: str | None = None
    error: str | None = None
    failed_state: str | None = None
    manual_repair: bool = False
    retry: bool | None = None  # FAILED: whether an automatic redrive follows (None: no policy to tell)
    absorbed_by: str | None = None
    updated_at: int | None = None  # epoch seconds of the latest write the row records
    ticket: str | None = None  # the OpsCenter OpsItem open for the caller's message (fire_and_forget.healing.tickets)

    @property
    def final(self) -> bool:
        """Nothing more will happen without a person (or the caller): succeeded, absorbed, or failed for good."""
        return self.state in (State.SUCCEEDED, State.ABSORBED) or (self.state is State.FAILED and self.retry is False)

    def as_json(self) -> dict[str, Any]:
        return {"messageId": self.message_id, "state": self.state.value, "final": self.final,
                "attemptMessageId": self.attempt_message_id, "redrives": self.attempts, "stage": self.stage,
                "executionArn": self.execution_arn, "error": self.error, "failedState": self.failed_state,
                "manualRepair": self.manual_repair, "retry": self.retry, "absorbedBy": self.absorbed_by,
                "updatedAt": self.updated_at, "ticket": self.ticket}


class AttemptProgress:
    """What one attempt (an execution of one message) reports on its message's row, for the caller to read."""

    def __init__(self, dynamodb: DynamoDBClient, table: str, message_id: str, execution_arn: str) -> None:
        self._dynamodb = dynamodb
        self._table = table
        self._message_id = message_id
        self._execution_arn = execution_arn

    def mark(self, stage: str, *, done: bool = False) -> bool:
        """The attempt reached `stage`; with `done`, its work is complete (call it from the workflow's last step only:
        a workflow that can still fail after it would report a success it did not have). False when the row is no
        longer this attempt's to write (another owns it, or an outcome or a reconciliation is recorded on it)."""
        expression = "SET stage = :stage, updatedAt = :now"
        values: dict[str, Any] = {":stage": {"S": stage}}
        if done:
            expression += ", outcome = :outcome"
            values[":outcome"] = {"S": SUCCEEDED}
        return self._write(expression, values)

    def absorbed(self, owner_message_id: str) -> bool:
        """Another message owns this work (a producer's resend of work already taken): this one ends without it."""
        return self._write("SET outcome = :outcome, absorbedBy = :owner, updatedAt = :now",
                           {":outcome": {"S": ABSORBED}, ":owner": {"S": owner_message_id}})

    def _write(self, expression: str, values: dict[str, Any]) -> bool:
        try:
            with aws_errors_as_transient("reporting the message's progress"):
                self._dynamodb.update_item(
                    TableName=self._table,
                    Key={"messageId": {"S": self._message_id}},
                    UpdateExpression=expression,
                    ConditionExpression="executionArn = :arn AND attribute_not_exists(outcome) "
                                        "AND attribute_not_exists(reconciliation)",
                    ExpressionAttributeValues={**values, ":arn": {"S": self._execution_arn},
                                               ":now": {"N": str(int(time.time()))}},
                )
        except ClientError as error:
            if error_code(error) == "ConditionalCheckFailedException":
                return False
            raise
        return True


def link_redrive(dynamodb: DynamoDBClient, table: str, *, first_message_id: str, copy_message_id: str,
                 ttl_seconds: int = DEFAULT_LINK_TTL_SECONDS) -> None:
    """Note on the caller's row that `copy_message_id` now carries its work (sent back to the source queue by a
    redrive). Each copy is linked once; the latest linked is the current attempt (a copy is sent only once the
    attempt before it failed)."""
    now = int(time.time())
    try:
        dynamodb.update_item(
            TableName=table,
            Key={"messageId": {"S": first_message_id}},
            UpdateExpression="SET latestAttempt = :copy, updatedAt = :now, "
                             "expiresAt = if_not_exists(expiresAt, :ttl) ADD linkedAttempts :copies",
            ConditionExpression="NOT contains(linkedAttempts, :copy)",
            ExpressionAttributeValues={":copy": {"S": copy_message_id}, ":copies": {"SS": [copy_message_id]},
                                       ":now": {"N": str(now)}, ":ttl": {"N": str(now + ttl_seconds)}},
        )
    except ClientError as error:
        if error_code(error) != "ConditionalCheckFailedException":  # linked already: a repeated redrive report
            raise


def redrive_links(dynamodb: DynamoDBClient, table: str,
                  ttl_seconds: int = DEFAULT_LINK_TTL_SECONDS) -> Callable[[FailureRecord, str], None]:
    """The redrive's `sent` hook (fire_and_forget.runtime.redrive.RedriveRequest): each message sent back is linked to
    its caller's message (the redrive's ffFirstMessageId, else the record's own). A link that cannot be written is
    left out, never the redrive: the message is back in the queue either way, and its caller reads the failure until
    the copy's own row says more."""

    def link(record: FailureRecord, new_message_id: str) -> None:
        first = first_message_id(record.record) or record.message_id
        with contextlib.suppress(ClientError):
            link_redrive(dynamodb, table, first_message_id=first, copy_message_id=new_message_id,
                         ttl_seconds=ttl_seconds)

    return link


def resolve_ticket(ssm: SSMClient, dynamodb: DynamoDBClient, table: str, status: MessageStatus, why: str) -> bool:
    """Resolve the OpsCenter OpsItem open for the caller's message (fire_and_forget.healing.tickets opened it), and
    note it on the caller's row as resolved (`ticket` becomes `resolvedTicket`). False when there was none; an
    OpsItem already gone only loses its note, and a repeated resolution changes nothing."""
    if status.ticket is None:
        return False
    try:
        ssm.update_ops_item(OpsItemId=status.ticket, Status="Resolved",
                            OperationalData={"resolution": {"Value": why[:TICKET_NOTE_MAX], "Type": "String"}})
    except ClientError as error:
        if error_code(error) != "OpsItemNotFoundException":
            raise
    try:
        dynamodb.update_item(
            TableName=table, Key={"messageId": {"S": status.message_id}},
            UpdateExpression="SET resolvedTicket = ticket, updatedAt = :now REMOVE ticket",
            ConditionExpression="ticket = :ticket",
            ExpressionAttributeValues={":ticket": {"S": status.ticket}, ":now": {"N": str(int(time.time()))}})
    except ClientError as error:
        if error_code(error) != "ConditionalCheckFailedException":  # resolved already
            raise
    return True


def read_status(dynamodb: DynamoDBClient, table: str, message_id: str,
                policy: HealingPolicy | None = None) -> MessageStatus:
    """The status of the caller's message `message_id`: its own row, or the row of the latest attempt a redrive
    linked to it. `policy` (the stack's HealingPolicy output) tells whether a failure waits for an automatic redrive."""
    row = _row(dynamodb, table, message_id)
    if row is None:
        return MessageStatus(message_id, State.UNKNOWN)
    attempt_id, attempt_row, redrives, hops = message_id, row, 0, 0
    while isinstance(following := attempt_row.get("latestAttempt"), str) and hops < MAX_LINKS:
        hops += 1
        redrives += len(attempt_row.get("linkedAttempts") or ()) or 1  # each copy sent back from this attempt's row
        linked = _row(dynamodb, table, following)
        if linked is None:  # sent back, not received yet: the copy waits in the source queue
            return MessageStatus(message_id, State.ACCEPTED, following, redrives, updated_at=_int(row.get("updatedAt")),
                                 ticket=_text(row.get("ticket")))
        attempt_id, attempt_row = following, linked
    return replace(_status(message_id, attempt_id, redrives, attempt_row, policy), ticket=_text(row.get("ticket")))


def _status(message_id: str, attempt_id: str, redrives: int, row: dict[str, Any],
            policy: HealingPolicy | None) -> MessageStatus:
    common: dict[str, Any] = {"attempt_message_id": attempt_id, "attempts": redrives,
                              "execution_arn": row.get("executionArn"), "stage": row.get("stage"),
                              "updated_at": _int(row.get("updatedAt") or row.get("claimedAt"))}
    outcome = row.get("outcome")
    if outcome == SUCCEEDED:
        return MessageStatus(message_id, State.SUCCEEDED, **common)
    if outcome == ABSORBED:
        return MessageStatus(message_id, State.ABSORBED, absorbed_by=row.get("absorbedBy"), **common)
    failure = _failure(row)
    if failure is not None:
        state, error, manual_repair, status = failure
        retry = None
        if policy is not None:
            disposition = policy.disposition(state=state, error=error, manual_repair=manual_repair,
                                             attempt=redrives, status=status)
            retry = disposition is Disposition.RETRY
        return MessageStatus(message_id, State.FAILED, error=error, failed_state=state, manual_repair=manual_repair,
                             retry=retry, **common)
    if "executionArn" not in row:
        return MessageStatus(message_id, State.UNKNOWN, **common)
    return MessageStatus(message_id, State.IN_PROGRESS if row.get("stage") else State.ACCEPTED, **common)


def _failure(row: dict[str, Any]) -> tuple[str | None, str | None, bool, str] | None:
    """(failed state, error, manual repair, execution status) of a failure recorded on the row, or None."""
    if row.get("outcome") == FAILED:
        return row.get("failedState"), row.get("error"), bool(row.get("manualRepair")), "FAILED"
    summary = row.get("summary")
    if row.get("reconciliation") and isinstance(summary, str):
        try:
            parsed = json.loads(summary)
        except ValueError:
            parsed = {}
        parsed = parsed if isinstance(parsed, dict) else {}
        recorded = parsed.get("failure")
        failure: dict[str, Any] = recorded if isinstance(recorded, dict) else {}
        # The execution's status (TIMED_OUT, ABORTED or FAILED), as the Reconciler's record and the Redriver read it.
        status = str(parsed.get("status") or "FAILED")
        return (failure.get("state"), failure.get("error"), bool(parsed.get("manualRepair")), status)
    return None


def row_from_image(item: dict[str, Any] | None) -> dict[str, Any] | None:
    """A row as the reader sees it, from DynamoDB's attribute-value form (an item, or a stream record's image)."""
    if not item:
        return None
    return {name: _plain(value) for name, value in item.items()}


def _row(dynamodb: DynamoDBClient, table: str, message_id: str) -> dict[str, Any] | None:
    return row_from_image(dynamodb.get_item(TableName=table, Key={"messageId": {"S": message_id}},
                                            ConsistentRead=True).get("Item"))


def _plain(value: Any) -> Any:
    (kind, inner), = value.items()
    if kind == "N":
        return int(inner) if inner.lstrip("-").isdigit() else float(inner)
    if kind == "BOOL":
        return bool(inner)
    if kind == "SS":
        return list(inner)
    return inner if kind == "S" else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) else None
