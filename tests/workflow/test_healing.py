"""Self-healing end to end: the synthesized order stack on moto, the real handlers, the Reconciler and the Redriver
driven by the rehearsal's event source mapping and its virtual clock (Rehearsal.advance fires the schedules).

Each test checks the books independently of the healing code: the inventory, payments and shipments tables read
directly, the failure DLQ's records and the alerts topic's messages counted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from demos.orders.samples import OrderKind, make_order, seed_inventory
from fire_and_forget.rehearsal.faults import Fault, FaultKind
from fire_and_forget.rehearsal.rehearsal import Rehearsal

HOUR = 3600
CHARGE_RETRIES = 5  # the transient retrier's attempts (4) plus the first call: more faults than that exhaust it
STEPS = ("ReserveInventory", "ChargePayment", "ArrangeShipping")
UNDO = {"ReserveInventory": "ReleaseInventory", "ChargePayment": "RefundPayment", "ArrangeShipping": "CancelShipment"}


def _order(aws: Rehearsal, number: int = 1) -> tuple[str, dict[str, Any]]:
    import random

    sample = make_order(OrderKind.VALID, number, random.Random(number))
    return aws.send(sample.body), json.loads(sample.body)


def _records(aws: Rehearsal) -> list[dict[str, Any]]:
    return [json.loads(m["Body"]) for m in aws.messages("FailureDlqUrl")]


def _books(aws: Rehearsal, order_id: str) -> tuple[list[str], list[str]]:
    """(payment statuses, shipment statuses) of one order, read straight from the tables."""
    payments = [str(p["status"]) for p in aws.items("PaymentsTableName") if p["pk"] == f"ORDER#{order_id}"]
    shipments = [str(s.get("status")) for s in aws.items("ShipmentsTableName") if s["orderId"] == order_id]
    return payments, shipments


@pytest.mark.parametrize("step", STEPS)
def test_an_outage_longer_than_the_retries_heals_by_itself_unannounced(cloud_assembly: Path, step: str) -> None:
    with Rehearsal.start(cloud_assembly) as aws:
        seed_inventory(aws.dynamodb, aws.outputs["InventoryTableName"])
        aws.faults.add(Fault(step, FaultKind.SERVICE_ERROR, times=CHARGE_RETRIES + 2))
        _message_id, body = _order(aws)
        (first,) = aws.run()
        assert first.status == "FAILED" and "AnnounceUnlessRetried" in first.states
        (record,) = _records(aws)
        assert record["failure"]["state"] == step and record["manualRepair"] is False
        assert aws.notifications() == []  # waiting for a retry: not announced
        assert _books(aws, body["orderId"])[0] in ([], ["REFUNDED"])  # nothing charged survives the compensation

        aws.advance(HOUR)  # past the first cool-off (at most 5 minutes); the outage is over

        assert _records(aws) == []
        succeeded = [e for e in aws.executions() if e.status == "SUCCEEDED"]
        assert len(succeeded) == 1
        attributes = succeeded[0].input[0]["messageAttributes"]
        assert attributes["ffRedriveAttempt"]["stringValue"] == "1"
        assert attributes["ffFirstMessageId"]["stringValue"] == first.message_id
        assert _books(aws, body["orderId"]) == (["CHARGED"], [_books(aws, body["orderId"])[1][0]])
        assert aws.notifications() == []  # healed: never announced


def test_a_failure_that_outlasts_every_automatic_attempt_is_announced_once(cloud_assembly: Path) -> None:
    with Rehearsal.start(cloud_assembly) as aws:
        seed_inventory(aws.dynamodb, aws.outputs["InventoryTableName"])
        aws.faults.add(Fault("ChargePayment", FaultKind.SERVICE_ERROR, times=1000))
        _order(aws)
        aws.run()
        aws.advance(4 * HOUR)  # three automatic attempts, each after its cool-off

        executions = aws.executions()
        assert len(executions) == 4 and all(e.status == "FAILED" for e in executions)
        (record,) = _records(aws)
        assert record["record"]["messageAttributes"]["ffRedriveAttempt"]["stringValue"] == "3"
        (alert,) = aws.notifications()
        assert alert[0] == "[dev] Order saga failed in ChargePayment"


def _redelivery_seconds(aws: Rehearsal) -> int:
    """The failure-events queue's visibility timeout: when an event the Reconciler left comes back."""
    attributes = aws.sqs.get_queue_attributes(QueueUrl=aws.outputs["FailureEventsQueueUrl"],
                                              AttributeNames=["VisibilityTimeout"])["Attributes"]
    return int(attributes["VisibilityTimeout"])


