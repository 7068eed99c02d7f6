"""The healing policy's rules to the byte and to the second (fire_and_forget/runtime/healing_policy.py): the size of
the message a redrive would send back, for every shape an attribute can have; the attribute count; the policy's trip
through the function's environment with every setting off its default; the jitter's whole range; the attempt and the
first messageId read from any record."""

from __future__ import annotations

import base64
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from fire_and_forget.runtime.healing_policy import (
    ATTEMPT_ATTRIBUTE,
    FIRST_MESSAGE_ATTRIBUTE,
    SQS_MAX_MESSAGE_BYTES,
    Classification,
    Disposition,
    HealingPolicy,
    attempt_of,
    first_message_id,
)

RETRIED = {"ChargePayment": frozenset({"TransientError", "Lambda.Unknown"}),
           "ReserveInventory": frozenset({"TransientError"})}


def redrive_bytes(attempt: int, first: str) -> int:
    """What the redrive's two attributes add, as SQS counts them: each name, data type and value."""
    return len(ATTEMPT_ATTRIBUTE + "Number" + str(attempt + 1)) + len(FIRST_MESSAGE_ATTRIBUTE + "String" + first)


# (record, attempt, its resent size): every attribute shape the pipe's record can hold, and records missing parts
SIZED: list[tuple[str, dict[str, Any], int, int]] = [
    ("no message id, no attributes", {"body": "x" * 100}, 0, 100 + redrive_bytes(0, "")),
    ("a ninth attempt: the count's last one-digit value", {"messageId": "m-1", "body": "x" * 100}, 8,
     100 + redrive_bytes(8, "m-1")),
    ("a tenth attempt", {"messageId": "m-1", "body": "x" * 100}, 9, 100 + redrive_bytes(9, "m-1")),
    ("an attribute without a data type", {"messageId": "m-1", "body": "{}",
                                          "messageAttributes": {"note": {"stringValue": "abc"}}},
     0, 2 + len("note" "" "abc") + redrive_bytes(0, "m-1")),
    ("a string without its value", {"messageId": "m-1", "body": "{}",
                                    "messageAttributes": {"s": {"dataType": "String"}}},
     0, 2 + len("s" "String") + redrive_bytes(0, "m-1")),
    ("a binary without its value", {"messageId": "m-1", "body": "{}",
                                    "messageAttributes": {"b": {"dataType": "Binary"}}},
     0, 2 + len("b" "Binary") + redrive_bytes(0, "m-1")),
    ("a binary that is not base64", {"messageId": "m-1", "body": "{}",
                                     "messageAttributes": {"b": {"dataType": "Binary", "binaryValue": "abc"}}},
     0, 2 + len("b" "Binary" "abc") + redrive_bytes(0, "m-1")),
    ("a custom binary", {"messageId": "m-1", "body": "{}", "messageAttributes": {
        "img": {"dataType": "Binary.png", "binaryValue": base64.b64encode(b"\x00" * 30).decode()}}},
     0, 2 + len("img" "Binary.png") + 30 + redrive_bytes(0, "m-1")),
    ("UTF-8 text", {"messageId": "m-1", "body": "é" * 10,
                    "messageAttributes": {"city": {"dataType": "String", "stringValue": "Zürich"}}},
     0, 20 + len("city" "String") + len("Zürich".encode()) + redrive_bytes(0, "m-1")),
    ("no body", {"messageId": "m-1"}, 0, redrive_bytes(0, "m-1")),
    ("attributes that are not an object", {"messageId": "m-1", "body": "{}", "messageAttributes": None},
     0, 2 + redrive_bytes(0, "m-1")),
]


@pytest.mark.parametrize(("record", "attempt", "size"), [case[1:] for case in SIZED], ids=[c[0] for c in SIZED])
def test_a_message_that_fits_exactly_is_resent_and_one_byte_more_is_not(record: dict[str, Any], attempt: int,
                                                                        size: int) -> None:
    assert HealingPolicy(RETRIED, max_message_bytes=size).resend_problem(record, attempt) is None
    assert HealingPolicy(RETRIED, max_message_bytes=size - 1).resend_problem(record, attempt) == (
        f"resent with the redrive's attributes it would be {size} bytes (body and every attribute's name, type and "
        f"value), over the source queue's maximum of {size - 1}")


def attributes(count: int) -> dict[str, Any]:
    return {f"a{i}": {"dataType": "String", "stringValue": "v"} for i in range(count)}


