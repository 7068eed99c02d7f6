"""Reading a queue without losing or hiding its messages (fire_and_forget/runtime/dlq.py), on botocore's Stubber:
the receive's exact arguments, messages met again, the end of a read, and every held message made visible again in
batches of ten, also when the command fails."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber

from fire_and_forget.runtime.dlq import DEFAULT_VISIBILITY_TIMEOUT, DEFAULT_WAIT_SECONDS, HeldMessages

URL = "https://sqs.us-east-1.amazonaws.com/123456789012/failure-dlq"


@pytest.fixture
def sqs() -> Iterator[Stubber]:
    client = boto3.client("sqs", region_name="us-east-1")
    with Stubber(client) as stubber:
        yield stubber
        stubber.assert_no_pending_responses()


def request(count: int = 10, visibility: int = DEFAULT_VISIBILITY_TIMEOUT,
            wait: int = DEFAULT_WAIT_SECONDS) -> dict[str, Any]:
    return {"QueueUrl": URL, "MaxNumberOfMessages": count, "VisibilityTimeout": visibility, "WaitTimeSeconds": wait,
            "MessageSystemAttributeNames": ["All"], "MessageAttributeNames": ["All"]}


def messages(*ids: str, receipt: str = "rh") -> dict[str, Any]:
    return {"Messages": [{"MessageId": i, "ReceiptHandle": f"{receipt}-{i}", "Body": "{}"} for i in ids]}


def expect_release(sqs: Stubber, receipts: list[str]) -> None:
    entries = [{"Id": str(i), "ReceiptHandle": r, "VisibilityTimeout": 0} for i, r in enumerate(receipts)]
    sqs.add_response("change_message_visibility_batch", {"Successful": [], "Failed": []},
                     {"QueueUrl": URL, "Entries": entries})


def test_the_defaults_are_a_30_second_hold_and_a_one_second_long_poll(sqs: Stubber) -> None:
    assert (DEFAULT_VISIBILITY_TIMEOUT, DEFAULT_WAIT_SECONDS) == (30, 1)
    sqs.add_response("receive_message", {}, request(10, 30, 1))
    with HeldMessages(sqs.client, URL) as held:  # type: ignore[arg-type]
        assert held.receive() == [] and held.read == 0 and held.queue_url == URL


def test_the_receive_asks_for_one_to_ten_with_the_given_hold_and_wait(sqs: Stubber) -> None:
    sqs.add_response("receive_message", {}, request(1, 5, 0))
    sqs.add_response("receive_message", {}, request(10, 5, 0))
    sqs.add_response("receive_message", {}, request(7, 5, 0))
    with HeldMessages(sqs.client, URL, visibility_timeout=5, wait_seconds=0) as held:  # type: ignore[arg-type]
        assert held.receive(0) == [] and held.receive(25) == [] and held.receive(7) == []


def test_messages_met_again_are_not_returned_again_and_the_third_such_receive_ends_the_read(sqs: Stubber) -> None:
    sqs.add_response("receive_message", messages("a", "b"), request())
    sqs.add_response("receive_message", messages("a", receipt="second"), request())  # its short hold lapsed
    sqs.add_response("receive_message", messages("b", "c"), request())
    for _ in range(2):  # the second and third receives of the read that bring nothing new
        sqs.add_response("receive_message", messages("a", "c", receipt="late"), request())
    expect_release(sqs, ["late-a", "rh-b", "late-c"])
    with HeldMessages(sqs.client, URL) as held:  # type: ignore[arg-type]
        assert [m["MessageId"] for m in held.receive()] == ["a", "b"]
        assert [m["MessageId"] for m in held.receive()] == ["c"]  # "a" again was not new
        assert held.receive() == []  # the third receive of the read that brought nothing new
        assert held.receive() == []  # and the read stays over, without asking again
        assert held.read == 3
        assert held.receipt("a") == "late-a"  # the latest handle: SQS deletes reliably only with it


def test_a_message_deleted_meanwhile_is_not_released(sqs: Stubber) -> None:
    sqs.add_response("receive_message", messages("a", "b", "c"), request())
    expect_release(sqs, ["rh-a", "rh-c"])
    with HeldMessages(sqs.client, URL) as held:  # type: ignore[arg-type]
        held.receive()
        held.forget("b")
        held.forget("never-held")  # forgetting what it does not hold is harmless


def test_release_makes_every_held_message_visible_in_batches_of_ten_once(sqs: Stubber) -> None:
    ids = [f"m{i:02d}" for i in range(23)]
    for start in range(0, 23, 10):
        sqs.add_response("receive_message", messages(*ids[start:start + 10]), request())
    for start in range(0, 23, 10):
        expect_release(sqs, [f"rh-{i}" for i in ids[start:start + 10]])
    held = HeldMessages(sqs.client, URL)  # type: ignore[arg-type]
    while held.receive(10):
        if held.read == 23:
            break
    held.release()
    held.release()  # nothing held any more: no second call
    with pytest.raises(KeyError):
        held.receipt("m00")


def test_a_failed_release_after_the_work_succeeded_is_raised(sqs: Stubber) -> None:
    sqs.add_response("receive_message", messages("a"), request())
    sqs.add_client_error("change_message_visibility_batch", "AccessDenied", "no")
    with pytest.raises(ClientError), HeldMessages(sqs.client, URL) as held:  # type: ignore[arg-type]
        held.receive()


def test_a_failed_release_after_the_work_failed_leaves_the_works_error(sqs: Stubber) -> None:
    sqs.add_response("receive_message", messages("a"), request())
    sqs.add_client_error("change_message_visibility_batch", "AccessDenied", "no")
    with pytest.raises(RuntimeError, match="the command's own failure"), \
            HeldMessages(sqs.client, URL) as held:  # type: ignore[arg-type]
        held.receive()
        raise RuntimeError("the command's own failure")


def test_the_messages_are_released_when_the_command_fails(sqs: Stubber) -> None:
    sqs.add_response("receive_message", messages("a"), request())
    expect_release(sqs, ["rh-a"])
    with pytest.raises(RuntimeError), HeldMessages(sqs.client, URL) as held:  # type: ignore[arg-type]
        held.receive()
        raise RuntimeError("interrupted")
