"""Where the rehearsal follows AWS's documented behaviour rather than moto's: SQS record shapes and limits, the
size rule of Step Functions' status-change events, and duplicate deliveries that arrive late."""

from __future__ import annotations

import base64
import json
import random

import pytest
from botocore.exceptions import ClientError

from demos.orders.samples import OrderKind, make_order
from fire_and_forget.rehearsal.accounting import Place, account
from fire_and_forget.rehearsal.deployment import ACCOUNT
from fire_and_forget.rehearsal.execution_events import PAYLOAD_LIMIT_BYTES, status_change_event
from fire_and_forget.rehearsal.pipe import DuplicateTiming
from fire_and_forget.rehearsal.rehearsal import Rehearsal
from fire_and_forget.rehearsal.sqs_rules import message_size

SIGNATURE = bytes(range(256)) * 2  # a binary attribute that is not valid UTF-8


def order_body(number: int, kind: OrderKind = OrderKind.VALID) -> str:
    return make_order(kind, number, random.Random(number)).body


def source_limit(aws: Rehearsal) -> int:
    attributes = aws.sqs.get_queue_attributes(
        QueueUrl=aws.outputs["SourceQueueUrl"], AttributeNames=["MaximumMessageSize"]
    )["Attributes"]
    return int(attributes["MaximumMessageSize"])


# -- the record a pipe delivers --------------------------------------------------------------------------------


def test_the_pipe_record_carries_binary_attributes_base64_encoded(aws: Rehearsal) -> None:
    # Given an order sent with a string and a binary message attribute
    aws.sqs.send_message(
        QueueUrl=aws.outputs["SourceQueueUrl"],
        MessageBody=order_body(1),
        MessageAttributes={
            "tenant": {"DataType": "String", "StringValue": "acme"},
            "signature": {"DataType": "Binary", "BinaryValue": SIGNATURE},
        },
    )

    # When the pipe hands it to the workflow
    (execution,) = aws.run()

    # Then the record holds each attribute as Pipes delivers it: stringValue or base64 binaryValue, and the md5
    (record,) = execution.input
    attributes = record["messageAttributes"]
    assert attributes["signature"]["dataType"] == "Binary"
    assert base64.b64decode(attributes["signature"]["binaryValue"]) == SIGNATURE
    assert "stringValue" not in attributes["signature"]
    assert attributes["tenant"] == {
        "stringValue": "acme",
        "stringListValues": [],
        "binaryListValues": [],
        "dataType": "String",
    }
    assert len(record["md5OfMessageAttributes"]) == 32


# -- SQS's limits, which moto does not enforce --------------------------------------------------------------------


def test_a_message_of_exactly_the_queue_limit_in_bytes_attributes_included_is_accepted(aws: Rehearsal) -> None:
    limit = source_limit(aws)
    attributes = {"tenant": {"DataType": "String", "StringValue": "acme"}}
    overhead = message_size("", attributes)
    assert overhead == len("tenant") + len("String") + len("acme")

    aws.sqs.send_message(
        QueueUrl=aws.outputs["SourceQueueUrl"], MessageBody="x" * (limit - overhead), MessageAttributes=attributes
    )

    assert len(aws.messages("SourceQueueUrl")) == 1


def test_one_byte_past_the_limit_counting_attributes_is_refused(aws: Rehearsal) -> None:
    limit = source_limit(aws)
    attributes = {"tenant": {"DataType": "String", "StringValue": "acme"}}
    body = "x" * (limit - message_size("", attributes) + 1)  # within the limit alone; past it with the attribute

    with pytest.raises(ClientError) as refused:
        aws.sqs.send_message(QueueUrl=aws.outputs["SourceQueueUrl"], MessageBody=body, MessageAttributes=attributes)

    assert refused.value.response["Error"]["Code"] in {"InvalidParameterValue", "InvalidParameterValueException"}
    assert aws.messages("SourceQueueUrl") == []