def test_the_redrives_two_attributes_must_fit_within_sqss_ten() -> None:
    policy = HealingPolicy(RETRIED)
    assert policy.resend_problem({"messageId": "m", "body": "{}", "messageAttributes": attributes(8)}, 0) is None
    assert policy.resend_problem({"messageId": "m", "body": "{}", "messageAttributes": attributes(9)}, 0) == (
        "the message has 9 message attributes; with the redrive's ffRedriveAttempt and ffFirstMessageId it would "
        "have 11, and SQS allows 10")
    # A redriven copy already carries the two: they are replaced, not added
    healing = {ATTEMPT_ATTRIBUTE: {"dataType": "Number", "stringValue": "1"},
               FIRST_MESSAGE_ATTRIBUTE: {"dataType": "String", "stringValue": "m-0"}}
    assert policy.resend_problem({"messageId": "m", "body": "{}", "messageAttributes": attributes(8) | healing},
                                 1) is None
    too_many = {"messageId": "m", "body": "{}", "messageAttributes": attributes(9) | healing}
    assert "it would have 11" in (policy.resend_problem(too_many, 1) or "")
    # Values that are not attributes are not sent, so not counted
    assert policy.resend_problem({"messageId": "m", "body": "{}",
                                  "messageAttributes": attributes(8) | {"junk": "text"}}, 0) is None


@dataclass(frozen=True)
class Failed:
    """What the policy reads of a failure-DLQ record (its FailedRecord protocol)."""

    record: dict[str, Any]
    error: str = "TransientError"
    failed_state: str = "ChargePayment"
    message_id: str = "dlq-1"
    manual_repair: bool = False
    status: str = "FAILED"
    failed_at: datetime | None = datetime(2026, 12, 1, 12, tzinfo=UTC)


def test_classify_reads_an_unsendable_record_from_the_record_itself() -> None:
    policy = HealingPolicy(RETRIED)
    crowded = {"messageId": "m-1", "body": "{}", "messageAttributes": attributes(9)}
    found = policy.classify(Failed(crowded))
    assert found == Classification(Disposition.UNSENDABLE, 0, None, policy.resend_problem(crowded, 0))
    assert found.reason is not None and found.reason.startswith("the message has 9 message attributes")
    # Only a record that would otherwise wait for a retry is checked: a business error stays a person's decision
    assert policy.classify(Failed(crowded, error="PaymentDeclined")) == Classification(
        Disposition.NEEDS_DECISION, 0, None)


def test_classify_dates_a_waiting_record_from_the_callers_first_message_id() -> None:
    policy = HealingPolicy(RETRIED)
    failed_at = datetime(2026, 12, 1, 12, tzinfo=UTC)
    redriven = {"messageId": "m-9", "body": "{}", "messageAttributes": {
        ATTEMPT_ATTRIBUTE: {"stringValue": "1", "dataType": "Number"},
        FIRST_MESSAGE_ATTRIBUTE: {"stringValue": "m-1", "dataType": "String"}}}
    assert policy.classify(Failed(redriven)) == Classification(Disposition.RETRY, 1,
                                                               policy.due_at(failed_at, "m-1", 1))
    plain = {"messageId": "m-2", "body": "{}"}
    assert policy.classify(Failed(plain)).due_at == policy.due_at(failed_at, "m-2", 0)
    assert policy.classify(Failed({"body": "{}"})).due_at == policy.due_at(failed_at, "dlq-1", 0)
    assert policy.classify(Failed(plain, failed_at=None)) == Classification(Disposition.RETRY, 0, None)
    exhausted = {"messageId": "m-3", "body": "{}", "messageAttributes": {
        ATTEMPT_ATTRIBUTE: {"stringValue": "3", "dataType": "Number"}}}
    assert policy.classify(Failed(exhausted)) == Classification(Disposition.EXHAUSTED, 3, None)


# -- the policy through the environment ------------------------------------------------------------------------------

CUSTOM = HealingPolicy(transient_errors={"ReserveInventory": frozenset({"TransientError"}),
                                         "ChargePayment": frozenset({"TransientError", "Lambda.Unknown"})},
                       max_attempts=5, cool_off_seconds=60, max_cool_off_seconds=900, max_message_bytes=262_144,
                       source_return_per_second=12.5)


def test_every_setting_off_its_default_travels_through_the_environment() -> None:
    environment = CUSTOM.to_environment()
    assert environment == {
        "HEALING_TRANSIENT_ERRORS": '{"ChargePayment":["Lambda.Unknown","TransientError"],'
                                    '"ReserveInventory":["TransientError"]}',
        "HEALING_MAX_ATTEMPTS": "5", "HEALING_COOL_OFF_SECONDS": "60", "HEALING_MAX_COOL_OFF_SECONDS": "900",
        "HEALING_MAX_MESSAGE_BYTES": "262144", "HEALING_SOURCE_RETURN_PER_SECOND": "12.5"}
    assert HealingPolicy.from_environment(environment) == CUSTOM


def test_the_policy_is_read_from_the_process_environment_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in CUSTOM.to_environment().items():
        monkeypatch.setenv(name, value)
    assert HealingPolicy.from_environment() == CUSTOM


