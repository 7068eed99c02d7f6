"""The HealingPolicy: what heals by itself, and when; and the failure tail's AnnounceUnlessRetried Choice, run on
moto's Step Functions interpreter, deciding exactly as the policy does over every combination that matters."""

from __future__ import annotations

import base64
import itertools
import json
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws

from fire_and_forget.construct.workflow import announce_or_wait
from fire_and_forget.rehearsal.sqs_rules import violation
from fire_and_forget.runtime.healing_policy import (
    ATTEMPT_ATTRIBUTE,
    FIRST_MESSAGE_ATTRIBUTE,
    Disposition,
    HealingPolicy,
    attempt_of,
    first_message_id,
)

RETRIED = {"ChargePayment": frozenset({"TransientError", "Lambda.Unknown"}),
           "ReserveInventory": frozenset({"TransientError"})}
POLICY = HealingPolicy(transient_errors=RETRIED, max_attempts=3, cool_off_seconds=300, max_cool_off_seconds=3600)


def test_a_retried_error_of_the_failed_state_is_transient_and_waits_for_a_retry() -> None:
    assert POLICY.disposition(state="ChargePayment", error="Lambda.Unknown", manual_repair=False,
                              attempt=0) is Disposition.RETRY


def test_an_error_another_state_retries_is_not_transient_here() -> None:
    assert POLICY.disposition(state="ReserveInventory", error="Lambda.Unknown", manual_repair=False,
                              attempt=0) is Disposition.NEEDS_DECISION


@pytest.mark.parametrize("error", ["OutOfStock", "PaymentDeclined", "InvalidOrder", "KeyError"])
def test_business_errors_and_bugs_need_a_decision(error: str) -> None:
    assert POLICY.disposition(state="ChargePayment", error=error, manual_repair=False,
                              attempt=0) is Disposition.NEEDS_DECISION


def test_manual_repair_wins_over_a_transient_error() -> None:
    assert POLICY.disposition(state="ChargePayment", error="TransientError", manual_repair=True,
                              attempt=0) is Disposition.MANUAL_REPAIR


def test_timeouts_are_transient_and_aborts_are_a_persons_decision() -> None:
    assert POLICY.disposition(state="ArrangeShipping", error="States.Timeout", manual_repair=False,
                              attempt=1, status="TIMED_OUT") is Disposition.RETRY
    assert POLICY.disposition(state="ArrangeShipping", error="States.Timeout", manual_repair=False,
                              attempt=0, status="ABORTED") is Disposition.NEEDS_DECISION


@pytest.mark.parametrize("error", ["States.Timeout", "States.HeartbeatTimeout"])
def test_a_task_that_timed_out_or_missed_its_heartbeat_waits_for_a_retry_under_either_name(error: str) -> None:
    # Step Functions' error names give a missed heartbeat both names; moto reports States.Timeout.
    assert POLICY.disposition(state="BookCarrier", error=error, manual_repair=False,
                              attempt=0) is Disposition.RETRY
    assert POLICY.disposition(state="BookCarrier", error=error, manual_repair=False,
                              attempt=POLICY.max_attempts) is Disposition.EXHAUSTED


def test_a_timed_out_execution_waits_for_a_retry_whatever_error_its_record_names() -> None:
    # Given an execution that timed out in its failure tail, the tail describing an error no state retries
    # When the policy decides, Then the timeout decides: it is transient
    assert POLICY.is_transient(state="ChargePayment", error="PaymentDeclined", status="TIMED_OUT")
    assert POLICY.disposition(state="ChargePayment", error="PaymentDeclined", manual_repair=False, attempt=0,
                              status="TIMED_OUT") is Disposition.RETRY
    # ... while the same record of a FAILED execution needs a decision
    assert not POLICY.is_transient(state="ChargePayment", error="PaymentDeclined", status="FAILED")


def test_the_last_attempt_exhausts_the_retries() -> None:
    dispositions = [POLICY.disposition(state="ChargePayment", error="TransientError", manual_repair=False,
                                       attempt=n) for n in range(5)]
    assert dispositions == [Disposition.RETRY] * 3 + [Disposition.EXHAUSTED] * 2
    assert [d.needs_a_person for d in dispositions] == [False] * 3 + [True] * 2


