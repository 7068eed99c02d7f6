"""What the deliveries table's stream gives, on the stream moto records, write by write, one record at a time: the
completion webhook's notices (fire_and_forget.healing.completion: the moment one is due, the id it names) and the
tickets (fire_and_forget.healing.tickets: opened once for a failure for good, resolved by a later success)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from fire_and_forget.healing.completion import notices
from fire_and_forget.healing.endings import endings
from fire_and_forget.healing.tickets import Tickets, TicketSettings, act_on, ops_item
from fire_and_forget.rehearsal.ops_center import OpsCenter
from fire_and_forget.runtime.deliveries import DynamoDBDeliveryClaims
from fire_and_forget.runtime.healing_policy import FIRST_MESSAGE_ATTRIBUTE, HealingPolicy
from fire_and_forget.runtime.status import AttemptProgress, link_redrive, read_status
from tests.support.claim_failure import claim_failure
from tests.support.streams import stream_records

TABLE = "deliveries"
TTL = 15 * 24 * 3600
REGION = "us-east-1"
FIRST, COPY = "m-1", "m-2"
TRANSIENT = "Lambda.ServiceException"
POLICY = HealingPolicy(transient_errors={"ChargePayment": frozenset({TRANSIENT})}, max_attempts=3)


class Account:
    """A deliveries table with its stream, a state machine whose executions carry the pipe's records, and a cursor
    over the stream: `enrich()` hands the records written since the last call to the enrichment, one by one."""

    def __init__(self) -> None:
        self.dynamodb = boto3.client("dynamodb", region_name=REGION)
        self.sfn = boto3.client("stepfunctions", region_name=REGION)
        self.dynamodb.create_table(
            TableName=TABLE, KeySchema=[{"AttributeName": "messageId", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "messageId", "AttributeType": "S"}], BillingMode="PAY_PER_REQUEST",
            StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"})
        role = "arn:aws:iam::123456789012:role/saga"
        definition = json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Succeed"}}})
        self.machine = self.sfn.create_state_machine(name="Saga", definition=definition, roleArn=role)[
            "stateMachineArn"]
        self._read = 0

    def execution(self, message_id: str, first: str | None = None) -> str:
        """An execution as the pipe starts it: the batch of one SQS record, a redriven copy's with its attribute."""
        record: dict[str, Any] = {"messageId": message_id, "body": "{}"}
        if first is not None:
            record["messageAttributes"] = {FIRST_MESSAGE_ATTRIBUTE: {"stringValue": first, "dataType": "String"}}
        return self.sfn.start_execution(stateMachineArn=self.machine, input=json.dumps([record]))["executionArn"]

    def new_records(self) -> list[dict[str, Any]]:
        """The stream's records written since the last call."""
        new = stream_records(TABLE, REGION, since=self._read)
        self._read += len(new)
        return new

    def enrich(self) -> list[dict[str, Any]]:
        return [notice for record in self.new_records()
                for notice in notices([record], dynamodb=self.dynamodb, stepfunctions=self.sfn, table=TABLE,
                                      policy=POLICY)]

    def fail(self, message_id: str, arn: str, error: str, state: str = "ChargePayment") -> None:
        claim_failure(self.dynamodb, TABLE, message_id, arn, error=error, state=state)


@pytest.fixture
def account() -> Iterator[Account]:
    with mock_aws():
        yield Account()


def test_a_success_is_told_once_when_the_last_step_reports_it(account: Account) -> None:
    arn = account.execution(FIRST)
    assert DynamoDBDeliveryClaims(account.dynamodb, TABLE, TTL).claim(FIRST, arn)
    progress = AttemptProgress(account.dynamodb, TABLE, FIRST, arn)
    progress.mark("reserved")
    assert account.enrich() == []  # the claim and a stage are not an outcome
    progress.mark("shipped", done=True)
    (notice,) = account.enrich()
    assert (notice["messageId"], notice["state"], notice["stage"], notice["notificationId"]) == (
        FIRST, "succeeded", "shipped", f"{FIRST}:succeeded")
    # A later write on the settled row (a repeated report) tells nothing more
    progress.mark("shipped", done=True)
    assert account.enrich() == []


