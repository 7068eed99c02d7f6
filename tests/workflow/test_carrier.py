"""A step done by someone else, hours later: the order saga's BookCarrier (.waitForTaskToken) on the rehearsal's clock,
with the carrier simulator (demos/orders/carrier.py) answering through the callback entry point's function URL.

Each carrier behaviour has one outcome: confirmed (the order ships, long after its SQS message was deleted), declined
or silent (compensated, recorded in the failure DLQ, announced once or left for the automatic redrive), answered twice
(the second is a no-op), answered too late (refused, nothing charged twice), and answers for nothing (refused, nothing
touched). The carrier's own log of what it sent and what came back is read apart from the workflow's history.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from demos.orders.carrier import Carrier, Plan, Reply
from demos.orders.samples import OrderKind, make_order, seed_inventory
from fire_and_forget.rehearsal.accounting import Place, account
from fire_and_forget.rehearsal.rehearsal import Execution, Rehearsal
from tests.support.alarms import alarms, evaluate

HOUR = 3600
BOOKED = ["ReserveInventory", "ChargePayment", "BookCarrier"]
SHIPPED = [*BOOKED, "ArrangeShipping"]
UNDONE = ["BookCarrierFailed", "RefundPayment", "ReleaseInventory"]
ANNOUNCED = ["ClaimFailure", "HandleFailure", "AnnounceUnlessRetried", "FormatFailureAlert", "NotifyFailure",
             "FailureRecorded"]
WAITING_FOR_RETRY = ["ClaimFailure", "HandleFailure", "AnnounceUnlessRetried", "FailureRecordedForRetry"]


@pytest.fixture
def aws(full_assembly: Path) -> Iterator[Rehearsal]:
    """The app with the carrier's confirmation, deployed into moto, inventory seeded."""
    with Rehearsal.start(full_assembly) as rehearsal:
        seed_inventory(rehearsal.dynamodb, rehearsal.outputs["InventoryTableName"])
        yield rehearsal


def send_order(aws: Rehearsal, number: int = 1) -> tuple[str, dict[str, Any]]:
    sample = make_order(OrderKind.VALID, number, random.Random(number))
    return aws.send(sample.body), json.loads(sample.body)


def only(executions: list[Execution]) -> Execution:
    assert len(executions) == 1, [e.states for e in executions]
    return executions[0]


def carrier_wait_ended(execution: Execution, event_type: str) -> float:
    """When BookCarrier's wait ended with `event_type` (TaskSucceeded, TaskFailed, TaskTimedOut), in seconds after
    the execution started."""
    events = execution.history
    entered = next(i for i, e in enumerate(events) if e["type"] == "TaskStateEntered"
                   and e["stateEnteredEventDetails"]["name"] == "BookCarrier")
    moment: datetime = next(e["timestamp"] for e in events[entered:] if e["type"] == event_type)
    return (moment - events[0]["timestamp"]).total_seconds()


def in_start_order(aws: Rehearsal) -> list[Execution]:
    return sorted(aws.executions(), key=lambda e: e.history[0]["timestamp"])


def duration(execution: Execution) -> float:
    return (execution.history[-1]["timestamp"] - execution.history[0]["timestamp"]).total_seconds()


def payments(aws: Rehearsal, order_id: str) -> list[str]:
    return [p["status"] for p in aws.items("PaymentsTableName") if p["pk"] == f"ORDER#{order_id}"]


def stock(aws: Rehearsal, sku: str) -> int:
    return next(int(item["available"]) for item in aws.items("InventoryTableName") if item["sku"] == sku)


def wait_row(aws: Rehearsal, key: str) -> dict[str, Any]:
    (row,) = [r for r in aws.items("CarrierAnswersWaitsTableName") if r["key"] == key]
    return row


def failure_record(aws: Rehearsal) -> dict[str, Any]:
    (message,) = aws.messages("FailureDlqUrl")
    record: dict[str, Any] = json.loads(message["Body"])
    return record


