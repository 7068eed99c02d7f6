"""Every workflow path, run for real: the synthesized template on moto with the real handlers.

Each test asserts where the message ended, which states ran in which order, the retries and their intervals,
what the failure DLQ holds, and what was announced.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from demos.orders.samples import (
    DECLINED_TOKEN,
    OUT_OF_STOCK_SKU,
    UNSERVED_COUNTRY,
    OrderKind,
    make_order,
    seed_inventory,
)
from fire_and_forget.rehearsal.accounting import Place, account, advance_past_retries
from fire_and_forget.rehearsal.faults import Fault, FaultKind
from fire_and_forget.rehearsal.rehearsal import Execution, Rehearsal

THROTTLE_ATTEMPTS = 10  # ff:retry throttleMaxAttempts in cdk.json: the throttle retrier's retries
TRANSIENT_ATTEMPTS = 4  # ff:retry maxAttempts: the transient-error retrier's, a step's
COMPENSATION_TRANSIENT_ATTEMPTS = 6  # ff:retry compensationMaxAttempts
HAPPY = ["ReserveInventory", "ChargePayment", "ArrangeShipping"]
# A failure that needs a person is recorded and announced; one the automatic redrive will retry is only recorded.
TAIL = ["ClaimFailure", "HandleFailure", "AnnounceUnlessRetried", "FormatFailureAlert", "NotifyFailure",
        "FailureRecorded"]
TAIL_WAITING = ["ClaimFailure", "HandleFailure", "AnnounceUnlessRetried", "FailureRecordedForRetry"]


def order(aws: Rehearsal, kind: OrderKind = OrderKind.VALID, number: int = 1) -> tuple[str, dict[str, Any] | str]:
    sample = make_order(kind, number, random.Random(number))
    message_id = aws.send(sample.body)
    return message_id, (json.loads(sample.body) if kind is not OrderKind.MALFORMED else sample.body)


def only(executions: list[Execution]) -> Execution:
    assert len(executions) == 1, [e.states for e in executions]
    return executions[0]


def failure_record(aws: Rehearsal) -> dict[str, Any]:
    (message,) = aws.messages("FailureDlqUrl")
    record: dict[str, Any] = json.loads(message["Body"])
    return record


def alert_text(notification: tuple[str | None, str]) -> str:
    """The e-mail text of an announcement (published with MessageStructure json, the same by the tail and the
    Reconciler)."""
    text: str = json.loads(notification[1])["email"]
    return text


def attribute(record: dict[str, Any], name: str) -> str | None:
    value = record.get("messageAttributes", {}).get(name)
    return value.get("stringValue") if isinstance(value, dict) else None


def stock(aws: Rehearsal, sku: str) -> int:
    return next(int(item["available"]) for item in aws.items("InventoryTableName") if item["sku"] == sku)


def test_happy_path_enters_three_states_and_does_all_the_work(aws: Rehearsal) -> None:
    message_id, body = order(aws)
    assert isinstance(body, dict)
    before = {item["sku"]: stock(aws, item["sku"]) for item in body["items"]}

    execution = only(aws.run())

    assert (execution.status, execution.states, execution.transitions) == ("SUCCEEDED", HAPPY, 3)
    for item in body["items"]:
        assert stock(aws, item["sku"]) == before[item["sku"]] - item["quantity"]
    (charge,) = [p for p in aws.items("PaymentsTableName") if p["pk"] == f"ORDER#{body['orderId']}"]
    assert charge["status"] == "CHARGED"
    assert [s["orderId"] for s in aws.items("ShipmentsTableName")] == [body["orderId"]]
    assert aws.notifications() == []
    assert aws.messages("FailureDlqUrl") == [] and aws.messages("SourceQueueUrl") == []
    assert aws.clock.for_execution(execution.arn) == []
    assert account(aws, [message_id]).fates[message_id].place is Place.SUCCEEDED


def test_transient_failure_is_retried_with_capped_jittered_backoff_then_succeeds(aws: Rehearsal) -> None:
    aws.faults.add(Fault("ChargePayment", FaultKind.SERVICE_ERROR, times=3))
    order(aws)

    execution = only(aws.run())

    assert (execution.status, execution.states) == ("SUCCEEDED", HAPPY)
    waits = aws.clock.for_execution(execution.arn)
    assert [w.state for w in waits] == ["ChargePayment"] * 3
    for attempt, wait in enumerate(waits):
        # FULL jitter: a random wait between 0 and the exponential interval (2 s x 2^n), capped at 30 s.
        assert 0 <= wait.seconds <= min(30, 2 * 2**attempt)
        # The rehearsal keeps the interval the draw was made under, and prices a wait at the draw's mean.
        assert (wait.ceiling, wait.expected_seconds) == (min(30, 2 * 2**attempt), min(30, 2 * 2**attempt) / 2)


@pytest.mark.parametrize("throttles", [TRANSIENT_ATTEMPTS + 1, THROTTLE_ATTEMPTS])
def test_a_step_throttled_longer_than_other_transient_errors_are_retried_still_succeeds(aws: Rehearsal,
                                                                                      throttles: int) -> None:
    # Lambda's 429 says the function did not run: the throttle's own retrier waits it out past the transient
    # retrier's four retries (statemachines/orders: the construct adds it in FIRE_AND_FORGET).
    aws.faults.add(Fault("ChargePayment", FaultKind.THROTTLE, times=throttles))
    order(aws)
    execution = only(aws.run())
    assert execution.states == HAPPY and execution.status == "SUCCEEDED"
    assert len([w for w in aws.clock.for_execution(execution.arn) if w.state == "ChargePayment"]) == throttles


def test_a_compensation_throttled_past_its_transient_retries_still_runs(aws: Rehearsal) -> None:
    # ArrangeShipping refuses the order (a business error); RefundPayment is throttled more times than the
    # compensations' transient retrier (6) allows, and still refunds: no manual repair, nothing charged.
    aws.faults.add(Fault("RefundPayment", FaultKind.THROTTLE, times=COMPENSATION_TRANSIENT_ATTEMPTS + 2))
    order(aws, OrderKind.UNSERVED)
    execution = only(aws.run())
    assert "RefundPayment" in execution.states and "CompensationFailed" not in execution.states
    assert failure_record(aws)["manualRepair"] is False
    assert all(p["status"] == "REFUNDED" for p in aws.items("PaymentsTableName") if p["pk"].startswith("ORDER#"))


@pytest.mark.parametrize(
    ("step", "compensations"),
    [
        ("ReserveInventory", ["ReleaseInventory"]),
        ("ChargePayment", ["RefundPayment", "ReleaseInventory"]),
        ("ArrangeShipping", ["CancelShipment", "RefundPayment", "ReleaseInventory"]),
    ],
)
def test_retries_exhausted_run_the_compensations_in_reverse(aws: Rehearsal, step: str,
                                                            compensations: list[str]) -> None:
    aws.faults.add(Fault(step, FaultKind.THROTTLE))
    message_id, body = order(aws)
    assert isinstance(body, dict)

    execution = only(aws.run())

    # Throttling is transient: compensated and recorded, not announced, the record waits for the Redriver.
    done = HAPPY[: HAPPY.index(step) + 1]
    assert execution.states == [*done, f"{step}Failed", *compensations, *TAIL_WAITING]
    assert execution.error == "FailureRecorded"
    # Throttles have their own retrier: ff:retry throttleMaxAttempts (cdk.json), after which the step gives up.
    assert len([w for w in aws.clock.for_execution(execution.arn) if w.state == step]) == THROTTLE_ATTEMPTS
    record = failure_record(aws)
    assert record["failure"]["state"] == step
    assert record["failure"]["error"] == "Lambda.TooManyRequestsException"
    assert record["record"]["messageId"] == message_id
    assert json.loads(record["record"]["body"]) == body
    assert record["manualRepair"] is False
    assert record["executionArn"] == execution.arn
    assert set(record["compensation"]) == {"required", *[c[0].lower() + c[1:] for c in compensations]}
    for sku in {item["sku"] for item in body["items"]}:
        assert stock(aws, sku) == 10_000  # everything reserved was given back
    assert aws.items("ShipmentsTableName") == []
    assert all(p["status"] == "REFUNDED" for p in aws.items("PaymentsTableName") if p["pk"].startswith("ORDER#"))
    assert aws.notifications() == []
    fate = account(aws, [message_id]).fates[message_id]
    assert (fate.place, fate.announcements, fate.overdue) == (Place.WAITING, 0, False)

    # Past the cool-offs the Redriver sends it back three times; the fourth failure is recorded and announced once.
    advance_past_retries(aws)

    executions = aws.executions()
    assert len(executions) == 4
    last = executions[-1]
    assert last.states == [*done, f"{step}Failed", *compensations, *TAIL]
    record = failure_record(aws)
    assert record["executionArn"] == last.arn
    assert attribute(record["record"], "ffRedriveAttempt") == "3"
    assert attribute(record["record"], "ffFirstMessageId") == message_id
    assert json.loads(record["record"]["body"]) == body
    (announcement,) = aws.notifications()
    assert last.arn in announcement[1] and "Error: Lambda.TooManyRequestsException" in alert_text(announcement)
    for sku in {item["sku"] for item in body["items"]}:
        assert stock(aws, sku) == 10_000
    ledger = account(aws, [message_id])
    assert ledger.balanced
    fate = ledger.fates[message_id]
    assert (fate.place, fate.announcements, fate.redrives, len(fate.copies)) == (Place.FAILURE_DLQ, 1, 3, 3)


@pytest.mark.parametrize(
    ("kind", "step", "error", "after"),
    [
        (OrderKind.MALFORMED, "ReserveInventory", "InvalidOrder", ["ReserveInventoryRejected"]),
        (OrderKind.OUT_OF_STOCK, "ReserveInventory", "OutOfStock", ["ReserveInventoryRejected"]),
        (OrderKind.DECLINED, "ChargePayment", "PaymentDeclined",
         ["ChargePaymentFailed", "RefundPayment", "ReleaseInventory"]),
        (OrderKind.UNSERVED, "ArrangeShipping", "ShippingUnavailable",
         ["ArrangeShippingFailed", "CancelShipment", "RefundPayment", "ReleaseInventory"]),
    ],
)
def test_business_errors_are_not_retried(aws: Rehearsal, kind: OrderKind, step: str, error: str,
                                         after: list[str]) -> None:
    message_id, _ = order(aws, kind)

    execution = only(aws.run())

    assert execution.states == [*HAPPY[: HAPPY.index(step) + 1], *after, *TAIL]
    assert aws.clock.for_execution(execution.arn) == []
    record = failure_record(aws)
    assert (record["failure"]["state"], record["failure"]["error"]) == (step, error)
    assert record["record"]["messageId"] == message_id
    assert len(aws.notifications()) == 1
    fate = account(aws, [message_id]).fates[message_id]
    assert (fate.place, fate.announcements, fate.error) == (Place.FAILURE_DLQ, 1, error)


def test_each_ending_of_the_tail_says_whether_the_failure_was_announced(aws: Rehearsal) -> None:
    """Over the deployed definition: the announced failure ends saying it was announced, the one left to the
    automatic redrive ends saying it was not, both with the error name the rule and the Reconciler rely on."""
    aws.faults.add(Fault("ChargePayment", FaultKind.THROTTLE, key=make_order(
        OrderKind.VALID, 2, random.Random(2)).order_id))
    order(aws, OrderKind.DECLINED, 1)
    order(aws, OrderKind.VALID, 2)

    executions = aws.run()

    ends = {e.states[-1]: e for e in executions}
    assert set(ends) == {"FailureRecorded", "FailureRecordedForRetry"}
    announced, waiting = ends["FailureRecorded"], ends["FailureRecordedForRetry"]
    assert announced.states[-len(TAIL):] == TAIL and waiting.states[-len(TAIL_WAITING):] == TAIL_WAITING
    assert announced.error == waiting.error == "FailureRecorded"
    assert announced.cause == "The workflow failed; the message is in the failure DLQ and was announced on the " \
                              "alerts topic."
    assert waiting.cause is not None and "was not announced" in waiting.cause and "Redriver" in waiting.cause
    assert [announced.arn in text for _subject, text in aws.notifications()] == [True]


def test_bad_input_names_the_problem_and_keeps_the_body(aws: Rehearsal) -> None:
    aws.send("not json at all")

    only(aws.run())

    record = failure_record(aws)
    assert record["failure"]["error"] == "InvalidOrder"
    assert "not valid JSON" in record["failure"]["cause"] or "JSON" in record["failure"]["cause"]
    assert record["record"]["body"] == "not json at all"
    assert record["compensation"] == {"required": False}


def test_a_failing_compensation_marks_the_order_for_manual_repair(aws: Rehearsal) -> None:
    aws.faults.add(Fault("RefundPayment", FaultKind.CRASH))
    message_id, _ = order(aws, OrderKind.UNSERVED)

    execution = only(aws.run())

    assert execution.states == [*HAPPY, "ArrangeShippingFailed", "CancelShipment", "RefundPayment",
                                "CompensationFailed", *TAIL]
    record = failure_record(aws)
    assert record["manualRepair"] is True
    assert record["compensation"]["refundPayment"]["Error"] == "Runtime.ExitError"
    assert "releaseInventory" not in record["compensation"]
    (announcement,) = aws.notifications()
    assert "Manual repair needed: true" in alert_text(announcement)
    assert account(aws, [message_id]).fates[message_id].manual_repair is True


def test_handle_failure_retries_the_failure_dlq(aws: Rehearsal) -> None:
    aws.faults.add(Fault("FailureDlq", FaultKind.UNAVAILABLE, times=2))
    message_id, _ = order(aws, OrderKind.DECLINED)

    execution = only(aws.run())

    assert execution.states[-len(TAIL):] == TAIL
    assert [w.state for w in aws.clock.for_execution(execution.arn)] == ["HandleFailure", "HandleFailure"]
    assert failure_record(aws)["record"]["messageId"] == message_id
    assert len(aws.notifications()) == 1


def test_failure_dlq_refusing_everything_fails_in_handle_failure_and_the_reconciler_dlq_alarm_announces(
    aws: Rehearsal,
) -> None:
    aws.faults.add(Fault("FailureDlq", FaultKind.UNAVAILABLE))
    message_id, _ = order(aws, OrderKind.DECLINED)

    execution = only(aws.run())
    # Each failed reconcile leaves the event for the queue's visibility timeout; after maxReceiveCount receives (5)
    # SQS moves it to the ReconcilerDlq on the next one.
    aws.advance(6 * aws.visibility_timeout("FailureEventsQueueUrl") + 1)

    assert execution.status == "FAILED" and execution.states[-1] == "HandleFailure"  # RedriveExecution resumes here
    assert execution.error not in (None, "FailureRecorded")
    assert execution.input[0]["messageId"] == message_id
    # The Reconciler cannot record it either, so it announces nothing (it announces only what it recorded); after
    # the queue's maxReceiveCount the status-change event is in the ReconcilerDlq, whose alarm announces it.
    assert aws.notifications() == []
    assert aws.messages("FailureEventsQueueUrl") == []
    (event,) = aws.messages("ReconcilerDlqUrl")
    assert json.loads(event["Body"])["detail"]["executionArn"] == execution.arn
    fate = account(aws, [message_id]).fates[message_id]
    assert (fate.place, fate.announcements) == (Place.EXECUTION, 1)


def test_sns_failing_is_announced_by_the_reconciler_instead(aws: Rehearsal) -> None:
    aws.faults.add(Fault("AlertsTopic", FaultKind.UNAVAILABLE, times=6))  # NotifyFailure's 1 + 5 retries
    message_id, _ = order(aws, OrderKind.DECLINED)

    execution = only(aws.run())

    assert execution.status == "FAILED" and execution.states[-1] == "NotifyFailure"  # RedriveExecution resumes here
    fate = account(aws, [message_id]).fates[message_id]
    assert (fate.place, fate.announcements) == (Place.FAILURE_DLQ, 1)
    # HandleFailure had recorded it: the Reconciler writes no second record and announces the tail's failure.
    assert failure_record(aws)["executionArn"] == execution.arn
    (announcement,) = aws.notifications()
    assert execution.arn in announcement[1] and "Error: PaymentDeclined" in alert_text(announcement)


def test_an_aborted_execution_is_compensated_recorded_and_announced_by_the_reconciler(aws: Rehearsal) -> None:
    aws.faults.add(Fault("ChargePayment", FaultKind.HANG))
    message_id, body = order(aws)
    assert isinstance(body, dict)
    (running,) = aws.wait_for_hang()

    aws.abort(running)
    aws.faults.release()
    execution = only(aws.run())

    assert execution.status == "ABORTED"
    record = failure_record(aws)
    assert record["executionArn"] == execution.arn and record["record"]["messageId"] == message_id
    assert record["reconciliation"]["status"] == "ABORTED"
    assert record["reconciliation"]["compensated"] == ["RefundPayment", "ReleaseInventory"]  # last step first
    for item in body["items"]:
        assert stock(aws, item["sku"]) == 10_000
    (announcement,) = aws.notifications()
    assert "Execution status: ABORTED" in alert_text(announcement) and execution.arn in announcement[1]
    assert aws.messages("FailureEventsQueueUrl") == []  # the Reconciler consumed the status-change event
    fate = account(aws, [message_id]).fates[message_id]
    assert (fate.place, fate.announcements) == (Place.FAILURE_DLQ, 1)
    advance_past_retries(aws)  # a person stopped it: never redriven by itself
    assert len(aws.executions()) == 1 and len(aws.notifications()) == 1


def test_a_pipe_that_cannot_start_the_execution_ends_in_the_source_dlq(aws: Rehearsal) -> None:
    aws.faults.add(Fault("StartExecution", FaultKind.START_REFUSED))
    message_id, _ = order(aws)

    assert aws.run() == []

    (message,) = aws.messages("SourceDlqUrl")
    assert message["MessageId"] == message_id
    assert int(message["Attributes"]["ApproximateReceiveCount"]) >= 5
    assert aws.pipe.stats.start_failures == 5  # maxReceiveCount receives, then SQS's redrive takes over
    # The Redriver will send it back: it waits, and nobody is told yet.
    fate = account(aws, [message_id]).fates[message_id]
    assert (fate.place, fate.announcements) == (Place.WAITING, 0)

    # Each Redriver run sends it back as a copy, three times in all (HealingPolicy.max_attempts); each copy is
    # refused five times too, and the last stays in the source DLQ for a person (the SourceDlqNotEmpty alarm).
    advance_past_retries(aws)

    (left,) = aws.messages("SourceDlqUrl")
    assert left["MessageAttributes"]["ffRedriveAttempt"]["StringValue"] == "3"
    assert left["MessageAttributes"]["ffFirstMessageId"]["StringValue"] == message_id
    assert aws.pipe.stats.start_failures == 5 * 4
    fate = account(aws, [message_id]).fates[message_id]
    assert (fate.place, fate.announcements, fate.redrives) == (Place.SOURCE_DLQ, 1, 3)


def test_a_duplicate_delivery_is_processed_once(aws: Rehearsal) -> None:
    aws.pipe.duplicate_next = 1
    message_id, body = order(aws)
    assert isinstance(body, dict)

    executions = aws.run()

    assert sorted(e.states[-1] for e in executions) == ["ArrangeShipping", "DuplicateDeliveryIgnored"]
    assert all(e.status == "SUCCEEDED" for e in executions)
    for item in body["items"]:
        assert stock(aws, item["sku"]) == 10_000 - item["quantity"]
    assert len([p for p in aws.items("PaymentsTableName") if p["pk"].startswith("ORDER#")]) == 1
    assert account(aws, [message_id]).balanced


def test_failed_duplicate_is_announced_once(aws: Rehearsal) -> None:
    aws.pipe.duplicate_next = 1
    message_id, _ = order(aws, OrderKind.DECLINED)

    aws.run()

    ledger = account(aws, [message_id])
    assert ledger.balanced
    assert ledger.fates[message_id].announcements == 1


def test_constants_match_the_handlers_rules() -> None:
    # The sample orders rely on these; if a business rule changes, the scenarios above must change with it.
    from common.payments import DECLINED_TOKEN_PREFIX

    assert DECLINED_TOKEN.startswith(DECLINED_TOKEN_PREFIX)
    assert UNSERVED_COUNTRY not in ["JP", "US", "CA", "GB", "DE", "FR", "AU", "NZ", "SG"]
    assert OUT_OF_STOCK_SKU.startswith("SKU-")


def test_an_execution_that_times_out_is_compensated_then_redriven(cloud_assembly: Path) -> None:
    with Rehearsal.start(cloud_assembly, execution_timeout_seconds=1) as aws:
        seed_inventory(aws.dynamodb, aws.outputs["InventoryTableName"])
        aws.faults.add(Fault("ArrangeShipping", FaultKind.HANG, times=1))
        message_id, _ = order(aws)
        (held,) = aws.wait_for_hang()
        aws.advance(2)  # past the execution's 1-second timeout on the rehearsal's clock
        aws.release_held()  # the held invocation ends before its function's timeout
        aws.set_execution_timeout(None)
        # The Reconciler waits until the invocation has certainly ended: the event's redelivery reconciles it.
        aws.advance(aws.visibility_timeout("FailureEventsQueueUrl") + 1)

        (execution,) = [e for e in aws.executions() if e.message_id == message_id]

        assert execution.status == "TIMED_OUT"
        assert execution.states == HAPPY  # it was in ArrangeShipping when the clock ran out
        record = failure_record(aws)
        assert record["reconciliation"]["status"] == "TIMED_OUT"
        assert record["reconciliation"]["compensated"] == ["CancelShipment", "RefundPayment", "ReleaseInventory"]
        assert aws.notifications() == []  # a timeout is transient: recorded, not announced, waiting for a retry
        fate = account(aws, [message_id]).fates[message_id]
        assert (fate.place, fate.announcements, fate.manual_repair) == (Place.WAITING, 0, False)

        advance_past_retries(aws)

        copy = aws.executions()[-1]
        assert (copy.status, copy.states) == ("SUCCEEDED", HAPPY)
        assert attribute(copy.input[0], "ffFirstMessageId") == message_id
        assert aws.notifications() == [] and aws.messages("FailureDlqUrl") == []
        ledger = account(aws, [message_id])
        assert ledger.balanced and ledger.fates[message_id].place is Place.SUCCEEDED
