"""A caller's message status, read from the deliveries table's rows as the pipeline writes them
(fire_and_forget.runtime.status): the claim, the steps' progress, the tail's and the Reconciler's failure, redrives."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from fire_and_forget.runtime.deliveries import DynamoDBDeliveryClaims
from fire_and_forget.runtime.healing_policy import HealingPolicy
from fire_and_forget.runtime.status import AttemptProgress, State, link_redrive, read_status
from tests.support.claim_failure import claim_failure

TABLE = "deliveries"
TTL = 15 * 24 * 3600
FIRST, COPY, SECOND_COPY = "m-1", "m-2", "m-3"
ARN = "arn:aws:states:us-east-1:123456789012:execution:Saga:one"
COPY_ARN = "arn:aws:states:us-east-1:123456789012:execution:Saga:two"
POLICY = HealingPolicy(transient_errors={"ChargePayment": frozenset({"Lambda.ServiceException"})})


@pytest.fixture
def dynamodb() -> Iterator[Any]:
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        client.create_table(TableName=TABLE, KeySchema=[{"AttributeName": "messageId", "KeyType": "HASH"}],
                            AttributeDefinitions=[{"AttributeName": "messageId", "AttributeType": "S"}],
                            BillingMode="PAY_PER_REQUEST")
        yield client


def claimed(dynamodb: Any, message_id: str = FIRST, arn: str = ARN) -> AttemptProgress:
    assert DynamoDBDeliveryClaims(dynamodb, TABLE, TTL).claim(message_id, arn)
    return AttemptProgress(dynamodb, TABLE, message_id, arn)


def failed_by_the_tail(dynamodb: Any, message_id: str, arn: str, *, error: str, state: str,
                       manual_repair: bool = False) -> None:
    claim_failure(dynamodb, TABLE, message_id, arn, error=error, state=state, manual_repair=manual_repair)


def test_a_message_nobody_received_is_unknown(dynamodb: Any) -> None:
    assert read_status(dynamodb, TABLE, FIRST).state is State.UNKNOWN


def test_a_message_goes_from_accepted_through_its_stages_to_succeeded(dynamodb: Any) -> None:
    progress = claimed(dynamodb)
    assert read_status(dynamodb, TABLE, FIRST).state is State.ACCEPTED
    assert progress.mark("reserved")
    status = read_status(dynamodb, TABLE, FIRST)
    assert (status.state, status.stage, status.execution_arn, status.final) == (State.IN_PROGRESS, "reserved", ARN,
                                                                                False)
    assert progress.mark("shipped", done=True)
    status = read_status(dynamodb, TABLE, FIRST)
    assert (status.state, status.stage, status.final) == (State.SUCCEEDED, "shipped", True)


def test_another_execution_cannot_mark_a_message_it_does_not_own(dynamodb: Any) -> None:
    claimed(dynamodb)
    twin = AttemptProgress(dynamodb, TABLE, FIRST, COPY_ARN)  # a duplicate delivery's execution, which lost the claim
    assert not twin.mark("reserved", done=True)
    assert read_status(dynamodb, TABLE, FIRST).state is State.ACCEPTED


def test_nothing_moves_a_recorded_failure_back(dynamodb: Any) -> None:
    # Given a step's late invocation that still runs after its execution's failure was recorded
    progress = claimed(dynamodb)
    failed_by_the_tail(dynamodb, FIRST, ARN, error="PaymentDeclined", state="ChargePayment")
    # Then it cannot report progress, nor a success
    assert not progress.mark("shipped", done=True)
    status = read_status(dynamodb, TABLE, FIRST, POLICY)
    assert (status.state, status.error, status.failed_state, status.retry, status.final) == (
        State.FAILED, "PaymentDeclined", "ChargePayment", False, True)


def test_a_reconciled_execution_reads_as_failed_with_the_reconcilers_reason(dynamodb: Any) -> None:
    progress = claimed(dynamodb)
    progress.mark("charged")
    summary = {"failure": {"state": "ArrangeShipping", "error": "States.Timeout"}, "manualRepair": False,
               "status": "TIMED_OUT"}
    dynamodb.update_item(TableName=TABLE, Key={"messageId": {"S": FIRST}},
                         UpdateExpression="SET reconciliation = :r, summary = :s",
                         ExpressionAttributeValues={":r": {"S": "ANNOUNCED"}, ":s": {"S": json.dumps(summary)}})
    assert not progress.mark("shipped", done=True)
    status = read_status(dynamodb, TABLE, FIRST, POLICY)
    # A timeout is transient: the automatic redrive will try it again
    assert (status.state, status.error, status.failed_state, status.retry, status.final) == (
        State.FAILED, "States.Timeout", "ArrangeShipping", True, False)


def test_an_aborted_execution_reads_as_failed_for_good_whatever_its_error(dynamodb: Any) -> None:
    claimed(dynamodb)
    # Stopped by a person: never retried automatically, even with an error name a step's Retry lists
    summary = {"failure": {"state": "ChargePayment", "error": "Lambda.ServiceException"}, "manualRepair": False,
               "status": "ABORTED"}
    dynamodb.update_item(TableName=TABLE, Key={"messageId": {"S": FIRST}},
                         UpdateExpression="SET reconciliation = :r, summary = :s",
                         ExpressionAttributeValues={":r": {"S": "RECORDED"}, ":s": {"S": json.dumps(summary)}})
    status = read_status(dynamodb, TABLE, FIRST, POLICY)
    assert (status.state, status.retry, status.final) == (State.FAILED, False, True)


def test_a_failure_with_no_policy_to_read_says_it_cannot_tell_whether_a_retry_follows(dynamodb: Any) -> None:
    claimed(dynamodb)
    failed_by_the_tail(dynamodb, FIRST, ARN, error="Lambda.ServiceException", state="ChargePayment")
    assert read_status(dynamodb, TABLE, FIRST).retry is None
    assert read_status(dynamodb, TABLE, FIRST, POLICY).retry is True


def test_a_redriven_message_is_followed_to_its_latest_attempt(dynamodb: Any) -> None:
    # Given the caller's message failed transiently and was sent back as a copy
    claimed(dynamodb)
    failed_by_the_tail(dynamodb, FIRST, ARN, error="Lambda.ServiceException", state="ChargePayment")
    link_redrive(dynamodb, TABLE, first_message_id=FIRST, copy_message_id=COPY, ttl_seconds=TTL)
    # While the copy waits in the source queue the work is accepted again, not failed
    status = read_status(dynamodb, TABLE, FIRST, POLICY)
    assert (status.state, status.attempt_message_id, status.attempts) == (State.ACCEPTED, COPY, 1)
    # When the copy runs and succeeds, the caller's id reads as succeeded
    copy = claimed(dynamodb, COPY, COPY_ARN)
    copy.mark("shipped", done=True)
    status = read_status(dynamodb, TABLE, FIRST, POLICY)
    assert (status.state, status.attempt_message_id, status.execution_arn) == (State.SUCCEEDED, COPY, COPY_ARN)


def test_a_second_redrive_replaces_the_first_and_a_repeated_report_changes_nothing(dynamodb: Any) -> None:
    claimed(dynamodb)
    failed_by_the_tail(dynamodb, FIRST, ARN, error="Lambda.ServiceException", state="ChargePayment")
    link_redrive(dynamodb, TABLE, first_message_id=FIRST, copy_message_id=COPY, ttl_seconds=TTL)
    failed_by_the_tail(dynamodb, COPY, COPY_ARN, error="Lambda.ServiceException", state="ChargePayment")
    link_redrive(dynamodb, TABLE, first_message_id=FIRST, copy_message_id=SECOND_COPY, ttl_seconds=TTL)
    link_redrive(dynamodb, TABLE, first_message_id=FIRST, copy_message_id=COPY, ttl_seconds=TTL)  # reported again
    status = read_status(dynamodb, TABLE, FIRST, POLICY)
    assert (status.attempt_message_id, status.state) == (SECOND_COPY, State.ACCEPTED)


def test_the_attempts_a_failure_has_had_decide_whether_another_follows(dynamodb: Any) -> None:
    # Given the caller's message and three copies, every one failed transiently
    policy = HealingPolicy(transient_errors=POLICY.transient_errors, max_attempts=3)
    ids = [FIRST, "c-1", "c-2", "c-3"]
    for number, message_id in enumerate(ids):
        claimed(dynamodb, message_id, f"{ARN}-{number}")
        failed_by_the_tail(dynamodb, message_id, f"{ARN}-{number}", error="Lambda.ServiceException",
                           state="ChargePayment")
        if number:
            link_redrive(dynamodb, TABLE, first_message_id=FIRST, copy_message_id=message_id, ttl_seconds=TTL)
        status = read_status(dynamodb, TABLE, FIRST, policy)
        # Then a retry follows after each but the third copy's failure: the policy's attempts are spent
        assert (status.attempts, status.retry) == (number, number < 3)


def test_a_resend_of_work_another_message_owns_reads_as_absorbed(dynamodb: Any) -> None:
    progress = claimed(dynamodb, COPY, COPY_ARN)
    assert progress.absorbed(FIRST)
    status = read_status(dynamodb, TABLE, COPY)
    assert (status.state, status.absorbed_by, status.final) == (State.ABSORBED, FIRST, True)
    assert not progress.mark("reserved")  # its outcome is recorded