def test_a_failure_a_redrive_will_retry_is_not_told_and_its_copys_outcome_is_told_under_the_callers_id(
        account: Account) -> None:
    first = account.execution(FIRST)
    assert DynamoDBDeliveryClaims(account.dynamodb, TABLE, TTL).claim(FIRST, first)
    account.fail(FIRST, first, TRANSIENT)
    assert account.enrich() == []  # the Redriver will send it back: not final
    link_redrive(account.dynamodb, TABLE, first_message_id=FIRST, copy_message_id=COPY)
    assert account.enrich() == []  # the link on the settled row
    copy = account.execution(COPY, first=FIRST)
    assert DynamoDBDeliveryClaims(account.dynamodb, TABLE, TTL).claim(COPY, copy)
    AttemptProgress(account.dynamodb, TABLE, COPY, copy).mark("shipped", done=True)
    (notice,) = account.enrich()
    assert (notice["messageId"], notice["attemptMessageId"], notice["redrives"], notice["state"]) == (
        FIRST, COPY, 1, "succeeded")
    assert notice["notificationId"] == f"{COPY}:succeeded"


def test_a_business_failure_is_told_at_once_with_its_error_and_state(account: Account) -> None:
    arn = account.execution(FIRST)
    assert DynamoDBDeliveryClaims(account.dynamodb, TABLE, TTL).claim(FIRST, arn)
    account.fail(FIRST, arn, "PaymentDeclined")
    (notice,) = account.enrich()
    assert (notice["state"], notice["error"], notice["failedState"], notice["retry"], notice["final"]) == (
        "failed", "PaymentDeclined", "ChargePayment", False, True)


def test_a_reconciled_failure_is_told_when_recorded_and_not_again_when_announced(account: Account) -> None:
    arn = account.execution(FIRST)
    assert DynamoDBDeliveryClaims(account.dynamodb, TABLE, TTL).claim(FIRST, arn)
    key = {"messageId": {"S": FIRST}}
    account.dynamodb.update_item(TableName=TABLE, Key=key, UpdateExpression="SET reconciliation = :s",
                                 ExpressionAttributeValues={":s": {"S": "claimed"}})
    assert account.enrich() == []  # claimed for reconciliation: nothing recorded yet
    # An execution a person stopped: no automatic redrive follows (a timed-out one would be retried)
    summary = {"failure": {"state": "ArrangeShipping", "error": "States.Aborted"}, "manualRepair": False,
               "status": "ABORTED"}
    account.dynamodb.update_item(TableName=TABLE, Key=key, UpdateExpression="SET reconciliation = :s, summary = :m",
                                 ExpressionAttributeValues={":s": {"S": "recorded"},
                                                            ":m": {"S": json.dumps(summary)}})
    (notice,) = account.enrich()
    assert (notice["state"], notice["failedState"], notice["error"]) == ("failed", "ArrangeShipping", "States.Aborted")
    account.dynamodb.update_item(TableName=TABLE, Key=key, UpdateExpression="SET reconciliation = :s",
                                 ExpressionAttributeValues={":s": {"S": "announced"}})
    assert account.enrich() == []


def test_a_resend_absorbed_by_the_owner_is_told_so(account: Account) -> None:
    arn = account.execution(COPY)
    assert DynamoDBDeliveryClaims(account.dynamodb, TABLE, TTL).claim(COPY, arn)
    AttemptProgress(account.dynamodb, TABLE, COPY, arn).absorbed(FIRST)
    (notice,) = account.enrich()
    assert (notice["messageId"], notice["state"], notice["absorbedBy"]) == (COPY, "absorbed", FIRST)


# Tickets (fire_and_forget.healing.tickets), on the same stream, against the OpsCenter emulator under both readings
# of what CreateOpsItem answers for a deduplicated OpsItem.
TICKETS = TicketSettings(pipeline="orders", environment="dev", title="Order saga", stack="FireAndForget",
                         runbook_url="https://example.com/runbook.md", key_field="orderId", table=TABLE)


def act(account: Account, center: OpsCenter, records: list[dict[str, Any]] | None = None) -> list[str]:
    """What the tickets did with `records` (the stream's new records unless given), one at a time."""
    return [done for record in (account.new_records() if records is None else records)
            for done in act_on([record], Tickets(center, account.dynamodb, TICKETS), dynamodb=account.dynamodb,
                               stepfunctions=account.sfn, policy=POLICY, table=TABLE)]


