"""The Redriver's return of the source DLQ on moto's SQS: each message the pipe could not hand over goes back as a copy
carrying the healing attributes, paced by DelaySeconds, within a run's budget and the policy's attempts; what cannot
go back stays where it is."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from fire_and_forget.healing.source_return import MAX_DELAY_SECONDS, return_to_source, run_budget
from fire_and_forget.runtime.healing_policy import ATTEMPT_ATTRIBUTE, FIRST_MESSAGE_ATTRIBUTE, HealingPolicy

POLICY = HealingPolicy(transient_errors={}, max_attempts=2, max_message_bytes=64 * 1024, source_return_per_second=2)


@pytest.fixture
def queues() -> Iterator[tuple[Any, str, str]]:
    with mock_aws():
        sqs = boto3.client("sqs", region_name="us-east-1")
        dlq = sqs.create_queue(QueueName="source-dlq")["QueueUrl"]
        yield sqs, dlq, sqs.create_queue(QueueName="source")["QueueUrl"]


def park(sqs: Any, dlq: str, body: str, *, attempt: int | None = None, first: str | None = None,
         extra: int = 0) -> str:
    """A message as SQS's redrive policy leaves it in the source DLQ (the attributes it was sent with)."""
    attributes: dict[str, Any] = {f"a{i}": {"DataType": "String", "StringValue": f"v{i}"} for i in range(extra)}
    if attempt is not None:
        attributes[ATTEMPT_ATTRIBUTE] = {"DataType": "Number", "StringValue": str(attempt)}
        attributes[FIRST_MESSAGE_ATTRIBUTE] = {"DataType": "String", "StringValue": first or "caller"}
    sent = sqs.send_message(QueueUrl=dlq, MessageBody=body, **({"MessageAttributes": attributes} if attributes else {}))
    return str(sent["MessageId"])


def everything(sqs: Any, url: str) -> list[dict[str, Any]]:
    """Every message in the queue, delayed ones included (moto delivers a delayed message once its delay passed: the
    test reads moto's own records for the delays)."""
    queue = sqs_queue(url)
    return [{"body": m.body, "delay": round((m.delayed_until - m.sent_timestamp) / 1000) if m.delayed_until else 0,
             "attributes": m.message_attributes} for m in queue._messages]


def sqs_queue(url: str) -> Any:
    from moto.sqs.models import sqs_backends

    return sqs_backends["123456789012"]["us-east-1"].get_queue(url.rsplit("/", 1)[-1])


def test_each_message_goes_back_once_with_the_next_attempt_the_callers_id_and_its_own_attributes(
        queues: tuple[Any, str, str]) -> None:
    sqs, dlq, source = queues
    fresh = park(sqs, dlq, "first time", extra=2)
    park(sqs, dlq, "a copy already", attempt=1, first="the-caller")
    links: list[tuple[str, str]] = []

    report = return_to_source(sqs, dlq_url=dlq, source_url=source, policy=POLICY, per_second=2,
                              period_seconds=300, sent=lambda caller, copy: links.append((caller, copy)))

    assert (report.returned, report.spent, report.later, report.refused) == (2, 0, 0, 0)
    assert everything(sqs, dlq) == []
    back = {m["body"]: m for m in everything(sqs, source)}
    assert back["first time"]["attributes"][ATTEMPT_ATTRIBUTE]["StringValue"] == "1"
    assert back["first time"]["attributes"][FIRST_MESSAGE_ATTRIBUTE]["StringValue"] == fresh
    assert back["first time"]["attributes"]["a1"]["StringValue"] == "v1"  # the caller's own attributes kept
    assert back["a copy already"]["attributes"][ATTEMPT_ATTRIBUTE]["StringValue"] == "2"
    assert back["a copy already"]["attributes"][FIRST_MESSAGE_ATTRIBUTE]["StringValue"] == "the-caller"
    assert sorted(caller for caller, _ in links) == sorted([fresh, "the-caller"]) == sorted(c for c, _ in report.sent)


def test_the_returns_are_paced_by_their_delays_and_a_run_sends_at_most_its_budget(queues: tuple[Any, str, str]) -> None:
    sqs, dlq, source = queues
    for n in range(9):
        park(sqs, dlq, f"m{n}")

    # Two a second for a 3-second period: six this run, delayed 0, 0.5, ... (whole seconds: SQS's DelaySeconds)
    report = return_to_source(sqs, dlq_url=dlq, source_url=source, policy=POLICY, per_second=2, period_seconds=3)

    assert (report.returned, report.later) == (6, report.later) and report.returned + report.later <= 9
    assert sorted(m["delay"] for m in everything(sqs, source)) == [0, 0, 1, 1, 2, 2]
    assert len(everything(sqs, dlq)) == 3  # the next run's
    assert run_budget(2, 300) == 600 and run_budget(50, 300) == 1000 and run_budget(0.001, 300) == 1
    assert run_budget(100, 3600) == 1000 and run_budget(1, 3600) == MAX_DELAY_SECONDS  # delays stop at 900 s


def test_spent_attempts_and_messages_sqs_would_refuse_stay_for_a_person(queues: tuple[Any, str, str]) -> None:
    sqs, dlq, source = queues
    park(sqs, dlq, "spent", attempt=2)
    park(sqs, dlq, "ten attributes", extra=9)  # the two healing attributes would make eleven

    report = return_to_source(sqs, dlq_url=dlq, source_url=source, policy=POLICY, per_second=2, period_seconds=300)

    assert (report.returned, report.spent) == (0, 2)
    assert sorted(m["body"] for m in everything(sqs, dlq)) == ["spent", "ten attributes"]
    assert everything(sqs, source) == []


def test_a_refused_send_leaves_the_message_in_the_dlq_for_the_next_run(queues: tuple[Any, str, str],
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    sqs, dlq, source = queues
    park(sqs, dlq, "kept")

    def refuse(**_: Any) -> Any:
        raise ClientError({"Error": {"Code": "KMS.ThrottlingException", "Message": "slow down"}}, "SendMessage")

    monkeypatch.setattr(sqs, "send_message", refuse)
    report = return_to_source(sqs, dlq_url=dlq, source_url=source, policy=POLICY, per_second=2, period_seconds=300)

    assert (report.returned, report.refused) == (0, 1)
    assert [m["body"] for m in everything(sqs, dlq)] == ["kept"]
    # And it is visible again at once for the next run (the run released what it held).
    assert len(sqs.receive_message(QueueUrl=dlq).get("Messages", [])) == 1
