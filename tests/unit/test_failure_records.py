"""The failure DLQ's messages as the readers see them (fire_and_forget/runtime/records.py): every field of a failure
record, every reason a foreign or malformed message is set aside with, the key read from the original body, the
records of one execution counted as one, the attributes in SendMessage's shape for each data type, and selection."""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from fire_and_forget.runtime.records import (
    PREVIEW_CHARS,
    RECORD_KIND,
    FailureRecord,
    Selection,
    UnrecognizedMessage,
    UnsendableAttribute,
    message_key,
    one_per_execution,
    parse,
    parse_time,
)

ARN = "arn:aws:states:us-east-1:123456789012:execution:saga:e1"
MACHINE = "arn:aws:states:us-east-1:123456789012:stateMachine:saga"


def document(**changes: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "kind": RECORD_KIND, "pipeline": "orders",
        "record": {"messageId": "src-1", "body": json.dumps({"orderId": "o-1", "ref": 42}),
                   "messageAttributes": {"tenant": {"stringValue": "acme", "dataType": "String"}}},
        "failure": {"state": "ChargePayment", "error": "PaymentDeclined", "cause": "card expired"},
        "compensation": {"required": True, "releaseInventory": {"released": 2}},
        "manualRepair": False, "executionArn": ARN, "stateMachineArn": MACHINE,
        "failedAt": "2026-11-29T16:43:55.123Z",
    }
    body.update(changes)
    return body


def message(body: Any, message_id: str = "dlq-1", receipt: str = "receipt-1") -> dict[str, Any]:
    text = body if isinstance(body, str) else json.dumps(body)
    return {"MessageId": message_id, "ReceiptHandle": receipt, "Body": text}


def record(body: Any = None, message_id: str = "dlq-1", key_field: str = "orderId") -> FailureRecord:
    parsed = parse(message(document() if body is None else body, message_id), key_field)
    assert isinstance(parsed, FailureRecord), parsed
    return parsed


# -- a failure record, field by field --------------------------------------------------------------------------------

def test_every_field_of_a_failure_record_is_read() -> None:
    whole = document()
    parsed = record(whole)
    assert parsed == FailureRecord(
        message_id="dlq-1", receipt_handle="receipt-1", source_message_id="src-1", key="o-1",
        error="PaymentDeclined", cause="card expired", failed_state="ChargePayment",
        failed_at=datetime(2026, 11, 29, 16, 43, 55, 123000, tzinfo=UTC), manual_repair=False,
        compensation={"required": True, "releaseInventory": {"released": 2}}, execution_arn=ARN,
        state_machine_arn=MACHINE, body=whole["record"]["body"],
        message_attributes={"tenant": {"stringValue": "acme", "dataType": "String"}}, record=whole["record"],
        status="FAILED", reconciliation=None, copies=())
    assert parsed.message_ids == ("dlq-1",)


def test_the_key_is_read_from_the_field_the_stack_names() -> None:
    assert record(key_field="ref").key == "42"
    assert record(key_field="missing").key is None


def test_optional_fields_of_the_wrong_type_read_as_absent() -> None:
    parsed = record(document(executionArn=7, stateMachineArn=None, failedAt=12, manualRepair="true",
                             record={"messageId": 5, "body": "{}"},
                             failure={"state": "S", "error": "E", "cause": {"not": "text"}}))
    assert (parsed.execution_arn, parsed.state_machine_arn, parsed.failed_at) == (None, None, None)
    assert parsed.manual_repair is False  # only the JSON true flags a manual repair
    assert (parsed.source_message_id, parsed.cause, parsed.message_attributes) == (None, None, {})
    assert record(document(manualRepair=True)).manual_repair is True


def test_a_record_without_attributes_has_none() -> None:
    assert record(document(record={"messageId": "m", "body": "{}", "messageAttributes": None})).message_attributes == {}
    assert record(document(record={"messageId": "m", "body": "{}"})).send_attributes() == {}


def test_the_reconcilers_record_says_how_the_execution_ended() -> None:
    reconciled = record(document(reconciliation={"status": "TIMED_OUT", "via": "sweep"}))
    assert (reconciled.status, reconciled.reconciliation) == ("TIMED_OUT", {"status": "TIMED_OUT", "via": "sweep"})
    unknown = record(document(reconciliation={"via": "sweep"}))
    assert (unknown.status, unknown.reconciliation) == ("FAILED", {"via": "sweep"})
    malformed = record(document(reconciliation="TIMED_OUT"))
    assert (malformed.status, malformed.reconciliation) == ("FAILED", None)


# -- what is not a failure record -------------------------------------------------------------------------------------

