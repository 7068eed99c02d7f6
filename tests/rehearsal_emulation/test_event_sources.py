"""The SQS event source mapping emulator, on the probe app's Reconciler mapping as CDK's SqsEventSource writes it."""

from __future__ import annotations

import pytest

from fire_and_forget.rehearsal.event_sources import batch_item_failures
from fire_and_forget.rehearsal.faults import Fault, FaultKind
from tests.rehearsal_emulation.conftest import ProbeAccount
from tests.rehearsal_emulation.probe_app import MAX_RECEIVE_COUNT, VISIBILITY_TIMEOUT_SECONDS


def test_the_mapping_is_read_from_the_template_and_left_out_of_moto(probe: ProbeAccount) -> None:
    # Given the deployed probe stack
    (poller,) = probe.mappings.pollers
    # Then the emulator obeys the template's mapping
    assert poller.mapping.function_name == probe.function_name("ReconcilerFunction")
    assert poller.mapping.queue_url == probe.url("FailureEventsQueueUrl")
    assert (poller.mapping.batch_size, poller.mapping.report_batch_item_failures) == (10, True)
    # And moto runs no mapping of its own (it would invoke the function on every SendMessage)
    assert probe.lambda_client.list_event_source_mappings()["EventSourceMappings"] == []
    probe.send({"outcome": "ok"})
    assert probe.runtime.invocations == []


def test_a_successful_batch_is_one_invocation_with_lambdas_sqs_event_and_is_deleted(probe: ProbeAccount) -> None:
    # Given three messages on the failure-events queue, one with a message attribute
    ids = [probe.send({"outcome": "ok", "n": n}) for n in range(2)]
    ids.append(
        str(
            probe.sqs.send_message(
                QueueUrl=probe.url("FailureEventsQueueUrl"),
                MessageBody='{"outcome": "ok"}',
                MessageAttributes={"kind": {"DataType": "String", "StringValue": "TIMED_OUT"}},
            )["MessageId"]
        )
    )
    # When the mapping drains the queue
    received = probe.mappings.drain()
    # Then one invocation got all three records, shaped as Lambda's SQS event
    assert received == 3
    (event,) = probe.observed()
    records = event["Records"]
    assert [r["messageId"] for r in records] == ids
    queue_arn = probe.mappings.pollers[0].mapping.queue_arn
    for record in records:
        assert {
            "messageId",
            "receiptHandle",
            "body",
            "attributes",
            "messageAttributes",
            "md5OfBody",
            "eventSource",
            "eventSourceARN",
            "awsRegion",
        } <= set(record)
        assert (record["eventSource"], record["eventSourceARN"], record["awsRegion"]) == (
            "aws:sqs",
            queue_arn,
            "us-east-1",
        )
        assert record["attributes"]["ApproximateReceiveCount"] == "1"
        assert {"SentTimestamp", "SenderId", "ApproximateFirstReceiveTimestamp"} <= set(record["attributes"])
    assert records[2]["messageAttributes"] == {
        "kind": {"stringValue": "TIMED_OUT", "stringListValues": [], "binaryListValues": [], "dataType": "String"}
    }
    assert "md5OfMessageAttributes" in records[2]
    # And the queue is empty
    assert probe.messages("FailureEventsQueueUrl") == []
    assert probe.mappings.stats(probe.function_name("ReconcilerFunction")).deleted == 3


def test_a_partial_batch_response_deletes_all_but_the_listed_records(probe: ProbeAccount) -> None:
    # Given two good messages and one the function reports as a batch item failure
    probe.send({"outcome": "ok"})
    failing = probe.send({"outcome": "fail"})
    probe.send({"outcome": "ok"})
    # When the mapping polls once
    probe.mappings.poll()
    # Then only the listed message is still on the queue: invisible for the queue's visibility timeout, then back
    assert probe.messages("FailureEventsQueueUrl") == []
    probe.clock.advance(VISIBILITY_TIMEOUT_SECONDS - 1)
    assert probe.messages("FailureEventsQueueUrl") == []
    probe.clock.advance(1)
    assert [m["MessageId"] for m in probe.messages("FailureEventsQueueUrl")] == [failing]