def test_the_size_is_counted_in_bytes_not_characters(aws: Rehearsal) -> None:
    limit = source_limit(aws)
    at_limit = "é" * (limit // 2)  # two bytes each in UTF-8
    aws.sqs.send_message(QueueUrl=aws.outputs["SourceQueueUrl"], MessageBody=at_limit)

    with pytest.raises(ClientError):  # half as many characters as the limit, but one byte past it
        aws.sqs.send_message(QueueUrl=aws.outputs["SourceQueueUrl"], MessageBody=at_limit + "x")

    assert len(aws.messages("SourceQueueUrl")) == 1


def test_ten_message_attributes_are_accepted_and_eleven_refused(aws: Rehearsal) -> None:
    ten = {f"a{n}": {"DataType": "String", "StringValue": "v"} for n in range(10)}
    aws.sqs.send_message(QueueUrl=aws.outputs["SourceQueueUrl"], MessageBody="{}", MessageAttributes=ten)

    with pytest.raises(ClientError) as refused:
        aws.sqs.send_message(
            QueueUrl=aws.outputs["SourceQueueUrl"],
            MessageBody="{}",
            MessageAttributes={**ten, "a10": {"DataType": "String", "StringValue": "v"}},
        )

    assert "10" in refused.value.response["Error"]["Message"]
    assert len(aws.messages("SourceQueueUrl")) == 1


@pytest.mark.parametrize(
    "attribute",
    [{"DataType": "Binary", "StringValue": ""}, {"DataType": "String", "StringValue": ""}],
    ids=["binary without a BinaryValue", "empty string"],
)
def test_an_attribute_without_a_value_is_refused(aws: Rehearsal, attribute: dict[str, str]) -> None:
    with pytest.raises(ClientError):
        aws.sqs.send_message(
            QueueUrl=aws.outputs["SourceQueueUrl"], MessageBody="{}", MessageAttributes={"signature": attribute}
        )  # type: ignore[dict-item]

    assert aws.messages("SourceQueueUrl") == []


# -- Step Functions' status-change events: large inputs are left out ---------------------------------------------


def described(input_text: str, output: str | None = None) -> dict[str, object]:
    arn = f"arn:aws:states:us-east-1:{ACCOUNT}:execution:OrderSaga:pipe-1"
    return {
        "executionArn": arn,
        "stateMachineArn": arn.replace(":execution:", ":stateMachine:").rsplit(":", 1)[0],
        "name": "pipe-1",
        "status": "TIMED_OUT",
        "input": input_text,
        "output": output,
    }


def test_an_input_that_would_overflow_the_event_is_left_out_and_flagged() -> None:
    # Given a 263,773-byte input, as an earlier rehearsal produced (a JSON array holding one large record)
    big = json.dumps([{"body": "x" * 263_759}])
    assert len(big.encode()) == 263_773

    event = status_change_event(described(big), ACCOUNT, "us-east-1")

    assert event["detail"]["input"] is None
    assert event["detail"]["inputDetails"] == {"included": False}
    assert len(json.dumps(event).encode()) < 256 * 1024  # EventBridge's event size limit


def test_an_input_at_the_limit_is_included() -> None:
    # The escaped form of a JSON array of plain characters grows by one backslash per quote.
    text = json.dumps(["x" * (PAYLOAD_LIMIT_BYTES - 6)])  # ["xxx..."] escapes to [\"xxx...\"]: 6 bytes of frame
    assert len(json.dumps(text)) - 2 == PAYLOAD_LIMIT_BYTES

    event = status_change_event(described(text), ACCOUNT, "us-east-1")
    over = status_change_event(described(json.dumps(["x" * (PAYLOAD_LIMIT_BYTES - 5)])), ACCOUNT, "us-east-1")

    assert (event["detail"]["input"], event["detail"]["inputDetails"]) == (text, {"included": True})
    assert (over["detail"]["input"], over["detail"]["inputDetails"]) == (None, {"included": False})


def test_input_and_output_together_past_the_limit_drop_the_input_and_keep_the_output() -> None:
    half = json.dumps({"blob": "y" * (PAYLOAD_LIMIT_BYTES // 2)})

    event = status_change_event(described(half, output=half), ACCOUNT, "us-east-1")

    assert event["detail"]["input"] is None and event["detail"]["inputDetails"] == {"included": False}
    assert event["detail"]["output"] == half and event["detail"]["outputDetails"] == {"included": True}


# -- duplicate deliveries that arrive later -------------------------------------------------------------------


@pytest.mark.parametrize("timing", [DuplicateTiming.NEXT_POLL, DuplicateTiming.AFTER_END])
def test_a_late_duplicate_starts_in_a_later_poll_and_is_absorbed(aws: Rehearsal, timing: DuplicateTiming) -> None:
    # Given a valid order whose delivery comes back later (same message id, new receipt handle)
    aws.pipe.duplicate_next, aws.pipe.duplicate_timing = 1, timing
    message_id = aws.sqs.send_message(QueueUrl=aws.outputs["SourceQueueUrl"], MessageBody=order_body(7))["MessageId"]

    # When the pipe drains the queue and the executions end
    first, second = aws.run()

    # Then the copy started after the first (after it ended, for AFTER_END), with one receive more
    assert (first.message_id, second.message_id) == (message_id, message_id)
    assert first.input[0]["receiptHandle"] != second.input[0]["receiptHandle"]
    receives = [int(e.input[0]["attributes"]["ApproximateReceiveCount"]) for e in (first, second)]
    assert receives[1] == receives[0] + 1
    if timing is DuplicateTiming.AFTER_END:
        first_end = next(e["timestamp"] for e in first.history if e["type"] == "ExecutionSucceeded")
        second_start = second.history[0]["timestamp"]
        assert second_start >= first_end
    # And the order was done once: one execution ran the saga, the other was ignored (which one, when both run at
    # once, is the race for the delivery claim)
    assert aws.pipe.stats.duplicates == 1 and aws.pipe.copies_pending == 0
    assert sorted(e.states[-1] for e in (first, second)) == ["ArrangeShipping", "DuplicateDeliveryIgnored"]
    if timing is DuplicateTiming.AFTER_END:
        assert second.states[-1] == "DuplicateDeliveryIgnored"
    assert {fate.place for fate in account(aws, [message_id]).fates.values()} == {Place.SUCCEEDED}
