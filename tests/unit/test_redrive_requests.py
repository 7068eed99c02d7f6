"""Send-then-delete (fire_and_forget/runtime/redrive.py) call by call, on botocore's Stubber: the exact SQS requests
for a DLQ holding records of every disposition and a foreign message, what is left behind and why, the quota, the
dry run, the records of one execution, the attributes sent back, and the stops on throttling and AccessDenied (with
every message read made visible again)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber

from fire_and_forget.runtime.records import FailureRecord, Selection
from fire_and_forget.runtime.redrive import (
    Action,
    Outcome,
    RedriveReport,
    RedriveRequest,
    redrive_failures,
)

DLQ = "https://sqs.us-east-1.amazonaws.com/123456789012/failure-dlq"
SOURCE = "https://sqs.us-east-1.amazonaws.com/123456789012/source"


def failure(order: str, *, error: str = "TransientError", manual: bool = False, execution: str | None = None,
            attributes: dict[str, Any] | None = None, body: str | None = None) -> str:
    return json.dumps({
        "kind": "fire-and-forget.failure.v1",
        "record": {"messageId": f"src-{order}", "body": json.dumps({"orderId": order}) if body is None else body,
                   "messageAttributes": attributes or {}},
        "failure": {"state": "ChargePayment", "error": error, "cause": "c"},
        "manualRepair": manual, "executionArn": execution or f"arn:exec:{order}",
        "failedAt": "2026-12-01T12:00:00.000Z",
    })


def received(message_id: str, body: str, receipt: str | None = None) -> dict[str, Any]:
    return {"MessageId": message_id, "ReceiptHandle": receipt or f"rh-{message_id}", "Body": body}


@pytest.fixture
def sqs() -> Iterator[Stubber]:
    client = boto3.client("sqs", region_name="us-east-1")
    with Stubber(client) as stubber:
        yield stubber
        stubber.assert_no_pending_responses()


def expect_receive(sqs: Stubber, *batches: list[dict[str, Any]], batch_size: int = 10, visibility: int = 30,
                   wait: int = 1) -> None:
    """The receives of one read: each batch, then the empty answer that ends it."""
    request = {"QueueUrl": DLQ, "MaxNumberOfMessages": batch_size, "VisibilityTimeout": visibility,
               "WaitTimeSeconds": wait, "MessageSystemAttributeNames": ["All"], "MessageAttributeNames": ["All"]}
    for batch in (*batches, []):
        sqs.add_response("receive_message", {"Messages": batch} if batch else {}, request)


def expect_send(sqs: Stubber, body: str, new_id: str, attributes: dict[str, Any] | None = None) -> None:
    request: dict[str, Any] = {"QueueUrl": SOURCE, "MessageBody": body}
    if attributes is not None:
        request["MessageAttributes"] = attributes
    sqs.add_response("send_message", {"MessageId": new_id, "MD5OfMessageBody": "x"}, request)


def expect_delete(sqs: Stubber, receipt: str) -> None:
    sqs.add_response("delete_message", {}, {"QueueUrl": DLQ, "ReceiptHandle": receipt})


def expect_release(sqs: Stubber, *receipts: str) -> None:
    entries = [{"Id": str(i), "ReceiptHandle": r, "VisibilityTimeout": 0} for i, r in enumerate(receipts)]
    sqs.add_response("change_message_visibility_batch", {"Successful": [{"Id": e["Id"]} for e in entries],
                                                         "Failed": []}, {"QueueUrl": DLQ, "Entries": entries})


def run(sqs: Stubber, request: RedriveRequest | None = None, progress: list[Outcome] | None = None) -> RedriveReport:
    return redrive_failures(sqs.client, DLQ, SOURCE, request or RedriveRequest(selection=Selection()),  # type: ignore[arg-type]
                            progress=progress.append if progress is not None else None)


def test_a_dlq_of_every_kind_of_message_is_redriven_one_by_one_and_the_rest_released(sqs: Stubber) -> None:
    """A foreign message, a manual repair, a record whose send SQS refuses, a redriven one with a second record of its
    execution, and one whose delete fails: each told apart, the foreign one first."""
    body = {name: json.dumps({"orderId": name}) for name in ("o-ok", "o-refused", "o-undeleted")}
    expect_receive(sqs, [received("d-1", "hello, not a record"),
                         received("d-2", failure("o-manual", manual=True)),
                         received("d-3", failure("o-refused"))],
                   [received("d-4", failure("o-ok", execution="arn:exec:twice")),
                    received("d-5", failure("o-undeleted")),
                    received("d-6", failure("o-ok", execution="arn:exec:twice"))])
    sqs.add_client_error("send_message", "InvalidParameterValue", "message too big",
                         expected_params={"QueueUrl": SOURCE, "MessageBody": body["o-refused"]})
    expect_send(sqs, body["o-ok"], "new-ok")
    expect_delete(sqs, "rh-d-4")
    expect_delete(sqs, "rh-d-6")  # the copy, only once the send took effect
    expect_send(sqs, body["o-undeleted"], "new-undeleted")
    sqs.add_client_error("delete_message", "InternalError", "try later",
                         expected_params={"QueueUrl": DLQ, "ReceiptHandle": "rh-d-5"})
    expect_release(sqs, "rh-d-1", "rh-d-2", "rh-d-3", "rh-d-5")
    seen: list[Outcome] = []

    report = run(sqs, progress=seen)

    assert report.read == 6 and not report.dry_run and report.key_field == "orderId"
    assert [(o.message_id, o.key, o.error, o.action, o.new_message_id) for o in report.outcomes] == [
        ("d-1", None, None, Action.UNRECOGNIZED, None),
        ("d-2", "o-manual", "TransientError", Action.REFUSED_MANUAL_REPAIR, None),
        ("d-3", "o-refused", "TransientError", Action.SEND_FAILED, None),
        ("d-4", "o-ok", "TransientError", Action.REDRIVEN, "new-ok"),
        ("d-6", "o-ok", "TransientError", Action.COPY_DELETED, "new-ok"),
        ("d-5", "o-undeleted", "TransientError", Action.SENT_NOT_DELETED, "new-undeleted"),
    ]
    reasons = [o.reason for o in report.outcomes]
    assert reasons[0] == "the body is not JSON"
    assert reasons[1] == "a compensation failed: repair the work by hand, then redrive with --force"
    assert reasons[2] == "InvalidParameterValue: An error occurred (InvalidParameterValue) when calling the " \
                         "SendMessage operation: message too big"
    assert reasons[3] is None
    assert reasons[4] == "a second record of arn:exec:twice, sent back as d-4"
    assert reasons[5] == "InternalError: An error occurred (InternalError) when calling the DeleteMessage " \
                         "operation: try later"
    assert seen == report.outcomes  # progress hears of every outcome, in order
    assert report.count(Action.REDRIVEN) == 1 and report.count(Action.COPY_DELETED) == 1
    assert report.count(Action.WOULD_REDRIVE) == 0
    assert not report.complete


def test_a_clean_redrive_is_complete_and_releases_nothing(sqs: Stubber) -> None:
    expect_receive(sqs, [received("d-1", failure("o-1"))])
    expect_send(sqs, json.dumps({"orderId": "o-1"}), "new-1")
    expect_delete(sqs, "rh-d-1")
    report = run(sqs)
    assert report.complete and [o.action for o in report.outcomes] == [Action.REDRIVEN]


def test_a_filter_leaves_foreign_messages_unreported_and_unselected_records_untouched(sqs: Stubber) -> None:
    expect_receive(sqs, [received("d-1", "[1, 2]"), received("d-2", failure("o-1")),
                         received("d-3", failure("o-2", error="OutOfStock"))])
    expect_send(sqs, json.dumps({"orderId": "o-2"}), "new-2")
    expect_delete(sqs, "rh-d-3")
    expect_release(sqs, "rh-d-1", "rh-d-2")
    report = run(sqs, RedriveRequest(selection=Selection(errors=frozenset({"OutOfStock"}))))
    assert [(o.message_id, o.action) for o in report.outcomes] == [("d-3", Action.REDRIVEN)]
    assert report.complete and report.read == 3


def test_force_redrives_a_manual_repair(sqs: Stubber) -> None:
    expect_receive(sqs, [received("d-1", failure("o-1", manual=True))])
    expect_send(sqs, json.dumps({"orderId": "o-1"}), "new-1")
    expect_delete(sqs, "rh-d-1")
    report = run(sqs, RedriveRequest(selection=Selection(), force=True))
    assert [o.action for o in report.outcomes] == [Action.REDRIVEN]


def test_a_dry_run_sends_nothing_and_says_how_many_records_go_with_each(sqs: Stubber) -> None:
    expect_receive(sqs, [received("d-1", failure("o-1", execution="arn:exec:x")),
                         received("d-2", failure("o-1", execution="arn:exec:x")),
                         received("d-3", failure("o-2")), received("d-4", failure("o-3", manual=True))])
    expect_release(sqs, "rh-d-1", "rh-d-2", "rh-d-3", "rh-d-4")
    report = run(sqs, RedriveRequest(selection=Selection(), dry_run=True))
    assert report.dry_run
    assert [(o.message_id, o.action, o.reason) for o in report.outcomes] == [
        ("d-1", Action.WOULD_REDRIVE, "with 1 more record(s) of its execution"),
        ("d-3", Action.WOULD_REDRIVE, None),
        ("d-4", Action.REFUSED_MANUAL_REPAIR,
         "a compensation failed: repair the work by hand, then redrive with --force"),
    ]
    assert report.count(Action.WOULD_REDRIVE) == 2 and not report.complete


def test_the_quota_counts_what_went_back_not_what_was_refused(sqs: Stubber) -> None:
    expect_receive(sqs, [received("d-1", failure("o-1", manual=True)), received("d-2", failure("o-2")),
                         received("d-3", failure("o-3")), received("d-4", failure("o-4"))])
    expect_send(sqs, json.dumps({"orderId": "o-2"}), "new-2")
    expect_delete(sqs, "rh-d-2")
    expect_send(sqs, json.dumps({"orderId": "o-3"}), "new-3")
    expect_delete(sqs, "rh-d-3")
    expect_release(sqs, "rh-d-1", "rh-d-4")
    report = run(sqs, RedriveRequest(selection=Selection(), max_messages=2))
    assert [(o.message_id, o.action) for o in report.outcomes] == [
        ("d-1", Action.REFUSED_MANUAL_REPAIR), ("d-2", Action.REDRIVEN), ("d-3", Action.REDRIVEN)]


def test_a_message_sent_back_counts_against_the_quota_even_when_its_delete_failed(sqs: Stubber) -> None:
    """`--max N` redrives at most N executions: one whose send took effect was redriven (it runs again), whether or not
    its record could then be deleted; the next one stays in the DLQ."""
    expect_receive(sqs, [received("d-1", failure("o-1")), received("d-2", failure("o-2"))])
    expect_send(sqs, json.dumps({"orderId": "o-1"}), "new-1")
    sqs.add_client_error("delete_message", "InternalError", "later",
                         expected_params={"QueueUrl": DLQ, "ReceiptHandle": "rh-d-1"})
    expect_release(sqs, "rh-d-1", "rh-d-2")
    report = run(sqs, RedriveRequest(selection=Selection(), max_messages=1))
    assert [(o.message_id, o.action) for o in report.outcomes] == [("d-1", Action.SENT_NOT_DELETED)]


def test_a_quota_of_one_in_a_dry_run_stops_after_one(sqs: Stubber) -> None:
    expect_receive(sqs, [received("d-1", failure("o-1")), received("d-2", failure("o-2"))])
    expect_release(sqs, "rh-d-1", "rh-d-2")
    report = run(sqs, RedriveRequest(selection=Selection(), dry_run=True, max_messages=1))
    assert [(o.message_id, o.action) for o in report.outcomes] == [("d-1", Action.WOULD_REDRIVE)]


def test_a_quota_of_zero_touches_nothing(sqs: Stubber) -> None:
    expect_receive(sqs, [received("d-1", failure("o-1"))])
    expect_release(sqs, "rh-d-1")
    assert run(sqs, RedriveRequest(selection=Selection(), max_messages=0)).outcomes == []


def test_the_read_uses_the_requests_batch_visibility_and_wait(sqs: Stubber) -> None:
    expect_receive(sqs, [received("d-1", failure("o-1"))], batch_size=3, visibility=45, wait=0)
    expect_release(sqs, "rh-d-1")
    run(sqs, RedriveRequest(selection=Selection(), dry_run=True, batch_size=3, visibility_timeout=45,
                            wait_seconds=0))


def test_the_key_field_of_the_request_names_each_outcomes_key(sqs: Stubber) -> None:
    expect_receive(sqs, [received("d-1", failure("o-1", body=json.dumps({"sku": "SKU-9"})))])
    expect_release(sqs, "rh-d-1")
    report = run(sqs, RedriveRequest(selection=Selection(), dry_run=True, key_field="sku"))
    assert report.key_field == "sku" and report.outcomes[0].key == "SKU-9"


def test_the_original_attributes_go_back_in_sendmessage_shape_with_the_extra_ones(sqs: Stubber) -> None:
    attributes = {"tenant": {"stringValue": "acme", "dataType": "String"},
                  "blob": {"binaryValue": "AAEC", "dataType": "Binary"}}
    extra = {"ffRedriveAttempt": {"DataType": "Number", "StringValue": "1"}}
    expect_receive(sqs, [received("d-1", failure("o-1", attributes=attributes))])
    expect_send(sqs, json.dumps({"orderId": "o-1"}), "new-1", {
        "tenant": {"DataType": "String", "StringValue": "acme"},
        "blob": {"DataType": "Binary", "BinaryValue": b"\x00\x01\x02"},
        "ffRedriveAttempt": {"DataType": "Number", "StringValue": "1"}})
    expect_delete(sqs, "rh-d-1")
    asked: list[FailureRecord] = []

    def extra_attributes(record: FailureRecord) -> dict[str, Any]:
        asked.append(record)
        return extra

    report = run(sqs, RedriveRequest(selection=Selection(), extra_attributes=extra_attributes))  # type: ignore[arg-type]
    assert [o.action for o in report.outcomes] == [Action.REDRIVEN] and [r.key for r in asked] == ["o-1"]


def ten_attributes(count: int) -> dict[str, Any]:
    return {f"a{i}": {"stringValue": "v", "dataType": "String"} for i in range(count)}


def test_the_extra_attributes_may_fill_sqss_ten_but_not_pass_them(sqs: Stubber) -> None:
    extra = {"x1": {"DataType": "String", "StringValue": "1"}, "x2": {"DataType": "String", "StringValue": "2"}}
    expect_receive(sqs, [received("d-1", failure("o-1", attributes=ten_attributes(8))),
                         received("d-2", failure("o-2", attributes=ten_attributes(9)))])
    sent = {name: {"DataType": "String", "StringValue": "v"} for name in ten_attributes(8)} | extra
    expect_send(sqs, json.dumps({"orderId": "o-1"}), "new-1", sent)
    expect_delete(sqs, "rh-d-1")
    expect_release(sqs, "rh-d-2")
    report = run(sqs, RedriveRequest(selection=Selection(), extra_attributes=lambda _r: extra))  # type: ignore[arg-type, return-value]
    assert [(o.message_id, o.action) for o in report.outcomes] == [("d-1", Action.REDRIVEN),
                                                                   ("d-2", Action.SEND_FAILED)]
    assert report.outcomes[1].reason == ("the message already has 9 attributes: no room for the redrive's own "
                                         "(SQS allows 10)")


def test_an_attribute_sqs_would_refuse_fails_the_send_before_it_is_tried(sqs: Stubber) -> None:
    expect_receive(sqs, [received("d-1", failure("o-1", attributes={"empty": {"dataType": "String"}}))])
    expect_release(sqs, "rh-d-1")
    (outcome,) = run(sqs).outcomes
    assert outcome.action is Action.SEND_FAILED
    assert outcome.reason == "UnsendableAttribute: message attribute 'empty' (String) has no stringValue"


def test_a_chosen_subset_is_redriven_and_the_rest_left_unreported(sqs: Stubber) -> None:
    expect_receive(sqs, [received("d-1", failure("o-1")), received("d-2", failure("o-2"))])
    expect_send(sqs, json.dumps({"orderId": "o-2"}), "new-2")
    expect_delete(sqs, "rh-d-2")
    expect_release(sqs, "rh-d-1")
    report = run(sqs, RedriveRequest(selection=Selection(), choose=lambda r: r.key == "o-2"))
    assert [(o.message_id, o.action) for o in report.outcomes] == [("d-2", Action.REDRIVEN)]


@pytest.mark.parametrize("code", ["ThrottlingException", "RequestThrottled", "AccessDenied",
                                  "KMS.AccessDeniedException"])
def test_throttling_or_access_denied_on_a_send_stops_the_run_and_releases_everything(sqs: Stubber, code: str) -> None:
    expect_receive(sqs, [received("d-1", failure("o-1")), received("d-2", failure("o-2"))])
    sqs.add_client_error("send_message", code, "stop", http_status_code=400)
    expect_release(sqs, "rh-d-1", "rh-d-2")
    with pytest.raises(ClientError) as stopped:
        run(sqs)
    assert stopped.value.response["Error"]["Code"] == code


def test_a_copy_whose_delete_fails_stays_as_a_duplicate(sqs: Stubber) -> None:
    expect_receive(sqs, [received("d-1", failure("o-1", execution="arn:exec:x")),
                         received("d-2", failure("o-1", execution="arn:exec:x"))])
    expect_send(sqs, json.dumps({"orderId": "o-1"}), "new-1")
    expect_delete(sqs, "rh-d-1")
    sqs.add_client_error("delete_message", "InternalError", "later",
                         expected_params={"QueueUrl": DLQ, "ReceiptHandle": "rh-d-2"})
    expect_release(sqs, "rh-d-2")
    report = run(sqs)
    assert [(o.message_id, o.key, o.error, o.action, o.new_message_id) for o in report.outcomes] == [
        ("d-1", "o-1", "TransientError", Action.REDRIVEN, "new-1"),
        ("d-2", "o-1", "TransientError", Action.SENT_NOT_DELETED, "new-1")]
    assert report.outcomes[1].reason == ("a second record of arn:exec:x: InternalError: An error occurred "
                                         "(InternalError) when calling the DeleteMessage operation: later")
    assert not report.complete


def test_the_copies_of_a_record_whose_own_delete_failed_are_deleted_too(sqs: Stubber) -> None:
    """The message is back on the source queue either way: its copies go, the record itself stays as a duplicate."""
    expect_receive(sqs, [received("d-1", failure("o-1", execution="arn:exec:x")),
                         received("d-2", failure("o-1", execution="arn:exec:x"))])
    expect_send(sqs, json.dumps({"orderId": "o-1"}), "new-1")
    sqs.add_client_error("delete_message", "InternalError", "later",
                         expected_params={"QueueUrl": DLQ, "ReceiptHandle": "rh-d-1"})
    expect_delete(sqs, "rh-d-2")
    expect_release(sqs, "rh-d-1")
    report = run(sqs)
    assert [(o.message_id, o.action) for o in report.outcomes] == [("d-1", Action.SENT_NOT_DELETED),
                                                                   ("d-2", Action.COPY_DELETED)]


def test_a_copy_of_a_record_whose_send_failed_is_left_with_it(sqs: Stubber) -> None:
    expect_receive(sqs, [received("d-1", failure("o-1", execution="arn:exec:x")),
                         received("d-2", failure("o-1", execution="arn:exec:x"))])
    sqs.add_client_error("send_message", "InvalidParameterValue", "no")
    expect_release(sqs, "rh-d-1", "rh-d-2")
    report = run(sqs)
    assert [(o.message_id, o.action) for o in report.outcomes] == [("d-1", Action.SEND_FAILED)]


def test_the_delete_uses_the_latest_receipt_handle(sqs: Stubber) -> None:
    """A message received twice in one read (its short visibility lapsed) is deleted with the newer handle."""
    request = {"QueueUrl": DLQ, "MaxNumberOfMessages": 10, "VisibilityTimeout": 30, "WaitTimeSeconds": 1,
               "MessageSystemAttributeNames": ["All"], "MessageAttributeNames": ["All"]}
    sqs.add_response("receive_message", {"Messages": [received("d-1", failure("o-1"), "old")]}, request)
    sqs.add_response("receive_message", {"Messages": [received("d-1", failure("o-1"), "new"),
                                                      received("d-2", failure("o-2"))]}, request)
    sqs.add_response("receive_message", {}, request)
    expect_send(sqs, json.dumps({"orderId": "o-1"}), "n-1")
    expect_delete(sqs, "new")
    expect_send(sqs, json.dumps({"orderId": "o-2"}), "n-2")
    expect_delete(sqs, "rh-d-2")
    report = run(sqs)
    assert report.read == 2 and report.count(Action.REDRIVEN) == 2