def test_an_order_the_carrier_confirms_hours_later_ships_long_after_its_message_was_deleted(aws: Rehearsal) -> None:
    message_id, body = send_order(aws)

    waiting = only(aws.run())
    # The pipe started the execution and SQS deleted the message: nothing in the source queue protects it now.
    assert (waiting.status, waiting.states) == ("RUNNING", BOOKED)
    attributes = aws.sqs.get_queue_attributes(QueueUrl=aws.outputs["SourceQueueUrl"], AttributeNames=["All"])
    assert attributes["Attributes"]["ApproximateNumberOfMessages"] == "0"
    assert attributes["Attributes"]["ApproximateNumberOfMessagesNotVisible"] == "0"

    carrier = Carrier(aws)  # confirms after 5 hours, with a heartbeat at 4
    carrier.run_for(8)

    execution = only(aws.executions())
    assert (execution.status, execution.states, execution.transitions) == ("SUCCEEDED", SHIPPED, 4)
    took = duration(execution)
    assert took >= 5 * HOUR
    assert took > 900  # past Lambda's 15 minutes
    assert took > aws.visibility_timeout("SourceQueueUrl")  # past the visibility timeout that hid the message
    assert carrier.replies(body["orderId"]) == [("heartbeat", 200), ("success", 200)]
    assert [request["key"] for _, request in carrier.requests] == [body["orderId"]]
    assert 5 * HOUR <= carrier_wait_ended(execution, "TaskSucceeded") < 5 * HOUR + 60
    assert execution.output["carrierBooking"] == {"carrier": "booked", "pickupSlot": f"slot-{body['orderId']}"}
    assert payments(aws, body["orderId"]) == ["CHARGED"]
    assert [s["orderId"] for s in aws.items("ShipmentsTableName")] == [body["orderId"]]
    assert (wait_row(aws, body["orderId"])["status"], wait_row(aws, body["orderId"])["delivered"]) == ("ANSWERED",
                                                                                                     True)
    fate = account(aws, [message_id]).fates[message_id]
    assert (fate.place, fate.announcements) == (Place.SUCCEEDED, 0)


def test_a_carrier_that_declines_gets_the_order_undone_recorded_and_announced_once(aws: Rehearsal) -> None:
    message_id, body = send_order(aws)
    aws.run()
    carrier = Carrier(aws, plans={body["orderId"]: Plan(Reply.DECLINE, after_hours=3)})

    carrier.run_for(4)

    execution = only(aws.executions())
    assert execution.status == "FAILED"
    assert execution.states == [*BOOKED, *UNDONE, *ANNOUNCED]
    record = failure_record(aws)
    assert (record["failure"]["state"], record["failure"]["error"]) == ("BookCarrier", "CarrierDeclined")
    assert record["failure"]["cause"] == "no pickup slot in the next 48 hours"
    assert payments(aws, body["orderId"]) == ["REFUNDED"]
    for item in body["items"]:
        assert stock(aws, item["sku"]) == 10_000
    assert aws.items("ShipmentsTableName") == []
    assert carrier.replies(body["orderId"]) == [("failure", 200)]
    fate = account(aws, [message_id]).fates[message_id]
    assert (fate.place, fate.announcements, fate.error) == (Place.FAILURE_DLQ, 1, "CarrierDeclined")


def test_a_carrier_that_goes_silent_is_asked_again_three_times_then_the_order_is_undone_and_announced_once(
        aws: Rehearsal) -> None:
    message_id, body = send_order(aws)
    aws.run()
    carrier = Carrier(aws, plans={body["orderId"]: Plan(Reply.SILENT, heartbeat_hours=0)})

    carrier.run_for(30)

    executions = in_start_order(aws)
    # HeartbeatSeconds is 6 hours: no answer and no heartbeat for that long, and the saga stops waiting. A missed
    # heartbeat is a timeout for the healing policy: recorded, redriven after its cool-off (the carrier is asked
    # again), and announced once the automatic attempts are spent.
    assert [e.states for e in executions] == [[*BOOKED, *UNDONE, *WAITING_FOR_RETRY]] * 3 + [
        [*BOOKED, *UNDONE, *ANNOUNCED]]
    for execution in executions:
        assert 6 * HOUR <= carrier_wait_ended(execution, "TaskTimedOut") < 6 * HOUR + 60
    requests = [request["request"] for _, request in carrier.requests]
    assert len(requests) == len(set(requests)) == 4  # one request per hand-over, each with its own id
    assert failure_record(aws)["failure"]["error"] in ("States.Timeout", "States.HeartbeatTimeout")
    assert payments(aws, body["orderId"]) == ["REFUNDED"]
    assert aws.items("ShipmentsTableName") == []
    assert carrier.replies(body["orderId"]) == []
    fate = account(aws, [message_id]).fates[message_id]
    assert (fate.place, fate.announcements) == (Place.FAILURE_DLQ, 1)

    # The carrier wakes up and confirms the last request: the wait is over, and the answer is refused.
    late = carrier.answer(carrier.requests[-1][1], {"answer": "success", "output": {"carrier": "booked"}})

    assert (late.status, late.verdict) == (410, "closed")
    assert wait_row(aws, body["orderId"])["status"] == "CLOSED"
    assert len(aws.executions()) == 4
    assert aws.items("ShipmentsTableName") == []


