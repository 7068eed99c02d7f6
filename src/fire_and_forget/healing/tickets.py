"""Tickets for the people on call (``tickets.handler``): one Systems Manager OpsCenter OpsItem per caller message that
failed for good, resolved when a later attempt of it succeeds, from the deliveries table's stream.

The function reads the stream through an event source mapping (fire_and_forget/construct/tickets.py) and acts on the
*endings* (fire_and_forget.healing.endings) only, so a failure the Redriver will retry opens nothing:
- *failed* for good: CreateOpsItem with the record's key, the error, the failed state, the runbook link and the
  `ff-ops` commands that show it and (by its key) redrive it, deduplicated on the caller's message id
  (OperationalData `/aws/dedup`: OpsCenter creates no second OpsItem while one with the same string is open or in
  progress, OpsCenter-working-deduplication.html); the OpsItem's id is noted on the caller's row (`ticket`), so
  the message's status names it and a repeated record opens nothing;
- *succeeded* or *absorbed* while the caller's row names a ticket (an operator redrove the message and the copy
  succeeded): UpdateOpsItem to Resolved, and the row's `ticket` becomes `resolvedTicket`.
`ff-ops failures discard` resolves a discarded message's ticket the same way
(fire_and_forget.runtime.status.resolve_ticket).

The pages do not say what CreateOpsItem answers when its deduplication string matches an open OpsItem: the new
OpsItem's id is never created, and the API models an OpsItemAlreadyExistsException carrying an OpsItemId. Both
readings are taken: a success names the OpsItem to note, the exception names the existing one.
"""

from __future__ import annotations

import json
import os
import shlex
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

import boto3
from botocore.exceptions import ClientError

from fire_and_forget.healing.endings import Ending, endings
from fire_and_forget.healing.telemetry import count, logger, metrics
from fire_and_forget.runtime.errors import error_code
from fire_and_forget.runtime.healing_policy import HealingPolicy
from fire_and_forget.runtime.records import message_key
from fire_and_forget.runtime.status import TICKET_NOTE_MAX, State, resolve_ticket

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_ssm import SSMClient
    from mypy_boto3_stepfunctions import SFNClient

SOURCE = "fire-and-forget"  # CreateOpsItem's Source: 1 to 128 characters, without "aws", "amazon" or "amzn"
CATEGORY = "Availability"
SEVERITY = "2"  # 1 (critical) to 4 (low): a customer's message waits for a person
TITLE_MAX, DESCRIPTION_MAX = 1024, 2048  # API_CreateOpsItem.html
DATA_VALUE_MAX = TICKET_NOTE_MAX
TICKETS_OPENED = "TicketsOpened"
TICKETS_RESOLVED = "TicketsResolved"
TICKETS_REFUSED = "TicketsRefused"  # OpsCenter's quota refused one (OpsItemLimitExceededException): alarmed


@dataclass(frozen=True)
class TicketSettings:
    """What an OpsItem names besides the failure: the pipeline, its environment and workflow, the stack `ff-ops`
    reaches it by, the runbook, and the message key's field."""

    pipeline: str
    environment: str
    title: str
    stack: str
    runbook_url: str
    key_field: str
    table: str

    @classmethod
    def from_environment(cls, env: Mapping[str, str]) -> TicketSettings:
        return cls(pipeline=env["PIPELINE_NAME"], environment=env["ENVIRONMENT_NAME"], title=env["WORKFLOW_TITLE"],
                   stack=env["STACK_NAME"], runbook_url=env["RUNBOOK_URL"], key_field=env["MESSAGE_KEY_FIELD"],
                   table=env["DELIVERIES_TABLE_NAME"])


def dedup_string(settings: TicketSettings, message_id: str) -> str:
    """One open ticket per caller message of this pipeline (the string is not case sensitive: ids are)."""
    return f"{SOURCE}/{settings.pipeline}/{message_id}"