@pytest.mark.parametrize(("body", "reason"), [
    ("not json at all", "the body is not JSON"),
    ("", "the body is not JSON"),
    ([1, 2], "the body is not a JSON object"),
    ({"hello": "world"}, "kind is None, not 'fire-and-forget.failure.v1'"),
    (document(kind="someone.else.v2"), "kind is 'someone.else.v2', not 'fire-and-forget.failure.v1'"),
    (document(record="text"), "record.body (the original message) is missing"),
    (document(record={"messageId": "m", "body": {"orderId": "o"}}), "record.body (the original message) is missing"),
    (document(failure=None), "failure.error or failure.state is missing"),
    (document(failure={"state": "S"}), "failure.error or failure.state is missing"),
    (document(failure={"error": "E", "state": 3}), "failure.error or failure.state is missing"),
    (document(record={"body": "{}", "messageAttributes": ["a"]}), "record.messageAttributes is not an object"),
], ids=["text", "empty", "array", "no kind", "another kind", "record not an object", "body not text",
        "no failure", "no error", "state not text", "attributes not an object"])
def test_a_foreign_or_malformed_message_is_set_aside_with_the_reason(body: Any, reason: str) -> None:
    parsed = parse(message(body, "dlq-9", "receipt-9"))
    text = body if isinstance(body, str) else json.dumps(body)
    assert parsed == UnrecognizedMessage("dlq-9", "receipt-9", reason, text[:PREVIEW_CHARS])


def test_a_message_without_a_body_is_not_json() -> None:
    assert parse({"MessageId": "m", "ReceiptHandle": "r"}) == UnrecognizedMessage("m", "r", "the body is not JSON", "")


def test_the_preview_is_the_first_200_characters() -> None:
    long_text = "x" * 150 + "y" * 150
    parsed = parse(message(long_text))
    assert isinstance(parsed, UnrecognizedMessage) and parsed.body_preview == long_text[:200]
    foreign = json.dumps({"kind": "other", "padding": "z" * 300})
    parsed = parse(message(foreign))
    assert isinstance(parsed, UnrecognizedMessage) and parsed.body_preview == foreign[:200]


# -- the key --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("body", "key"), [
    ('{"orderId": "o-7"}', "o-7"),
    ('{"orderId": 7}', "7"),
    ('{"orderId": true}', None),
    ('{"orderId": 7.5}', None),
    ('{"orderId": null}', None),
    ('{"other": "o-7"}', None),
    ('["orderId"]', None),
    ("not json", None),
    ("", None),
    (None, None),
])
def test_the_key_is_a_string_or_an_integer_of_the_top_level_field(body: str | None, key: str | None) -> None:
    assert message_key(body, "orderId") == key


# -- one per execution ----------------------------------------------------------------------------------------------

def test_the_records_of_one_execution_are_one_ranked_where_the_first_was_met() -> None:
    other = "arn:aws:states:us-east-1:123456789012:execution:saga:e2"
    records = [record(document(executionArn=other), "dlq-5"), record(message_id="dlq-3"),
               record(message_id="dlq-1"), record(document(executionArn=other), "dlq-4"),
               record(document(executionArn=None), "dlq-2"), record(document(executionArn=None), "dlq-0")]
    kept = one_per_execution(records)
    assert [(r.message_id, r.copies) for r in kept] == [("dlq-4", ("dlq-5",)), ("dlq-1", ("dlq-3",)),
                                                        ("dlq-2", ()), ("dlq-0", ())]
    assert kept[1].message_ids == ("dlq-1", "dlq-3")


def test_the_reconcilers_record_stands_for_its_execution_whatever_its_message_id() -> None:
    tails = [record(message_id="dlq-1"), record(message_id="dlq-2")]
    reconcilers = record(document(reconciliation={"status": "ABORTED"}), "dlq-9")
    (one,) = one_per_execution([*tails, reconcilers])
    assert (one.message_id, one.status, one.copies) == ("dlq-9", "ABORTED", ("dlq-1", "dlq-2"))


def test_a_lone_record_is_kept_as_it_is() -> None:
    alone = record()
    assert one_per_execution([alone]) == [alone]
    assert one_per_execution([]) == []


# -- attributes in SendMessage's shape -------------------------------------------------------------------------------

def with_attributes(attributes: dict[str, Any]) -> FailureRecord:
    """A record holding `attributes` (set after parsing: a test's values need not survive JSON, bytes included)."""
    return replace(record(), message_attributes=attributes)


