"""The rehearsal's cheaper request path changes no answer: what goes unsigned (client_cache.sign_only_what_leaves),
and the pollers' look at moto's records before a ReceiveMessage (sqs_time.receivable)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSPreparedRequest
from botocore.exceptions import ClientError
from moto import mock_aws

from fire_and_forget.rehearsal import client_cache, sqs_time
from fire_and_forget.rehearsal.clock import VirtualClock
from fire_and_forget.rehearsal.sqs_time import install_sqs_on_the_clock

REGION = "us-east-1"


def sent_headers(client: Any) -> list[dict[str, str]]:
    """The headers of every request the client sends from now on, as they are when it is sent."""
    seen: list[dict[str, str]] = []

    def record(request: AWSPreparedRequest, **_: Any) -> None:
        seen.append({k: v.decode() if isinstance(v, bytes) else v for k, v in request.headers.items()})

    client.meta.events.register_first("before-send", record)
    return seen


@pytest.fixture
def account() -> Iterator[None]:
    client_cache.sign_only_what_leaves()  # the suite's conftest has already; idempotent
    with mock_aws():
        yield


@pytest.mark.usefixtures("account")
def test_a_request_moto_answers_in_the_process_goes_unsigned_and_is_answered_as_the_account() -> None:
    sqs = boto3.client("sqs", region_name=REGION)
    headers = sent_headers(sqs)

    url = sqs.create_queue(QueueName="orders")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]

    assert headers and all("Authorization" not in h for h in headers)
    assert arn == f"arn:aws:sqs:{REGION}:123456789012:orders"  # moto's default account: the rehearsal's


@pytest.mark.usefixtures("account")
def test_s3_is_signed_so_moto_answers_its_owner_and_not_an_anonymous_caller() -> None:
    s3 = boto3.client("s3", region_name=REGION)
    headers = sent_headers(s3)
    s3.create_bucket(Bucket="assets")
    s3.put_object(Bucket="assets", Key="code.zip", Body=b"zip")

    assert s3.get_object(Bucket="assets", Key="code.zip")["Body"].read() == b"zip"
    assert headers and all(h.get("Authorization", "").startswith("AWS4-HMAC-SHA256") for h in headers)


@pytest.mark.usefixtures("account")
def test_a_request_to_an_endpoint_that_is_not_aws_is_signed() -> None:
    # The practice gateway's kind of endpoint: the request leaves the process, and its receiver reads the signature.
    sqs = boto3.client("sqs", region_name=REGION, endpoint_url="http://127.0.0.1:9")
    headers = sent_headers(sqs)
    sqs.meta.events.register("before-send", refuse)  # answered here: nothing is listening on :9

    with pytest.raises(ClientError):
        sqs.list_queues()

    assert headers and headers[0]["Authorization"].startswith("AWS4-HMAC-SHA256")


def test_without_moto_every_request_is_signed() -> None:
    client_cache.sign_only_what_leaves()
    sqs = boto3.client("sqs", region_name=REGION)
    headers = sent_headers(sqs)
    sqs.meta.events.register("before-send", refuse)

    with pytest.raises(ClientError):
        sqs.list_queues()

    assert headers and headers[0]["Authorization"].startswith("AWS4-HMAC-SHA256")


def refuse(**_: Any) -> None:
    """Answers a request before it is sent (botocore takes a before-send handler's return value as the response)."""
    return _Refused()  # type: ignore[return-value]


class _Refused:
    """A response botocore accepts from a before-send handler: a 400 with no body."""

    status_code = 400
    headers: dict[str, str] = {}  # noqa: RUF012
    content = b""
    raw = None

    @property
    def text(self) -> str:
        return ""


@pytest.fixture
def clocked_queue() -> Iterator[tuple[Any, str, VirtualClock]]:
    clock = VirtualClock()
    clock.install()
    uninstall = install_sqs_on_the_clock()
    try:
        with mock_aws():
            sqs = boto3.client("sqs", region_name=REGION)
            yield sqs, sqs.create_queue(QueueName="source")["QueueUrl"], clock
    finally:
        uninstall()
        clock.uninstall()


def test_receivable_is_true_exactly_when_a_receive_would_return_a_message(
        clocked_queue: tuple[Any, str, VirtualClock]) -> None:
    sqs, url, clock = clocked_queue

    def receive() -> list[Any]:
        messages: list[Any] = sqs.receive_message(QueueUrl=url, VisibilityTimeout=30).get("Messages", [])
        return messages

    assert not sqs_time.receivable(url)  # empty
    sqs.send_message(QueueUrl=url, MessageBody="later", DelaySeconds=10)
    assert not sqs_time.receivable(url) and receive() == []  # delayed
    clock.advance(10)
    assert sqs_time.receivable(url)
    assert len(receive()) == 1
    assert not sqs_time.receivable(url) and receive() == []  # in flight
    clock.advance(30)
    assert sqs_time.receivable(url) and len(receive()) == 1  # visible again after its visibility timeout


def test_a_queue_s_views_read_the_clock_once_and_agree_with_each_message_s_own_test(
        clocked_queue: tuple[Any, str, VirtualClock], monkeypatch: pytest.MonkeyPatch) -> None:
    sqs, url, clock = clocked_queue
    # Given visible, delayed and in-flight messages
    for n in range(4):
        sqs.send_message(QueueUrl=url, MessageBody=f"now-{n}")
    sqs.send_message(QueueUrl=url, MessageBody="later", DelaySeconds=10)
    sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=2, VisibilityTimeout=30)
    queue = sqs_time._queue(url)
    readings: list[int] = []
    original = sqs_time.unix_time_millis
    monkeypatch.setattr(sqs_time, "unix_time_millis", lambda: readings.append(1) or original())
    for moment in (0, 10, 30):
        clock.advance(moment)
        readings.clear()
        # Then each view reads the clock once, and answers what each message's own visible and delayed tests say
        receivable = queue.messages
        counts = (queue.approximate_number_of_messages_delayed, queue.approximate_number_of_messages_not_visible)
        assert len(readings) == 3
        assert receivable == [m for m in queue._messages if m.visible and not m.delayed]
        assert counts == (sum(m.delayed for m in queue._messages), sum(not m.visible for m in queue._messages))
        assert sqs_time.receivable(url) == bool(receivable)
    assert len(queue.messages) == 5  # all of them, once the delay and the visibility timeout have passed


def test_the_12_hours_a_change_of_visibility_may_reach_count_from_the_latest_receive(
        clocked_queue: tuple[Any, str, VirtualClock]) -> None:
    sqs, url, clock = clocked_queue
    sqs.send_message(QueueUrl=url, MessageBody="a failure record kept for days")
    clock.advance(13 * 3600)  # older than 12 hours, as a failure DLQ's records often are

    def receive(visibility: int) -> str:
        (message,) = sqs.receive_message(QueueUrl=url, VisibilityTimeout=visibility)["Messages"]
        return str(message["ReceiptHandle"])

    # A reader that releases what it read (the Redriver's HeldMessages): visible again at once.
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=receive(30), VisibilityTimeout=0)
    assert sqs_time.receivable(url)
    # The API reference's example: received with 30 minutes, extended to 2 hours, later to what is left of 12 hours
    # since that receive, and no further.
    handle = receive(1800)
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=handle, VisibilityTimeout=2 * 3600)
    clock.advance(3600)
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=handle, VisibilityTimeout=11 * 3600)
    with pytest.raises(ClientError, match="beyond the limit"):
        sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=handle, VisibilityTimeout=11 * 3600 + 1)
    assert not sqs_time.receivable(url)