def _time_out(aws: Rehearsal, held: str) -> None:
    """Move the clock past the execution's timeout (1 s in these tests): it stops while its task is held."""
    aws.advance(2)
    assert aws.execution(held).status == "TIMED_OUT"


@pytest.mark.parametrize("step", STEPS)
def test_a_timed_out_execution_is_compensated_recorded_then_redriven(cloud_assembly: Path, step: str) -> None:
    with Rehearsal.start(cloud_assembly, execution_timeout_seconds=1) as aws:
        seed_inventory(aws.dynamodb, aws.outputs["InventoryTableName"])
        aws.faults.add(Fault(step, FaultKind.HANG, times=1))
        _message_id, body = _order(aws)
        (held,) = aws.wait_for_hang()
        _time_out(aws, held)
        aws.release_held()  # the held invocation ends (and commits) before its function's timeout
        aws.set_execution_timeout(None)
        assert _records(aws) == []  # a task invocation may still have been running: nothing compensated yet
        aws.advance(_redelivery_seconds(aws) + 1)  # the event comes back; the invocation has certainly ended

        (record,) = _records(aws)
        assert record["reconciliation"]["status"] == "TIMED_OUT"
        entered = STEPS[: STEPS.index(step) + 1]  # the step it hung in may have taken effect: it is undone too
        assert record["reconciliation"]["compensated"] == [UNDO[s] for s in reversed(entered)]
        assert record["manualRepair"] is False
        payments, shipments = _books(aws, body["orderId"])
        assert payments in ([], ["REFUNDED"]) and all(s != "ARRANGED" for s in shipments)  # nothing live is left
        assert aws.notifications() == []  # a timeout is transient: it waits for the retry

        aws.advance(HOUR)

        assert _records(aws) == []
        assert [e.status for e in aws.executions()].count("SUCCEEDED") == 1
        assert _books(aws, body["orderId"])[0] == ["CHARGED"]


@pytest.mark.parametrize("compensation", ["CancelShipment", "RefundPayment", "ReleaseInventory"])
def test_an_abort_during_a_compensation_is_finished_by_the_reconciler_and_announced_once(
        cloud_assembly: Path, compensation: str) -> None:
    with Rehearsal.start(cloud_assembly) as aws:
        seed_inventory(aws.dynamodb, aws.outputs["InventoryTableName"])
        aws.faults.add(Fault("ArrangeShipping", FaultKind.CRASH, times=1))
        aws.faults.add(Fault(compensation, FaultKind.HANG, times=1))
        _message_id, body = _order(aws)
        (held,) = aws.wait_for_hang()
        aws.abort(held)
        aws.release_held()
        aws.run()
        aws.advance(HOUR)  # an abort is a person's decision: never redriven

        (execution,) = aws.executions()
        assert execution.status == "ABORTED"
        (record,) = _records(aws)
        assert record["reconciliation"]["status"] == "ABORTED"
        assert record["reconciliation"]["compensated"] == ["CancelShipment", "RefundPayment", "ReleaseInventory"]
        assert _books(aws, body["orderId"])[0] == ["REFUNDED"]
        (alert,) = aws.notifications()
        assert alert[0] == f"[dev] Order saga aborted in {compensation}" and execution.arn in alert[1]


def test_a_lost_status_change_event_is_caught_by_the_sweep(cloud_assembly: Path) -> None:
    with Rehearsal.start(cloud_assembly) as aws:
        seed_inventory(aws.dynamodb, aws.outputs["InventoryTableName"])
        aws.faults.add(Fault("ChargePayment", FaultKind.HANG, times=1))
        _order(aws)
        (held,) = aws.wait_for_hang()
        aws.abort(held)
        aws.release_held()
        aws.bus.rules.clear()  # EventBridge delivers status-change events on a best-effort basis: this one is lost
        aws.run()
        assert _records(aws) == []

        aws.advance(20 * 60)  # one sweep (every 15 minutes)

        (record,) = _records(aws)
        assert record["reconciliation"]["via"] == "sweep"
        assert len(aws.notifications()) == 1