def test_each_data_type_is_sent_as_sendmessage_wants_it() -> None:
    picture = b"\x89PNG\x00\x01"
    attributes = with_attributes({
        "name": {"stringValue": "Zoë", "dataType": "String"},
        "count": {"stringValue": "42", "dataType": "Number"},
        "price": {"stringValue": "9.5", "dataType": "Number.float"},
        "blob": {"binaryValue": base64.b64encode(picture).decode(), "dataType": "Binary"},
        "png": {"binaryValue": base64.b64encode(picture).decode(), "dataType": "Binary.png"},
        "raw": {"BinaryValue": picture, "DataType": "Binary"},
        "upper": {"StringValue": "sent", "DataType": "String.custom"},
        "untyped": {"stringValue": "plain"},
        "skipped": "not an attribute",
    }).send_attributes()
    assert attributes == {
        "name": {"DataType": "String", "StringValue": "Zoë"},
        "count": {"DataType": "Number", "StringValue": "42"},
        "price": {"DataType": "Number.float", "StringValue": "9.5"},
        "blob": {"DataType": "Binary", "BinaryValue": picture},
        "png": {"DataType": "Binary.png", "BinaryValue": picture},
        "raw": {"DataType": "Binary", "BinaryValue": picture},
        "upper": {"DataType": "String.custom", "StringValue": "sent"},
        "untyped": {"DataType": "String", "StringValue": "plain"},
    }


def test_the_event_shapes_value_wins_and_the_api_shapes_is_the_fallback() -> None:
    both = with_attributes({"a": {"stringValue": "event", "StringValue": "api", "dataType": "String"},
                            "b": {"stringValue": None, "StringValue": "api", "dataType": "String"}})
    assert both.send_attributes() == {"a": {"DataType": "String", "StringValue": "event"},
                                      "b": {"DataType": "String", "StringValue": "api"}}


@pytest.mark.parametrize(("value", "text"), [
    ({"dataType": "String"}, "message attribute 'x' (String) has no stringValue"),
    ({"stringValue": "", "dataType": "Number"}, "message attribute 'x' (Number) has no stringValue"),
    ({"stringValue": 5, "dataType": "String"}, "message attribute 'x' (String) has no stringValue"),
    ({"dataType": "Binary"}, "message attribute 'x' (Binary) has no binaryValue"),
    ({"binaryValue": "", "dataType": "Binary.gz"}, "message attribute 'x' (Binary.gz) has no binaryValue"),
    ({"BinaryValue": b"", "DataType": "Binary"}, "message attribute 'x' (Binary) has no binaryValue"),
], ids=["no string", "empty string", "string not text", "no binary", "empty binary", "empty bytes"])
def test_an_attribute_without_its_value_is_unsendable_rather_than_sent_empty(value: dict[str, Any],
                                                                           text: str) -> None:
    with pytest.raises(UnsendableAttribute) as refused:
        with_attributes({"x": value}).send_attributes()
    assert str(refused.value) == text


# -- times and selection --------------------------------------------------------------------------------------------

def test_times_are_read_as_aware_datetimes() -> None:
    assert parse_time("2026-11-29T16:43:55.123Z") == datetime(2026, 11, 29, 16, 43, 55, 123000, tzinfo=UTC)
    assert parse_time("2026-11-29T18:43:55+02:00") == datetime(2026, 11, 29, 16, 43, 55, tzinfo=UTC)
    assert parse_time("2026-11-29T18:43:55+02:00").utcoffset() == timedelta(hours=2)  # type: ignore[union-attr]
    naive = parse_time("2026-11-29T16:43:55")
    assert naive == datetime(2026, 11, 29, 16, 43, 55, tzinfo=UTC) and naive.tzinfo is UTC  # type: ignore[union-attr]
    assert parse_time("yesterday") is None and parse_time(None) is None and parse_time(1_795_000_000) is None


def test_an_empty_selection_is_everything_and_any_criterion_narrows_it() -> None:
    assert Selection().is_everything
    at = datetime(2026, 11, 29, tzinfo=UTC)
    for narrowed in (Selection(keys=frozenset({"o"})), Selection(errors=frozenset({"E"})), Selection(since=at),
                     Selection(until=at)):
        assert not narrowed.is_everything


def test_every_criterion_must_match() -> None:
    failed_at = datetime(2026, 11, 29, 16, 43, 55, 123000, tzinfo=UTC)
    declined = record()
    undated = record(document(failedAt=None))
    assert Selection().matches(declined) and Selection().matches(undated)
    assert Selection(keys=frozenset({"o-1", "o-2"})).matches(declined)
    assert not Selection(keys=frozenset({"o-2"})).matches(declined)
    assert Selection(errors=frozenset({"PaymentDeclined"})).matches(declined)
    assert not Selection(errors=frozenset({"OutOfStock"})).matches(declined)
    assert Selection(since=failed_at).matches(declined) and Selection(until=failed_at).matches(declined)
    assert not Selection(since=failed_at + timedelta(milliseconds=1)).matches(declined)
    assert not Selection(until=failed_at - timedelta(milliseconds=1)).matches(declined)
    assert not Selection(since=failed_at - timedelta(days=1)).matches(undated)
    assert not Selection(until=failed_at + timedelta(days=1)).matches(undated)
    assert not Selection(keys=frozenset({"o-1"}), errors=frozenset({"OutOfStock"})).matches(declined)
    east = timezone(timedelta(hours=5))
    assert Selection(since=failed_at.astimezone(east)).matches(declined)