def test_a_stack_deployed_before_the_source_dlq_return_leaves_the_source_dlq_to_a_person() -> None:
    environment = CUSTOM.to_environment()
    del environment["HEALING_SOURCE_RETURN_PER_SECOND"]
    policy = HealingPolicy.from_environment(environment)
    assert policy.source_return_per_second == 0 and not policy.returns_source_dlq
    assert CUSTOM.returns_source_dlq and not replace(CUSTOM, max_attempts=0).returns_source_dlq


def test_a_stack_deployed_before_the_size_check_is_bounded_by_sqss_own_maximum() -> None:
    environment = CUSTOM.to_environment()
    del environment["HEALING_MAX_MESSAGE_BYTES"]
    assert HealingPolicy.from_environment(environment).max_message_bytes == SQS_MAX_MESSAGE_BYTES == 1_048_576


# -- the cool-off ----------------------------------------------------------------------------------------------------

def test_the_jitter_spans_from_half_the_backoff_to_all_of_it() -> None:
    policy = HealingPolicy(RETRIED, cool_off_seconds=300, max_cool_off_seconds=3600)
    for attempt, capped in ((0, 300), (1, 600), (3, 2400), (4, 3600), (6, 3600)):
        offs = [policy.cool_off(f"m-{i}", attempt).total_seconds() for i in range(400)]
        assert capped / 2 <= min(offs) < capped * 0.55 and capped * 0.95 < max(offs) <= capped, attempt


def test_the_due_time_is_the_failure_plus_the_cool_off() -> None:
    policy = HealingPolicy(RETRIED)
    failed = datetime(2026, 12, 1, 12, tzinfo=UTC)
    assert policy.due_at(failed, "m-1", 2) == failed + policy.cool_off("m-1", 2)
    assert policy.cool_off("m-1", 2) == policy.cool_off("m-1", 2) != policy.cool_off("m-1", 3)


# -- reading the record ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("record", "attempt", "first"), [
    ({"messageId": "m-2", "messageAttributes": {}}, 0, "m-2"),
    ({"messageId": "m-3", "messageAttributes": {ATTEMPT_ATTRIBUTE: {"stringValue": "2"},
                                                FIRST_MESSAGE_ATTRIBUTE: {"stringValue": "m-1"}}}, 2, "m-1"),
    ({"messageId": "m-4", "messageAttributes": {ATTEMPT_ATTRIBUTE: {"stringValue": "-3"}}}, 0, "m-4"),
    ({"messageId": "m-5", "messageAttributes": {ATTEMPT_ATTRIBUTE: {"stringValue": "two"}}}, 0, "m-5"),
    ({"messageId": "m-6", "messageAttributes": {ATTEMPT_ATTRIBUTE: {"stringValue": 2},
                                                FIRST_MESSAGE_ATTRIBUTE: {"stringValue": ""}}}, 0, "m-6"),
    ({"messageId": "m-7", "messageAttributes": {ATTEMPT_ATTRIBUTE: "2", FIRST_MESSAGE_ATTRIBUTE: "m-1"}}, 0, "m-7"),
    ({"messageId": "m-8", "messageAttributes": ["not", "an", "object"]}, 0, "m-8"),
    ({"messageId": 5}, 0, None),
    ({}, 0, None),
    ("not a record", 0, None),
    (None, 0, None),
], ids=["plain", "redriven", "negative", "not a number", "not text", "not attributes", "attributes not an object",
        "message id not text", "empty", "text", "none"])
def test_the_attempt_and_the_first_message_id_are_read_from_any_record(record: Any, attempt: int,
                                                                       first: str | None) -> None:
    assert (attempt_of(record), first_message_id(record)) == (attempt, first)


def test_a_waiting_record_is_due_at_its_time_and_overdue_a_grace_after_it() -> None:
    due_at = datetime(2026, 12, 1, 12, tzinfo=UTC)
    grace = timedelta(minutes=5)
    waiting = Classification(Disposition.RETRY, 1, due_at)
    assert not waiting.due(due_at - timedelta(microseconds=1)) and waiting.due(due_at)
    assert not waiting.overdue(due_at + grace - timedelta(microseconds=1), grace)
    assert waiting.overdue(due_at + grace, grace)
    undated = Classification(Disposition.RETRY, 0, None)
    assert undated.due(due_at) and not undated.overdue(due_at + timedelta(days=9), grace)
    for other in (Disposition.EXHAUSTED, Disposition.MANUAL_REPAIR, Disposition.NEEDS_DECISION,
                  Disposition.UNSENDABLE):
        parked = Classification(other, 3, due_at)
        assert not parked.due(due_at + timedelta(days=9)) and not parked.overdue(due_at + timedelta(days=9), grace)
        assert other.needs_a_person
    assert not Disposition.RETRY.needs_a_person