def test_cool_off_doubles_is_capped_and_jitters_between_half_and_all_of_it() -> None:
    for attempt in range(8):
        capped = min(3600, 300 * 2 ** attempt)
        offs = [POLICY.cool_off(f"m-{i}", attempt).total_seconds() for i in range(200)]
        assert all(capped / 2 <= off <= capped for off in offs)
        assert max(offs) - min(offs) > capped / 4  # jitter spreads them
    assert POLICY.cool_off("m-1", 9).total_seconds() <= 3600


def test_the_due_time_is_the_same_on_every_run() -> None:
    failed = datetime(2026, 12, 1, 12, tzinfo=UTC)
    assert POLICY.due_at(failed, "m-1", 1) == POLICY.due_at(failed, "m-1", 1)
    assert POLICY.due_at(failed, "m-1", 1) != POLICY.due_at(failed, "m-2", 1)


def test_the_policy_travels_through_the_environment_unchanged() -> None:
    assert HealingPolicy.from_environment(POLICY.to_environment()) == POLICY


def test_attempt_and_first_message_are_read_from_the_record_attributes() -> None:
    plain = {"messageId": "m-2", "messageAttributes": {}}
    redriven = {"messageId": "m-3", "messageAttributes": {
        ATTEMPT_ATTRIBUTE: {"stringValue": "2", "dataType": "Number"},
        FIRST_MESSAGE_ATTRIBUTE: {"stringValue": "m-1", "dataType": "String"}}}
    assert (attempt_of(plain), first_message_id(plain)) == (0, "m-2")
    assert (attempt_of(redriven), first_message_id(redriven)) == (2, "m-1")
    assert attempt_of({"messageAttributes": {ATTEMPT_ATTRIBUTE: {"stringValue": "x"}}}) == 0


