"""One order, many attempts, on the rehearsal (the real ASL on moto with the real handlers): the three ways the promise
broke before the order ledger, kept as regression tests. tests/handlers/test_interleavings.py explores the
interleavings; these pin the three cases end to end, with the accounting of src/fire_and_forget/rehearsal/accounting.py.
"""

from __future__ import annotations

import json
import random
import time
import uuid
from typing import Any

from demos.orders.samples import OrderKind, make_order
from fire_and_forget.rehearsal.accounting import Place, account
from fire_and_forget.rehearsal.faults import Fault, FaultKind
from fire_and_forget.rehearsal.rehearsal import Execution, Rehearsal

SEEDED = 10_000  # what seed_inventory gives every sku


def valid_order(number: int = 1) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(make_order(OrderKind.VALID, number, random.Random(number)).body)
    return body


def stock(aws: Rehearsal) -> dict[str, int]:
    return {item["sku"]: int(item["available"]) for item in aws.items("InventoryTableName")}


def by_message(executions: list[Execution]) -> dict[str, list[Execution]]:
    found: dict[str, list[Execution]] = {}
    for execution in executions:
        found.setdefault(execution.message_id or "", []).append(execution)
    return found


def wait_until_ended(aws: Rehearsal, arn: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while aws.execution_status(arn) == "RUNNING":
        if time.monotonic() > deadline:
            raise TimeoutError(arn)
        time.sleep(0.02)


def test_a_failing_attempt_never_undoes_a_resend_that_succeeded(aws: Rehearsal) -> None:
    # Given attempt 1 reserved and is slow in ChargePayment
    body = valid_order()
    aws.faults.add(Fault("ChargePayment", FaultKind.HANG, times=1))
    first = aws.send(body)
    (slow,) = aws.wait_for_hang()
    # When the producer resends the same order, and that attempt runs to its end meanwhile
    resend = aws.send(body)
    aws.drain()
    resent = next(arn for arn in aws.pipe.stats.started if arn != slow)
    wait_until_ended(aws, resent)
    # And attempt 1 then fails in ArrangeShipping
    aws.faults.add(Fault("ArrangeShipping", FaultKind.CRASH))
    aws.faults.release()
    executions = by_message(aws.run())

    # Then the resend ended as a duplicate of the attempt that owned the order, and took nothing
    assert executions[resend][0].states == ["ReserveInventory", "DuplicateDeliveryIgnored"]
    # And attempt 1's compensations undid only its own work: nothing shipped, nothing charged, all stock back
    assert executions[first][0].states[-1] == "FailureRecorded"
    assert all(s["status"] == "CANCELLED" for s in aws.items("ShipmentsTableName"))
    assert all(p["status"] == "REFUNDED" for p in aws.items("PaymentsTableName") if p["pk"].startswith("ORDER#"))
    assert all(stock(aws)[line["sku"]] == SEEDED for line in body["items"])
    (entry,) = aws.items("OrdersTableName")
    assert (entry["attemptId"], entry["status"]) == (first, "COMPENSATED")
    # And each message is in exactly one place: the first in the failure DLQ, announced once; the resend absorbed by
    # the attempt that owned its order, announced never
    ledger = account(aws, [first, resend])
    fates = ledger.fates
    assert (fates[first].places, fates[first].announcements) == ([Place.FAILURE_DLQ], 1)
    assert (fates[resend].places, fates[resend].announcements) == ([Place.ABSORBED], 0)
    assert ledger.balanced
    assert [e.states[-1] for e in executions[resend]] == ["DuplicateDeliveryIgnored"]


def test_a_duplicate_delivery_of_a_message_whose_first_execution_died_before_its_claim_does_not_also_succeed(
    aws: Rehearsal,
) -> None:
    # Given the first execution of a message crashes in ReserveInventory before the handler ran, and fails
    aws.faults.add(Fault("ReserveInventory", FaultKind.CRASH, times=1))
    message_id = aws.send(valid_order())
    (first,) = aws.run()
    assert first.states[-1] == "FailureRecorded"
    # When SQS delivers the same message again, later (at-least-once), and the pipe starts a second execution
    twin = aws.sfn.start_execution(
        stateMachineArn=aws.pipe.definition.target_arn, name=f"pipe-{uuid.uuid4().hex}", input=json.dumps(first.input)
    )["executionArn"]
    aws.pipe.stats.started.append(twin)
    executions = aws.run()

    # Then the second execution finds the message's outcome taken and ends quietly: nothing reserved or shipped
    second = next(e for e in executions if e.arn == twin)
    assert second.states == ["ReserveInventory", "DuplicateDeliveryIgnored"]
    assert aws.items("ShipmentsTableName") == []
    # And the message is in one place (the failure DLQ), announced once
    ledger = account(aws, [message_id])
    assert ledger.balanced, ledger.fates
    assert (ledger.fates[message_id].place, ledger.fates[message_id].announcements) == (Place.FAILURE_DLQ, 1)


def test_a_conflicting_resend_is_refused_and_announced_never_merged(aws: Rehearsal) -> None:
    # Given an order that succeeded
    body = valid_order()
    first = aws.send(body)
    aws.run()
    before = stock(aws)
    # When the same orderId arrives with another body (one more unit of the first line, another amount)
    changed = {
        **body,
        "items": [{**body["items"][0], "quantity": body["items"][0]["quantity"] + 1}],
        "payment": {**body["payment"], "amount": "999.00"},
    }
    conflict = aws.send(changed)
    executions = by_message(aws.run())

    # Then it is refused as OrderConflict: no retry, no compensation, the failure DLQ and one alert
    refused = executions[conflict][0]
    assert refused.states == [
        "ReserveInventory",
        "ReserveInventoryRejected",
        "ClaimFailure",
        "HandleFailure",
        *refused.states[4:],
    ]
    assert refused.states[-1] == "FailureRecorded"
    (record,) = [json.loads(m["Body"]) for m in aws.messages("FailureDlqUrl")]
    assert (record["failure"]["error"], record["record"]["messageId"]) == ("OrderConflict", conflict)
    assert aws.clock.for_execution(refused.arn) == []
    # And the first body's reservation, charge and shipment stand untouched
    assert stock(aws) == before
    (charge,) = [p for p in aws.items("PaymentsTableName") if p["pk"] == f"ORDER#{body['orderId']}"]
    assert (charge["status"], str(charge["amount"])) == ("CHARGED", body["payment"]["amount"])
    ledger = account(aws, [first, conflict])
    assert ledger.balanced, ledger.fates
    assert ledger.fates[conflict].announcements == 1