def test_a_reported_failure_is_redelivered_until_the_redrive_policy_moves_it_to_the_dlq(probe: ProbeAccount) -> None:
    # Given a message the function fails every time, and one it processes
    failing = probe.send({"outcome": "fail"})
    probe.send({"outcome": "ok"})
    # When the mapping drains the queue, each redelivery after the visibility timeout
    probe.drain_over_time()
    # Then the failing message was delivered maxReceiveCount times, with a growing receive count
    deliveries = [r for e in probe.observed() for r in e["Records"] if r["messageId"] == failing]
    assert [r["attributes"]["ApproximateReceiveCount"] for r in deliveries] == [
        str(n) for n in range(1, MAX_RECEIVE_COUNT + 1)
    ]
    # And then SQS moved it to the queue's DLQ, and nothing is left on the source
    assert [m["MessageId"] for m in probe.messages("ReconcilerDlqUrl")] == [failing]
    assert probe.messages("FailureEventsQueueUrl") == []


def test_a_function_error_deletes_nothing_and_the_batch_ends_in_the_dlq(probe: ProbeAccount) -> None:
    # Given a batch in which one record makes the whole invocation raise
    ids = {probe.send({"outcome": "ok"}), probe.send({"outcome": "raise"})}
    # When the mapping drains the queue, each redelivery after the visibility timeout
    probe.drain_over_time()
    # Then every invocation failed, each record was delivered maxReceiveCount times, and both are in the DLQ
    stats = probe.mappings.stats(probe.function_name("ReconcilerFunction"))
    assert (stats.invocations, stats.failed_invocations, stats.deleted) == (MAX_RECEIVE_COUNT, MAX_RECEIVE_COUNT, 0)
    assert {m["MessageId"] for m in probe.messages("ReconcilerDlqUrl")} == ids


def test_a_fault_on_the_reconciler_is_retried_by_redelivery(probe: ProbeAccount) -> None:
    # Given the reconciler crashing on its first invocation only (the fault matrix's "reconciler itself failing")
    probe.faults.add(Fault("Reconciler", FaultKind.CRASH, times=1))
    message = probe.send({"outcome": "ok"})
    # When the mapping drains the queue, the redelivery after the visibility timeout
    probe.drain_over_time()
    # Then the second delivery (receive count 2) processed it, and it was deleted
    assert [i.error_type for i in probe.runtime.invocations] == ["Runtime.ExitError", None]
    (event,) = probe.observed()  # the crash happened before the handler ran
    assert [(r["messageId"], r["attributes"]["ApproximateReceiveCount"]) for r in event["Records"]] == [(message, "2")]
    assert probe.messages("FailureEventsQueueUrl") == probe.messages("ReconcilerDlqUrl") == []


def test_a_throttled_invoke_keeps_the_batch(probe: ProbeAccount) -> None:
    # Given the Lambda service throttling the first Invoke call
    probe.faults.add(Fault("Reconciler", FaultKind.THROTTLE, times=1))
    message = probe.send({"outcome": "ok"})
    # When the mapping polls once
    probe.mappings.poll()
    # Then the message is still there, received again once the visibility timeout has passed
    probe.clock.advance(VISIBILITY_TIMEOUT_SECONDS + 1)
    assert [m["MessageId"] for m in probe.messages("FailureEventsQueueUrl")] == [message]


def test_a_batch_is_at_most_batch_size_messages(probe: ProbeAccount) -> None:
    # Given 12 messages and BatchSize 10
    for n in range(12):
        probe.send({"outcome": "ok", "n": n})
    # When the mapping polls once
    probe.mappings.poll()
    # Then it invoked the function once with 10 records and left 2
    (event,) = probe.observed()
    assert len(event["Records"]) == 10
    assert len(probe.messages("FailureEventsQueueUrl")) == 2


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        (b"", set()),
        (b"null", set()),
        (b"{}", set()),
        (b'{"batchItemFailures": null}', set()),
        (b'{"batchItemFailures": []}', set()),
        (b'{"batchItemFailures": [{"itemIdentifier": "b"}]}', {"b"}),
        (b'{"batchItemFailures": [{"itemIdentifier": ""}]}', None),
        (b'{"batchItemFailures": [{"itemIdentifier": null}]}', None),
        (b'{"batchItemFailures": [{"itemId": "b"}]}', None),
        (b'{"batchItemFailures": [{"itemIdentifier": "zz"}]}', None),
        (b'"ok"', None),
        (b"not json", None),
    ],
)
def test_partial_batch_response_rules(payload: bytes, expected: set[str] | None) -> None:
    # services-sqs-errorhandling.html: what is complete success (empty set), partial, or complete failure (None)
    assert batch_item_failures(payload, {"a", "b"}) == expected