@pytest.mark.parametrize("duplicate", ["error", "existing"])
def test_a_failure_for_good_opens_one_ticket_and_the_redriven_success_resolves_it(account: Account,
                                                                                  duplicate: str) -> None:
    center = OpsCenter(duplicate=duplicate)  # type: ignore[arg-type]
    first = account.execution(FIRST)
    assert DynamoDBDeliveryClaims(account.dynamodb, TABLE, TTL).claim(FIRST, first)
    account.fail(FIRST, first, "PaymentDeclined")
    assert act(account, center) == ["opened"]
    (item,) = center.open_items()
    data = {name: value["Value"] for name, value in item.data.items()}
    assert (data["messageId"], data["failedState"], data["error"]) == (FIRST, "ChargePayment", "PaymentDeclined")
    # Its body has no key, so no redrive command (tests/ops/test_ticket_commands.py runs a keyed one's)
    assert data["showCommand"] == f"ff-ops message {FIRST} --stack-name FireAndForget" and "redriveCommand" not in data
    assert item.request["Title"].startswith("[dev] Order saga") and "#failuresneedaperson" in data["runbook"]
    status = read_status(account.dynamodb, TABLE, FIRST, POLICY)
    assert status.ticket == item.id
    # The failure's record again (the mapping retries a batch): no second ticket, whatever CreateOpsItem answers
    failure = [next(r for r in stream_records(TABLE, REGION) if "outcome" in r["dynamodb"].get("NewImage", {}))]
    assert act(account, center, failure) == [] and len(center.items) == 1
    # A dedup hit for a ticket opened but not noted (a crash between the two calls) notes the open one
    account.dynamodb.update_item(TableName=TABLE, Key={"messageId": {"S": FIRST}}, UpdateExpression="REMOVE ticket")
    assert act(account, center, failure) == ["opened"] and len(center.items) == 1
    assert read_status(account.dynamodb, TABLE, FIRST, POLICY).ticket == item.id
    account.new_records()  # the ticket's own writes, read past
    # An operator redrives it after a fix, and the copy succeeds: the ticket is resolved, once
    link_redrive(account.dynamodb, TABLE, first_message_id=FIRST, copy_message_id=COPY)
    copy = account.execution(COPY, first=FIRST)
    assert DynamoDBDeliveryClaims(account.dynamodb, TABLE, TTL).claim(COPY, copy)
    AttemptProgress(account.dynamodb, TABLE, COPY, copy).mark("shipped", done=True)
    assert act(account, center) == ["resolved"]
    assert (item.status, center.open_items()) == ("Resolved", [])
    status = read_status(account.dynamodb, TABLE, FIRST, POLICY)
    assert status.ticket is None and status.state.value == "succeeded"


def test_a_failure_a_redrive_will_retry_opens_no_ticket(account: Account) -> None:
    center = OpsCenter()
    arn = account.execution(FIRST)
    assert DynamoDBDeliveryClaims(account.dynamodb, TABLE, TTL).claim(FIRST, arn)
    account.fail(FIRST, arn, TRANSIENT)
    assert act(account, center) == [] and center.items == {}


def test_opscenters_quota_refuses_the_ticket_and_nothing_else(account: Account) -> None:
    center = OpsCenter(monthly_limit=0)
    arn = account.execution(FIRST)
    assert DynamoDBDeliveryClaims(account.dynamodb, TABLE, TTL).claim(FIRST, arn)
    account.fail(FIRST, arn, "PaymentDeclined")
    assert act(account, center) == ["refused"]
    assert read_status(account.dynamodb, TABLE, FIRST, POLICY).ticket is None


def test_every_ticket_request_is_one_the_ssm_api_accepts_for_the_longest_values(account: Account) -> None:
    center = OpsCenter()  # validates each request against botocore's SSM model
    longest = TicketSettings(pipeline="p" * 32, environment="e" * 16, title="T" * 200, stack="S" * 128,
                             runbook_url="https://example.com/" + "r" * 2000, key_field="orderId", table=TABLE)
    arn = account.execution(FIRST)
    assert DynamoDBDeliveryClaims(account.dynamodb, TABLE, TTL).claim(FIRST, arn)
    account.fail(FIRST, arn, "E" * 1000, state="S" * 80)
    record = stream_records(TABLE, REGION)[-1]
    (ending,) = endings([record], dynamodb=account.dynamodb, stepfunctions=account.sfn, table=TABLE, policy=POLICY)
    request = ops_item(ending, longest)
    center.create_ops_item(**request)
    assert len(request["Title"]) <= 1024 and len(request["Description"]) <= 2048
    assert request["Source"] == "fire-and-forget" and not any(w in request["Source"] for w in ("aws", "amazon", "amzn"))