def test_a_carrier_that_keeps_beating_but_never_answers_is_timed_out_at_48_hours_and_tried_again(
        aws: Rehearsal) -> None:
    message_id, body = send_order(aws)
    aws.run()
    carrier = Carrier(aws, plans={body["orderId"]: Plan(Reply.SILENT, heartbeat_hours=4, after_hours=47)})

    carrier.run_for(48 + 1 / 60)

    first = only(aws.executions())
    assert first.states == [*BOOKED, *UNDONE, *WAITING_FOR_RETRY]
    assert failure_record(aws)["failure"]["error"] == "States.Timeout"
    assert 48 * HOUR <= carrier_wait_ended(first, "TaskTimedOut") < 48 * HOUR + 60
    assert carrier.replies(body["orderId"]) == [("heartbeat", 200)] * 11  # at 4, 8, ... 44 hours
    assert payments(aws, body["orderId"]) == ["REFUNDED"]
    # A task timeout is transient for the healing policy: recorded, not announced, and redriven after its cool-off,
    # which hands the order to the carrier again.
    fate = account(aws, [message_id]).fates[message_id]
    assert (fate.place, fate.announcements) == (Place.WAITING, 0)

    carrier.run_for(1)

    second = [e for e in aws.executions() if e.arn != first.arn]
    assert [(e.status, e.states) for e in second] == [("RUNNING", BOOKED)]
    assert [request["key"] for _, request in carrier.requests] == [body["orderId"]] * 2
    assert wait_row(aws, body["orderId"])["executionArn"] == second[0].arn


def test_a_second_confirmation_of_the_same_booking_changes_nothing(aws: Rehearsal) -> None:
    message_id, body = send_order(aws)
    aws.run()
    carrier = Carrier(aws, plans={body["orderId"]: Plan(Reply.CONFIRM, after_hours=5, repeat_after_hours=1)})

    carrier.run_for(8)

    assert only(aws.executions()).states == SHIPPED
    assert carrier.replies(body["orderId"]) == [("heartbeat", 200), ("success", 200), ("success", 200)]
    assert [e.verdict for e in carrier.log] == ["delivered", "delivered", "repeated"]
    assert payments(aws, body["orderId"]) == ["CHARGED"]
    assert len(aws.items("ShipmentsTableName")) == 1
    assert account(aws, [message_id]).fates[message_id].place is Place.SUCCEEDED


def test_a_confirmation_whose_delivery_went_unrecorded_is_recognised_in_the_history_when_sent_again(
        aws: Rehearsal) -> None:
    message_id, body = send_order(aws)
    aws.run()
    carrier = Carrier(aws)
    carrier.run_for(6)
    assert only(aws.executions()).status == "SUCCEEDED"
    # Given the delivery delivered but not recorded (the recording's write failed after SendTaskSuccess went through)
    aws.dynamodb.update_item(TableName=aws.outputs["CarrierAnswersWaitsTableName"],
                             Key={"key": {"S": body["orderId"]}}, UpdateExpression="SET delivered = :false",
                             ExpressionAttributeValues={":false": {"BOOL": False}})
    confirmation = {"answer": "success", "output": {"carrier": "booked", "pickupSlot": f"slot-{body['orderId']}"}}

    # When the carrier, told 503, sends the same confirmation again: Step Functions says the token is closed
    again = carrier.answer(carrier.requests[0][1], confirmation)

    # Then the execution's history shows BookCarrier ended with this very answer: delivered, not refused
    assert (again.status, again.verdict) == (200, "delivered")
    assert wait_row(aws, body["orderId"])["delivered"] is True
    aws.metrics.publish()
    assert evaluate(aws, alarms(aws)["CarrierAnswersAnswersRefused"], at=aws.now()).state == "OK"
    assert account(aws, [message_id]).fates[message_id].place is Place.SUCCEEDED