def ops_item(ending: Ending, settings: TicketSettings) -> dict[str, Any]:
    """CreateOpsItem's request for a message that failed for good."""
    status = ending.status
    key = message_key(str(ending.record.get("body", "")), settings.key_field) if ending.record else None
    failed = f"{status.failed_state or 'an unknown state'}: {status.error or 'unknown error'}"
    # As ff-ops takes them (its options follow the command); `failures redrive` selects by key, and a message
    # without one (a body that is not JSON, or lacks the field) is not one a redrive can fix.
    show = f"ff-ops message {shlex.quote(status.message_id)} --stack-name {settings.stack}"
    redrive = (f"ff-ops failures redrive --key {shlex.quote(key)} --stack-name {settings.stack}" if key is not None
               else None)
    section = "failuresneedaperson"
    data = {
        "/aws/dedup": {"dedupString": dedup_string(settings, status.message_id)},
        "messageId": status.message_id, "attemptMessageId": status.attempt_message_id, "key": key,
        "failedState": status.failed_state, "error": status.error, "manualRepair": status.manual_repair,
        "executionArn": status.execution_arn, "redrives": status.attempts, "showCommand": show,
        "redriveCommand": redrive, "runbook": f"{settings.runbook_url}#{section}",
    }
    title = f"[{settings.environment}] {settings.title} {key or status.message_id} failed in {failed}"
    then = f"Fix the cause, then: {redrive}. " if redrive is not None else "It has no key to redrive it by. "
    description = (f"{settings.title} message {status.message_id} (key {key}) failed for good in {failed}; no "
                   f"automatic redrive follows. Look: {show}. {then}Runbook: {settings.runbook_url}#{section}")
    return {
        "Title": title[:TITLE_MAX], "Source": SOURCE, "Description": description[:DESCRIPTION_MAX],
        "Category": CATEGORY, "Severity": SEVERITY,
        "OperationalData": {name: {"Value": _text(value)[:DATA_VALUE_MAX],
                                   "Type": "SearchableString" if name in ("/aws/dedup", "messageId", "key")
                                   else "String"}
                            for name, value in data.items() if value is not None},
    }


class Tickets:
    """Opens and resolves the tickets the endings of a batch call for."""

    def __init__(self, ssm: SSMClient, dynamodb: DynamoDBClient, settings: TicketSettings) -> None:
        self._ssm = ssm
        self._dynamodb = dynamodb
        self._settings = settings

    def act(self, ending: Ending) -> str | None:
        """"opened", "resolved", "refused" or None (nothing to do)."""
        status = ending.status
        if status.state is State.FAILED and status.ticket is None:
            return self.open(ending)
        if status.state in (State.SUCCEEDED, State.ABSORBED) and status.ticket is not None:
            resolve_ticket(self._ssm, self._dynamodb, self._settings.table, status,
                           f"a later attempt {status.state.value} ({status.attempt_message_id})")
            logger.info("ticket resolved", extra={"messageId": status.message_id, "ticket": status.ticket})
            return "resolved"
        return None

    def open(self, ending: Ending) -> str:
        status = ending.status
        try:
            ticket = self._ssm.create_ops_item(**ops_item(ending, self._settings))["OpsItemId"]
        except ClientError as error:
            code = error_code(error)
            if code == "OpsItemLimitExceededException":  # the failure is still announced and in the failure DLQ
                logger.error("ticket refused by OpsCenter's quota", extra={"messageId": status.message_id})
                return "refused"
            existing = error.response.get("OpsItemId")
            if code != "OpsItemAlreadyExistsException" or not isinstance(existing, str):
                raise
            ticket = existing
        self._dynamodb.update_item(
            TableName=self._settings.table, Key={"messageId": {"S": status.message_id}},
            UpdateExpression="SET ticket = :ticket, updatedAt = :now",
            ExpressionAttributeValues={":ticket": {"S": ticket}, ":now": {"N": str(int(time.time()))}})
        logger.info("ticket opened", extra={"messageId": status.message_id, "ticket": ticket})
        return "opened"


def act_on(records: Iterable[Mapping[str, Any]], tickets: Tickets, *, dynamodb: DynamoDBClient,
           stepfunctions: SFNClient, policy: HealingPolicy, table: str) -> list[str]:
    """What the records' endings did, in sequence."""
    done = []
    for ending in endings(records, dynamodb=dynamodb, stepfunctions=stepfunctions, table=table, policy=policy):
        outcome = tickets.act(ending)
        if outcome is not None:
            done.append(outcome)
    return done


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


@cache
def _clients() -> tuple[SSMClient, DynamoDBClient, SFNClient]:
    return boto3.client("ssm"), boto3.client("dynamodb"), boto3.client("stepfunctions")


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """The stream's batch, record by record in sequence; the first record that fails and every one after it are
    reported back (ReportBatchItemFailures: the mapping retries from the lowest), so none is skipped."""
    ssm, dynamodb, stepfunctions = _clients()
    settings = TicketSettings.from_environment(os.environ)
    tickets, policy = Tickets(ssm, dynamodb, settings), HealingPolicy.from_environment()
    records: list[dict[str, Any]] = event.get("Records", [])
    for index, record in enumerate(records):
        try:
            for outcome in act_on([record], tickets, dynamodb=dynamodb, stepfunctions=stepfunctions, policy=policy,
                                  table=settings.table):
                count({"opened": TICKETS_OPENED, "resolved": TICKETS_RESOLVED, "refused": TICKETS_REFUSED}[outcome])
        except Exception:  # noqa: BLE001 - reported back: the mapping retries this record and those after it
            logger.exception("ticket record failed", extra={"sequence": _sequence(record)})
            return {"batchItemFailures": [{"itemIdentifier": _sequence(r)} for r in records[index:]]}
    return {"batchItemFailures": []}


def _sequence(record: Mapping[str, Any]) -> str:
    return str((record.get("dynamodb") or {}).get("SequenceNumber", ""))