def test_a_lost_event_of_a_timed_out_execution_is_caught_by_the_sweep(cloud_assembly: Path) -> None:
    with Rehearsal.start(cloud_assembly, execution_timeout_seconds=1) as aws:
        seed_inventory(aws.dynamodb, aws.outputs["InventoryTableName"])
        aws.faults.add(Fault("ChargePayment", FaultKind.HANG, times=1))
        _order(aws)
        (held,) = aws.wait_for_hang()
        aws.bus.rules.clear()  # the status-change event is lost
        _time_out(aws, held)
        aws.release_held()
        aws.set_execution_timeout(None)
        aws.run()
        assert _records(aws) == []

        aws.advance(15 * 60)  # the first sweep selects it by its stopDate; the Redriver at the same minute resends it

        first, copy = aws.executions()
        assert first.status == "TIMED_OUT" and copy.status == "SUCCEEDED"
        assert copy.input[0]["messageAttributes"]["ffFirstMessageId"]["stringValue"] == first.message_id
        (row,) = [r for r in aws.items("DeliveriesTableName") if r["messageId"] == first.message_id]
        assert row["reconciliation"] == "ANNOUNCED"  # the sweep's reconcile, the only one that could have run


def test_the_reconciler_failing_is_retried_and_reconciles_once(cloud_assembly: Path) -> None:
    with Rehearsal.start(cloud_assembly) as aws:
        seed_inventory(aws.dynamodb, aws.outputs["InventoryTableName"])
        aws.faults.add(Fault("Reconciler", FaultKind.CRASH, times=2))
        aws.faults.add(Fault("ChargePayment", FaultKind.HANG, times=1))
        _order(aws)
        (held,) = aws.wait_for_hang()
        aws.abort(held)
        aws.release_held()
        aws.run()
        aws.advance(20 * 60)  # the event comes back once (12 min) and the sweep sees it too (15 min)

        assert aws.faults.fired("Reconciler") == 2
        assert len(_records(aws)) == 1
        assert len(aws.notifications()) == 1


def test_the_dlq_and_sns_refusing_at_once_ends_recorded_and_announced_once(cloud_assembly: Path) -> None:
    with Rehearsal.start(cloud_assembly) as aws:
        seed_inventory(aws.dynamodb, aws.outputs["InventoryTableName"],)
        aws.faults.add(Fault("FailureDlq", FaultKind.UNAVAILABLE, times=6))  # HandleFailure's 1 + 5 retries
        aws.faults.add(Fault("AlertsTopic", FaultKind.UNAVAILABLE, times=3))  # the Reconciler's first publishes
        sample = make_order(OrderKind.OUT_OF_STOCK, 1, __import__("random").Random(1))
        aws.send(sample.body)
        aws.run()
        aws.advance(HOUR)  # each publish the topic refuses brings the event back later (or the sweep comes)

        (record,) = _records(aws)
        assert record["failure"]["error"] == "OutOfStock"
        assert record["reconciliation"]["status"] == "FAILED"
        assert len(aws.notifications()) == 1  # the business error is announced, once, by the Reconciler


@pytest.mark.parametrize("ending", ["commits late", "reaches its function timeout"])
def test_a_step_still_running_when_its_execution_timed_out_is_compensated_only_after_it_ended(
        cloud_assembly: Path, ending: str) -> None:
    """A timeout does not stop the invocation in flight: whatever it commits, after the execution ended, is undone."""
    with Rehearsal.start(cloud_assembly, execution_timeout_seconds=1) as aws:
        seed_inventory(aws.dynamodb, aws.outputs["InventoryTableName"])
        aws.faults.add(Fault("ChargePayment", FaultKind.HANG, times=1))
        first, body = _order(aws)
        (held,) = aws.wait_for_hang()
        _time_out(aws, held)
        aws.set_execution_timeout(None)
        aws.run()  # the Reconciler sees the event while ChargePayment's invocation is still held: it waits
        assert _records(aws) == [] and _books(aws, body["orderId"])[0] == []
        if ending == "commits late":
            aws.release_held()  # the charge goes through after its execution ended
            assert _books(aws, body["orderId"])[0] == ["CHARGED"]
        aws.advance(_redelivery_seconds(aws) + 1)  # the event comes back: the invocation has certainly ended

        (record,) = _records(aws)
        assert aws.runtime.held_timed_out == (1 if ending == "reaches its function timeout" else 0)
        refund = next(c for c in record["compensation"]["reconciled"] if c["state"] == "RefundPayment")
        assert refund["result"]["status"] == ("REFUNDED" if ending == "commits late" else "NOTHING_TO_REFUND")
        aws.advance(HOUR)  # the cool-off and the automatic redrive

        (succeeded,) = [e for e in aws.executions() if e.status == "SUCCEEDED"]
        owner = succeeded.message_id
        charges = [p for p in aws.items("PaymentsTableName") if p["pk"] == f"ORDER#{body['orderId']}"]
        assert [(c["status"], c["attemptId"]) for c in charges] == [("CHARGED", owner)]  # one charge, the shipper's
        assert owner != first