def test_a_different_answer_after_the_first_is_refused_as_a_conflict(aws: Rehearsal) -> None:
    _, body = send_order(aws)
    aws.run()
    carrier = Carrier(aws)
    carrier.run_for(6)

    exchange = carrier.answer(carrier.requests[0][1], {"answer": "failure", "error": "CarrierDeclined"})

    assert (exchange.status, exchange.verdict) == (409, "conflict")
    assert only(aws.executions()).status == "SUCCEEDED"
    assert payments(aws, body["orderId"]) == ["CHARGED"]


def test_a_confirmation_of_a_request_the_saga_gave_up_on_never_reaches_the_execution_that_asked_again(
        aws: Rehearsal) -> None:
    message_id, body = send_order(aws)
    aws.run()
    # No heartbeat: the saga gives up at 6 hours, and the order is redriven and handed over again after its
    # cool-off; a carrier that lost the new request answers the first one at 7.
    carrier = Carrier(aws, plans={body["orderId"]: Plan(Reply.SILENT, heartbeat_hours=0)})
    carrier.run_for(7)
    first_request, second_request = (request for _, request in carrier.requests)

    late = carrier.answer(first_request, {"answer": "success", "output": {"carrier": "booked"}})

    assert (late.status, late.verdict) == (410, "superseded")
    first, second = in_start_order(aws)
    assert first.states == [*BOOKED, *UNDONE, *WAITING_FOR_RETRY]
    assert (second.status, second.states) == ("RUNNING", BOOKED)  # still waiting for its own answer
    row = wait_row(aws, body["orderId"])
    assert (row["status"], row["request"], row["executionArn"]) == ("WAITING", second_request["request"], second.arn)
    assert aws.items("ShipmentsTableName") == []
    # The refusal is alarmed: the carrier believes it has a booking that no longer exists.
    aws.metrics.publish()
    assert evaluate(aws, alarms(aws)["CarrierAnswersAnswersRefused"], at=aws.now()).state == "ALARM"

    # Its answer to the request that waits now goes through, and the order ships once, charged once.
    answered = carrier.answer(second_request, {"answer": "success", "output": {"carrier": "booked"}})
    aws.run_until_quiet()

    assert (answered.status, answered.verdict) == (200, "delivered")
    assert aws.execution(second.arn).states == SHIPPED
    assert payments(aws, body["orderId"]) == ["CHARGED"]
    assert len(aws.items("ShipmentsTableName")) == 1
    assert account(aws, [message_id]).fates[message_id].place is Place.SUCCEEDED


@pytest.mark.parametrize(("body", "status", "verdict"), [
    ({"key": "ord-nobody", "request": "0" * 32, "answer": "success", "output": {}}, 404, "unknown"),
    ({"key": "ord-000001", "request": "0" * 32, "answer": "success", "output": {}}, 410, "superseded"),
    ({"key": "ord-000001", "request": "0" * 32, "answer": "failure", "error": "TransientError"}, 422, "invalid"),
    ({"key": "ord-000001", "request": "0" * 32, "answer": "failure"}, 422, None),
    ({"key": "ord-000001", "request": "0" * 32, "answer": "heartbeat", "output": {"x": 1}}, 422, None),
    ({"key": "ord-000001", "answer": "success", "output": {}}, 422, None),
    ({"request": "0" * 32, "answer": "success"}, 422, None),
    ({"key": "ord-000001", "request": "0" * 32, "answer": "maybe"}, 422, None),
])
def test_an_answer_for_nothing_or_out_of_its_rules_is_refused_and_touches_no_wait(
        aws: Rehearsal, body: dict[str, Any], status: int, verdict: str | None) -> None:
    _, order = send_order(aws)
    aws.run()
    before = wait_row(aws, order["orderId"])

    reply = aws.call_function_url("CarrierAnswersEntryPoint", body, caller_arn=Carrier(aws).caller_arn,
                                  path="/answers")

    assert reply.status == status
    if verdict is not None:
        assert reply.body["verdict"] == verdict
    assert wait_row(aws, order["orderId"]) == before
    assert only(aws.executions()).status == "RUNNING"


def test_a_principal_the_deployment_does_not_name_is_refused_before_the_function_runs(aws: Rehearsal) -> None:
    _, order = send_order(aws)
    aws.run()
    invocations = len(aws.runtime.invocations)

    reply = aws.call_function_url("CarrierAnswersEntryPoint", {"key": order["orderId"], "answer": "success"},
                                  caller_arn="arn:aws:iam::111122223333:role/impostor", path="/answers")

    assert reply.status == 403
    assert len(aws.runtime.invocations) == invocations
    assert wait_row(aws, order["orderId"])["status"] == "WAITING"
