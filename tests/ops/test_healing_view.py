"""ff-ops says what each failure record waits for exactly as the Redriver decides it
(src/fire_and_forget/cli/healing.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import boto3
import pytest
from moto import mock_aws

from fire_and_forget.cli import healing_status
from fire_and_forget.cli.errors import OutputsMissing
from fire_and_forget.cli.healing import Waiting, policy_of, waiting_for
from fire_and_forget.cli.stack import DeployedStack
from fire_and_forget.healing import auto_redrive, telemetry
from fire_and_forget.runtime.healing_policy import Disposition, HealingPolicy
from fire_and_forget.runtime.records import FailureRecord, parse
from tests.ops.healing_records import POLICY, reconciliation, record_body

FAILED_AT = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
# The Redriver's policy as it builds it in Lambda: from the environment the construct gives it.
REDRIVER_POLICY = HealingPolicy.from_environment(POLICY.to_environment())


def _record(**kwargs: object) -> FailureRecord:
    order_id = str(kwargs.pop("order_id", "ord-1"))
    kwargs.setdefault("failed_at", FAILED_AT)
    parsed = parse({"MessageId": f"dlq-{order_id}", "ReceiptHandle": "r", "Body": record_body(order_id, **kwargs)})
    assert isinstance(parsed, FailureRecord)
    return parsed


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"error": "PaymentProviderUnavailable", "state": "ChargePayment"}, Disposition.RETRY),
        ({"error": "PaymentProviderUnavailable", "state": "ChargePayment", "attempt": 2}, Disposition.RETRY),
        ({"error": "PaymentProviderUnavailable", "state": "ChargePayment", "attempt": 3}, Disposition.EXHAUSTED),
        ({"error": "OutOfStock", "state": "ReserveInventory"}, Disposition.NEEDS_DECISION),
        ({"error": "States.TaskFailed", "state": "HandleFailure"}, Disposition.RETRY),  # the tail itself failed
        (
            {"error": "PaymentProviderUnavailable", "state": "ChargePayment", "manual_repair": True},
            Disposition.MANUAL_REPAIR,
        ),
        (
            {"error": "States.Timeout", "state": "ChargePayment", "reconciliation": reconciliation("TIMED_OUT")},
            Disposition.RETRY,
        ),
        (
            {"error": "States.Aborted", "state": "ChargePayment", "reconciliation": reconciliation("ABORTED")},
            Disposition.NEEDS_DECISION,
        ),
    ],
)
def test_each_record_waits_for_what_the_redriver_decides(kwargs: dict[str, object], expected: Disposition) -> None:
    record = _record(**kwargs)

    waiting = waiting_for(record, POLICY)

    assert waiting.disposition is expected
    assert waiting.disposition.value == REDRIVER_POLICY.classify(record).disposition.value  # as the Redriver reads it
    assert waiting.attempt == kwargs.get("attempt", 0)
    assert (waiting.due_at is not None) == (expected is Disposition.RETRY)


@pytest.fixture
def queues() -> Iterator[tuple[object, str, str]]:
    with mock_aws():
        sqs = boto3.client("sqs", region_name="us-east-1")
        dlq = sqs.create_queue(QueueName="failure-dlq")["QueueUrl"]
        source = sqs.create_queue(QueueName="source")["QueueUrl"]
        yield sqs, dlq, source


@pytest.mark.parametrize("attempt", [None, 1, 2])
def test_the_due_time_shown_is_when_the_redriver_sends_it_back(
    queues: tuple[object, str, str], attempt: int | None
) -> None:
    # Given a transient failure in the failure DLQ, and the due time ff-ops shows for it
    sqs, dlq, source = queues
    body = record_body(
        "ord-7", error="PaymentProviderUnavailable", state="ChargePayment", failed_at=FAILED_AT, attempt=attempt
    )
    sqs.send_message(QueueUrl=dlq, MessageBody=body)  # type: ignore[attr-defined]
    due = waiting_for(
        _record(
            error="PaymentProviderUnavailable",
            state="ChargePayment",
            failed_at=FAILED_AT,
            attempt=attempt,
            order_id="ord-7",
        ),
        POLICY,
    ).due_at
    assert due is not None and FAILED_AT < due <= FAILED_AT + timedelta(seconds=POLICY.max_cool_off_seconds)

    # When the Redriver runs a second before it, then at it
    before = auto_redrive.redrive_due(
        sqs,
        dlq_url=dlq,
        source_url=source,
        policy=REDRIVER_POLICY,
        now=due - timedelta(seconds=1),
        key_field="orderId",
    )
    at = auto_redrive.redrive_due(
        sqs,
        dlq_url=dlq,
        source_url=source,
        policy=REDRIVER_POLICY,
        now=due,
        key_field="orderId",
    )

    # Then it waits until then, and sends it back then, with the next attempt number
    assert (before.redriven, at.redriven) == (0, 1)
    sent = sqs.receive_message(QueueUrl=source, MessageAttributeNames=["All"])["Messages"]  # type: ignore[attr-defined]
    assert sent[0]["MessageAttributes"]["ffRedriveAttempt"]["StringValue"] == str((attempt or 0) + 1)


def test_describe_says_which_attempt_is_next_and_when() -> None:
    now = FAILED_AT + timedelta(minutes=1)
    due = FAILED_AT + timedelta(minutes=7)

    assert (
        Waiting(Disposition.RETRY, 1, 3, due).describe(now)
        == "waiting-for-retry: attempt 2 of 3, due 2026-12-01 10:07:00Z"
    )
    assert (
        Waiting(Disposition.RETRY, 0, 3, FAILED_AT).describe(now)
        == "waiting-for-retry: attempt 1 of 3, due now (the Redriver's next run)"
    )
    assert Waiting(Disposition.EXHAUSTED, 3, 3, None).describe(now) == "retries-exhausted: 3 of 3 automatic redrives"
    assert Waiting(Disposition.MANUAL_REPAIR, 0, 3, None).describe(now) == "manual-repair"
    assert Waiting(Disposition.NEEDS_DECISION, 0, 3, None).describe(now) == "needs-decision"
    assert Waiting(Disposition.NEEDS_DECISION, 0, 3, None).short(now) == ["a person"]
    assert Waiting(Disposition.EXHAUSTED, 3, 3, None).short(now) == ["a person", "3/3 tried"]
    assert Waiting(Disposition.RETRY, 1, 3, now + timedelta(minutes=5)).short(now) == [
        "retry 2/3", (now + timedelta(minutes=5)).strftime("%H:%M:%SZ")]
    assert Waiting(None, 2, None, None).describe(now) == "-"
    assert Waiting(Disposition.RETRY, 1, 3, due).parts(now) == [
        "waiting-for-retry",
        "attempt 2 of 3",
        "due 2026-12-01 10:07:00Z",
    ]


def test_without_the_policy_output_nothing_is_classified_but_the_attempt_count_is_read() -> None:
    old_stack = DeployedStack("Old", "UPDATE_COMPLETE", {"FailureDlqUrl": "https://q"})
    record = _record(error="PaymentProviderUnavailable", state="ChargePayment", failed_at=FAILED_AT, attempt=2)

    assert policy_of(old_stack) is None
    assert waiting_for(record, None) == Waiting(None, 2, None, None)


def test_the_policy_is_read_from_the_stack_output_as_the_construct_writes_it() -> None:
    stack = DeployedStack("New", "UPDATE_COMPLETE", {"HealingPolicy": json.dumps(POLICY.to_environment())})
    broken = DeployedStack("New", "UPDATE_COMPLETE", {"HealingPolicy": '{"HEALING_MAX_ATTEMPTS": "3"}'})

    assert policy_of(stack) == POLICY
    with pytest.raises(OutputsMissing, match="HealingPolicy"):
        policy_of(broken)


def test_metric_names_and_dimension_are_the_ones_the_healing_functions_publish() -> None:
    from fire_and_forget.construct.healing import HEALING_SERVICE_SUFFIX

    assert (healing_status.RECONCILED, healing_status.AUTO_REDRIVEN) == (telemetry.RECONCILED, telemetry.AUTO_REDRIVEN)
    assert healing_status.HEALING_SERVICE_SUFFIX == HEALING_SERVICE_SUFFIX