def test_the_resend_check_counts_bytes_as_sqs_does_for_the_message_the_redriver_would_send() -> None:
    """Around the size limit, the policy refuses exactly what SQS would (the emulator's rule,
    src/fire_and_forget/rehearsal/sqs_rules.py), for the redrive's message: the record's body and attributes (String,
    Number, Binary, UTF-8) plus its own two."""
    limit = 2048
    policy = HealingPolicy(transient_errors=RETRIED, max_message_bytes=limit)
    attributes = {"name": {"dataType": "String", "stringValue": "Zoë"},
                  "n": {"dataType": "Number", "stringValue": "42"},
                  "blob": {"dataType": "Binary", "binaryValue": base64.b64encode(b"\x00\x01\x02").decode()}}
    verdicts = set()
    for attempt, first in ((0, None), (2, "m-first")):
        extra = dict(attributes)
        if first is not None:  # a redriven copy: its healing attributes are replaced, not added
            extra |= {ATTEMPT_ATTRIBUTE: {"dataType": "Number", "stringValue": str(attempt)},
                      FIRST_MESSAGE_ATTRIBUTE: {"dataType": "String", "stringValue": first}}
        for length in range(limit - 140, limit - 80):
            record = {"messageId": "m-1", "body": "é" * (length // 2) + "x" * (length % 2), "messageAttributes": extra}
            sent = {name: _send_shape(value) for name, value in extra.items()} | {
                ATTEMPT_ATTRIBUTE: {"DataType": "Number", "StringValue": str(attempt + 1)},
                FIRST_MESSAGE_ATTRIBUTE: {"DataType": "String", "StringValue": first or "m-1"}}
            refused = violation(record["body"], sent, limit) is not None  # type: ignore[arg-type]
            assert (policy.resend_problem(record, attempt) is not None) == refused, (attempt, length)
            verdicts.add(refused)
    assert verdicts == {True, False}  # the range spans the limit
    crowded = {"messageId": "m-1", "body": "{}", "messageAttributes": {f"a{i}": {"dataType": "String",
                                                                               "stringValue": "v"} for i in range(9)}}
    assert "SQS allows 10" in (policy.resend_problem(crowded, 0) or "")


def _send_shape(value: dict[str, Any]) -> dict[str, Any]:
    if value["dataType"] == "Binary":
        return {"DataType": "Binary", "BinaryValue": base64.b64decode(value["binaryValue"])}
    return {"DataType": value["dataType"], "StringValue": value["stringValue"]}


# -- the ASL twin of the policy ---------------------------------------------------------------------------------

CASE_STATES = ["ChargePayment", "ReserveInventory", "ArrangeShipping"]
CASE_ERRORS = ["TransientError", "Lambda.Unknown", "States.Timeout", "States.HeartbeatTimeout", "OutOfStock"]


def _choice_machine() -> dict[str, Any]:
    choice = announce_or_wait(RETRIED, POLICY.max_attempts)
    choice["Choices"][0]["Next"] = "Wait"
    choice["Default"] = "Announce"
    return {
        "StartAt": "Describe",
        "States": {
            "Describe": {"Type": "Pass", "Parameters": {"failure.$": "$[0].case.failure",
                                                        "manualRepair.$": "$[0].case.manualRepair"},
                         "Next": "Decide"},
            "Decide": choice,
            "Wait": {"Type": "Succeed"},
            "Announce": {"Type": "Succeed"},
        },
    }


def test_the_failure_tails_choice_waits_exactly_when_the_policy_says_retry() -> None:
    cases = list(itertools.product(CASE_STATES, CASE_ERRORS, [False, True], [None, 0, 1, 2, 3, 4]))
    with mock_aws(config={"stepfunctions": {"execute_state_machine": True}}):
        sfn = boto3.client("stepfunctions", region_name="us-east-1")
        arn = sfn.create_state_machine(name="choice", definition=json.dumps(_choice_machine()),
                                       roleArn="arn:aws:iam::123456789012:role/x")["stateMachineArn"]
        started = []
        for state, error, manual, attempt in cases:
            attributes = {} if attempt is None else {ATTEMPT_ATTRIBUTE: {"stringValue": str(attempt),
                                                                          "dataType": "Number"}}
            record = {"messageId": "m", "messageAttributes": attributes,
                      "case": {"failure": {"state": state, "error": error, "cause": ""}, "manualRepair": manual}}
            started.append(sfn.start_execution(stateMachineArn=arn, name=f"case-{len(started)}",
                                               input=json.dumps([record]))["executionArn"])
        mismatches = []
        for (state, error, manual, attempt), execution in zip(cases, started, strict=True):
            ended = _last_state(sfn, execution)
            expected = POLICY.disposition(state=state, error=error, manual_repair=manual,
                                          attempt=attempt or 0) is Disposition.RETRY
            if (ended == "Wait") != expected:
                mismatches.append((state, error, manual, attempt, ended))
    assert not mismatches
    assert len(cases) == 180


def _last_state(sfn: Any, execution: str) -> str:
    deadline = time.monotonic() + 30
    while sfn.describe_execution(executionArn=execution)["status"] == "RUNNING":
        assert time.monotonic() < deadline
        time.sleep(0.01)
    events = sfn.get_execution_history(executionArn=execution)["events"]
    return [e["stateEnteredEventDetails"]["name"] for e in events if e["type"].endswith("StateEntered")][-1]


def test_no_retry_branch_when_automatic_redrives_are_off() -> None:
    from stacks.config import AppConfig
    from stacks.orders.stack import render_definition

    off = render_definition(AppConfig.model_validate({"healing": {"maxAttempts": 0}}))["States"]
    on = render_definition(AppConfig())["States"]
    assert off["HandleFailure"]["Next"] == "FormatFailureAlert" and "AnnounceUnlessRetried" not in off
    assert "FailureRecordedForRetry" not in off  # unreachable without the Choice: Step Functions would refuse it
    assert on["HandleFailure"]["Next"] == "AnnounceUnlessRetried"
    assert on["AnnounceUnlessRetried"]["Choices"][0]["Next"] == "FailureRecordedForRetry"
    assert timedelta(0) < POLICY.cool_off("m", 0)
