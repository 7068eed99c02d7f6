"""The Reconciler's sweep and its settled marks, request by request on botocore's Stubber: ListExecutions per status
and page, stopping at the page that reaches before the window; BatchGetItem in hundreds with its unprocessed keys read
again; the settled row's exact UpdateItem, and a failed one that changes nothing."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from fire_and_forget.healing.reconciliation import History, Reconciler, ReconcilerSettings, Verdict
from fire_and_forget.runtime.healing_policy import HealingPolicy

MACHINE = "arn:aws:states:us-east-1:123456789012:stateMachine:saga"
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
LOOKBACK, LONGEST = timedelta(hours=6), timedelta(hours=1)
SINCE = NOW - LOOKBACK  # the window's start
TABLE = "deliveries"
SETTINGS = ReconcilerSettings(
    pipeline="orders", environment="dev", title="Order saga", region="us-east-1", state_machine_arn=MACHINE,
    failure_dlq_url="https://sqs.us-east-1.amazonaws.com/123456789012/failure-dlq",
    alerts_topic_arn="arn:aws:sns:us-east-1:123456789012:alerts", deliveries_table=TABLE, compensations=(),
    claim_ttl_seconds=3600)


def arn(name: str) -> str:
    return f"arn:aws:states:us-east-1:123456789012:execution:saga:{name}"


def listed(name: str, status: str, *, started: datetime, stopped: datetime | None,
           redrives: int | None = None) -> dict[str, Any]:
    item: dict[str, Any] = {"executionArn": arn(name), "stateMachineArn": MACHINE, "name": name, "status": status,
                            "startDate": started}
    if stopped is not None:
        item["stopDate"] = stopped
    if redrives is not None:
        item["redriveCount"] = redrives
    return item


@pytest.fixture
def stubbed() -> Iterator[tuple[Reconciler, Stubber, Stubber]]:
    sfn, dynamodb = boto3.client("stepfunctions", region_name="us-east-1"), boto3.client("dynamodb",
                                                                                        region_name="us-east-1")
    with Stubber(sfn) as sfn_stub, Stubber(dynamodb) as dynamodb_stub:
        reconciler = Reconciler(sfn=sfn, dynamodb=dynamodb, sqs=None, sns=None, lambda_client=None,
                                settings=SETTINGS, policy=HealingPolicy(transient_errors={}))
        yield reconciler, sfn_stub, dynamodb_stub
        sfn_stub.assert_no_pending_responses()
        dynamodb_stub.assert_no_pending_responses()


def expect_page(sfn: Stubber, status: str, executions: list[dict[str, Any]], *, token: str | None = None,
                next_token: str | None = None) -> None:
    request = {"stateMachineArn": MACHINE, "statusFilter": status}
    if token is not None:
        request["nextToken"] = token
    response: dict[str, Any] = {"executions": executions}
    if next_token is not None:
        response["nextToken"] = next_token
    sfn.add_response("list_executions", response, request)


def expect_settled(dynamodb: Stubber, keys: list[str], found: list[str], unprocessed: list[str] | None = None) -> None:
    request = {TABLE: {"Keys": [{"messageId": {"S": k}} for k in keys], "ProjectionExpression": "messageId",
                       "ConsistentRead": True}}
    response: dict[str, Any] = {"Responses": {TABLE: [{"messageId": {"S": k}} for k in found]}}
    if unprocessed:
        response["UnprocessedKeys"] = {TABLE: {"Keys": [{"messageId": {"S": k}} for k in unprocessed],
                                               "ProjectionExpression": "messageId", "ConsistentRead": True}}
    dynamodb.add_response("batch_get_item", response, {"RequestItems": request})


def test_the_sweep_reads_each_status_page_by_page_until_a_page_reaches_before_the_window(
        stubbed: tuple[Reconciler, Stubber, Stubber]) -> None:
    reconciler, sfn, dynamodb = stubbed
    hour = timedelta(hours=1)
    # ABORTED: two pages; the second ends with an execution that started before the window's start minus the
    # longest run, so the third page is never asked for.
    expect_page(sfn, "ABORTED", [listed("a1", "ABORTED", started=NOW - 2 * hour, stopped=NOW - hour)],
                next_token="page-2")
    expect_page(sfn, "ABORTED", [
        listed("a2", "ABORTED", started=SINCE - hour, stopped=SINCE),  # stopped exactly at the window's start
        listed("a3", "ABORTED", started=SINCE - hour, stopped=SINCE - timedelta(seconds=1)),  # just before it
        listed("a4", "ABORTED", started=SINCE - LONGEST - timedelta(seconds=1), stopped=SINCE - timedelta(minutes=1)),
    ], token="page-2", next_token="page-3")
    # FAILED: a page that stays inside the window is followed by the next one
    expect_page(sfn, "FAILED", [listed("f1", "FAILED", started=NOW - hour, stopped=NOW - hour, redrives=2),
                                listed("f2", "FAILED", started=NOW - hour, stopped=None)], next_token="more")
    expect_page(sfn, "FAILED", [listed("f3", "FAILED", started=SINCE - LONGEST, stopped=NOW)], token="more")
    expect_page(sfn, "TIMED_OUT", [])
    keys = sorted([f"settled#{arn('a1')}#0", f"settled#{arn('a2')}#0", f"settled#{arn('f1')}#2",
                   f"settled#{arn('f3')}#0"])
    expect_settled(dynamodb, keys, found=[f"settled#{arn('a1')}#0"], unprocessed=[f"settled#{arn('f1')}#2"])
    expect_settled(dynamodb, [f"settled#{arn('f1')}#2"], found=[f"settled#{arn('f1')}#2"])

    found = list(reconciler.sweep(NOW, LOOKBACK, LONGEST))

    assert found == [arn("a2"), arn("f3")]


def test_a_page_whose_last_execution_started_exactly_at_the_oldest_start_is_followed(
        stubbed: tuple[Reconciler, Stubber, Stubber]) -> None:
    reconciler, sfn, dynamodb = stubbed
    expect_page(sfn, "ABORTED", [listed("a1", "ABORTED", started=SINCE - LONGEST, stopped=SINCE)], next_token="2")
    expect_page(sfn, "ABORTED", [], token="2")
    expect_page(sfn, "FAILED", [])
    expect_page(sfn, "TIMED_OUT", [])
    expect_settled(dynamodb, [f"settled#{arn('a1')}#0"], found=[])
    assert list(reconciler.sweep(NOW, LOOKBACK, LONGEST)) == [arn("a1")]


def test_the_settled_marks_are_read_a_hundred_keys_at_a_time(stubbed: tuple[Reconciler, Stubber, Stubber]) -> None:
    reconciler, sfn, dynamodb = stubbed
    names = [f"e{number:03d}" for number in range(150)]
    expect_page(sfn, "ABORTED", [])
    expect_page(sfn, "FAILED", [listed(name, "FAILED", started=NOW - timedelta(minutes=10),
                                       stopped=NOW - timedelta(minutes=5)) for name in names])
    expect_page(sfn, "TIMED_OUT", [])
    keys = sorted(f"settled#{arn(name)}#0" for name in names)
    expect_settled(dynamodb, keys[:100], found=keys[:100])
    expect_settled(dynamodb, keys[100:], found=[])
    assert list(reconciler.sweep(NOW, LOOKBACK, LONGEST)) == [arn(name) for name in names[100:]]


def test_an_answer_without_the_table_or_any_response_finds_nothing_settled(
        stubbed: tuple[Reconciler, Stubber, Stubber]) -> None:
    reconciler, sfn, dynamodb = stubbed
    expect_page(sfn, "ABORTED", [listed("a1", "ABORTED", started=NOW, stopped=NOW),
                                 listed("a2", "ABORTED", started=NOW, stopped=NOW)])
    expect_page(sfn, "FAILED", [])
    expect_page(sfn, "TIMED_OUT", [])
    keys = sorted([f"settled#{arn('a1')}#0", f"settled#{arn('a2')}#0"])
    request = {TABLE: {"Keys": [{"messageId": {"S": k}} for k in keys], "ProjectionExpression": "messageId",
                       "ConsistentRead": True}}
    unprocessed = {TABLE: {"Keys": [{"messageId": {"S": keys[1]}}], "ProjectionExpression": "messageId",
                           "ConsistentRead": True}}
    dynamodb.add_response("batch_get_item", {"Responses": {}, "UnprocessedKeys": unprocessed},
                          {"RequestItems": request})
    dynamodb.add_response("batch_get_item", {}, {"RequestItems": unprocessed})
    assert list(reconciler.sweep(NOW, LOOKBACK, LONGEST)) == [arn("a1"), arn("a2")]


def test_an_empty_window_reads_no_settled_marks(stubbed: tuple[Reconciler, Stubber, Stubber]) -> None:
    reconciler, sfn, _dynamodb = stubbed
    for status in ("ABORTED", "FAILED", "TIMED_OUT"):
        expect_page(sfn, status, [])
    assert list(reconciler.sweep(NOW, LOOKBACK, LONGEST)) == []


def described(name: str, status: str, **extra: Any) -> dict[str, Any]:
    return {"executionArn": arn(name), "stateMachineArn": MACHINE, "status": status, "startDate": NOW, **extra}


def test_what_the_tail_handled_is_marked_settled_with_its_verdict_and_expiry(
        stubbed: tuple[Reconciler, Stubber, Stubber]) -> None:
    reconciler, sfn, dynamodb = stubbed
    sfn.add_response("describe_execution", described("h1", "FAILED", error="FailureRecorded", redriveCount=3),
                     {"executionArn": arn("h1")})
    dynamodb.add_response("update_item", {}, {
        "TableName": TABLE, "Key": {"messageId": {"S": f"settled#{arn('h1')}#3"}},
        "UpdateExpression": "SET verdict = :verdict, expiresAt = :ttl",
        "ExpressionAttributeValues": {":verdict": {"S": "handled"},
                                      ":ttl": {"N": str(int(NOW.timestamp()) + 3600)}}})
    result = reconciler.reconcile(arn("h1"), via="sweep", now=NOW)
    assert (result.verdict, result.status, result.execution_arn) == (Verdict.HANDLED, "FAILED", arn("h1"))


def test_a_settled_mark_that_cannot_be_written_changes_nothing(stubbed: tuple[Reconciler, Stubber, Stubber]) -> None:
    reconciler, sfn, dynamodb = stubbed
    sfn.add_response("describe_execution", described("h2", "FAILED", error="FailureRecorded"),
                     {"executionArn": arn("h2")})
    dynamodb.add_client_error("update_item", "ProvisionedThroughputExceededException", "slow down")
    assert reconciler.reconcile(arn("h2"), via="event", now=NOW).verdict is Verdict.HANDLED


@pytest.mark.parametrize("extra", [{"status": "RUNNING"}, {"status": "SUCCEEDED"},
                                   {"status": "FAILED", "redriveStatus": "NOT_REDRIVABLE_RUNNING"}],
                         ids=["running", "succeeded", "being redriven"])
def test_an_execution_that_has_not_failed_is_neither_reconciled_nor_marked(
        stubbed: tuple[Reconciler, Stubber, Stubber], extra: dict[str, Any]) -> None:
    reconciler, sfn, _dynamodb = stubbed
    status = extra["status"]
    others = {name: value for name, value in extra.items() if name != "status"}
    sfn.add_response("describe_execution", described("r1", status, **others), {"executionArn": arn("r1")})
    result = reconciler.reconcile(arn("r1"), via="event", now=NOW)
    assert (result.verdict, result.status, result.message_id) == (Verdict.NOT_FAILED, status, None)


def test_the_history_is_read_page_by_page_with_the_input_each_state_was_entered_with(
        stubbed: tuple[Reconciler, Stubber, Stubber]) -> None:
    reconciler, sfn, _dynamodb = stubbed
    # Given a history of two pages, the failure tail's input on the second
    tail = '{"failure": {"state": "ChargePayment", "error": "PaymentDeclined"}}'
    first_page = [{"id": 1, "timestamp": NOW, "type": "ExecutionStarted"},
                  {"id": 2, "previousEventId": 1, "timestamp": NOW, "type": "TaskStateEntered",
                   "stateEnteredEventDetails": {"name": "ChargePayment", "input": "{}"}}]
    second_page = [{"id": 3, "previousEventId": 2, "timestamp": NOW, "type": "TaskStateEntered",
                    "stateEnteredEventDetails": {"name": "ClaimFailure", "input": tail}}]
    request = {"executionArn": arn("x1"), "includeExecutionData": True}
    sfn.add_response("get_execution_history", {"events": first_page, "nextToken": "page-2"}, request)
    sfn.add_response("get_execution_history", {"events": second_page}, request | {"nextToken": "page-2"})
    # When the Reconciler reads it
    events = reconciler._history(arn("x1"))
    # Then both pages were asked for with the events' data, and the tail's input is there to be read
    assert [event["id"] for event in events] == [1, 2, 3]
    assert History.from_events(events).tail_input == {"failure": {"state": "ChargePayment",
                                                                  "error": "PaymentDeclined"}}


def test_a_refused_claim_reads_the_row_consistently_to_find_it_announced(
        stubbed: tuple[Reconciler, Stubber, Stubber]) -> None:
    reconciler, _sfn, dynamodb = stubbed
    stamp = int(NOW.timestamp())
    # Given a row another run finished: the claim's condition refuses it
    dynamodb.add_client_error("update_item", "ConditionalCheckFailedException", "The conditional request failed",
                              expected_params={
        "TableName": TABLE, "Key": {"messageId": {"S": "m-1"}},
        "UpdateExpression": "SET executionArn = if_not_exists(executionArn, :arn), "
                            "reconciliation = if_not_exists(reconciliation, :claimed), "
                            "reconcileLeaseUntil = :lease, expiresAt = if_not_exists(expiresAt, :ttl)",
        "ConditionExpression": "(attribute_not_exists(messageId) OR executionArn = :arn) AND "
                               "(attribute_not_exists(reconcileLeaseUntil) OR reconcileLeaseUntil < :now) AND "
                               "(attribute_not_exists(reconciliation) OR reconciliation <> :announced)",
        "ExpressionAttributeValues": {
            ":arn": {"S": arn("a1")}, ":claimed": {"S": "CLAIMED"}, ":announced": {"S": "ANNOUNCED"},
            ":lease": {"N": str(stamp + 300)}, ":now": {"N": str(stamp)}, ":ttl": {"N": str(stamp + 3600)}},
        "ReturnValues": "ALL_NEW"})
    # ... and a strongly consistent read, so that the other run's last write is seen
    dynamodb.add_response("get_item", {"Item": {"messageId": {"S": "m-1"}, "executionArn": {"S": arn("a1")},
                                                "reconciliation": {"S": "ANNOUNCED"}}},
                          {"TableName": TABLE, "Key": {"messageId": {"S": "m-1"}}, "ConsistentRead": True})
    # When this run claims it, Then it gets the finished row back rather than a claim
    assert reconciler._claim("m-1", arn("a1"), NOW) == {"messageId": "m-1", "executionArn": arn("a1"),
                                                        "reconciliation": "ANNOUNCED"}
