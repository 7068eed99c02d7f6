"""The books of one explored run, read from the raw tables and the run's DLQ and alerts.

Deliberately independent: it shares no code with the handlers (no adapter, no status constant) nor with
src/fire_and_forget/rehearsal/accounting.py. It reads DynamoDB JSON itself and states each rule as the issue words it.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from tests.handlers.explorer import Run, order_states

IGNORED_ENDS = {"DuplicateDeliveryIgnored", "DuplicateFailureIgnored"}
SUCCEEDED_END = "ArrangeShipping"
# Issue 13: automatic redrives of one message, by default (ff:healing maxAttempts).
AUTOMATIC_ATTEMPTS = 3
_RETRIED: dict[str, set[str]] = {}


def waits_for_an_automatic_retry(entry: dict[str, Any]) -> bool:
    """The issue's rule, stated here on its own: a failure whose cause is transient (the failed state's own Retry
    lists the error, or a timeout), with no manual repair and fewer than three automatic redrives so far, waits for
    the Redriver and is not announced; any other failure needs a person and is announced."""
    if not _RETRIED:
        for name, state in order_states().items():
            _RETRIED[name] = {e for r in state.get("Retry", []) for e in r["ErrorEquals"]} - {"States.ALL"}
    failure = entry["failure"]
    attribute = entry["record"].get("messageAttributes", {}).get("ffRedriveAttempt", {})
    attempt = int(attribute.get("stringValue", "0")) if isinstance(attribute, dict) else 0
    transient = failure["error"] == "States.Timeout" or failure["error"] in _RETRIED.get(failure["state"], set())
    return transient and entry["manualRepair"] is not True and attempt < AUTOMATIC_ATTEMPTS


def _rows(client: Any, table: str) -> list[dict[str, Any]]:
    items = client.scan(TableName=table, ConsistentRead=True)["Items"]
    return [{key: next(iter(value.values())) for key, value in item.items()} for item in items]


def check_books(run: Run, client: Any, tables: dict[str, str], initial: dict[str, int],
                claim_outages: list[str] | None = None) -> None:
    """Raise AssertionError naming the broken rule, the schedule and the faults.

    `claim_outages`, when given (the large bound only), collects instead of failing the one case the design accepts
    (docs/design.md, "The failure tail: ClaimFailure, HandleFailure, NotifyFailure"): a duplicate delivery of a
    message that succeeded fails before its delivery claim, and then ClaimFailure cannot be written at all (the claim
    store down through every retry). With nothing to read, HandleFailure records it anyway, since a duplicate record
    is recoverable and a lost failure is not: the message is then both succeeded and in the failure DLQ (announced
    once; a redrive of it is absorbed).
    """
    where = f"schedule={run.schedule} faults={run.faults} ends={[(e.attempt.label, e.end) for e in run.executions]}"
    started = [execution for execution in run.executions if execution.started]
    assert all(e.end is not None for e in started), f"an execution did not end: {where}"
    by_attempt = {e.attempt.message_id: e.attempt for e in started}
    shipments = _rows(client, tables["shipments"])
    charges = [row for row in _rows(client, tables["payments"]) if row["pk"].startswith("ORDER#")]
    reservations = _rows(client, tables["reservations"])
    stock = {row["sku"]: int(row["available"]) for row in _rows(client, tables["inventory"])}
    manual = any(entry["manualRepair"] for entry in run.dlq)
    uncaught = [e for e in started if e.end and e.end.startswith("Uncaught")]
    assert not uncaught, f"an error escaped every Catch: {where}"

    shipped = [row for row in shipments if row["status"] == "ARRANGED"]
    assert len(shipped) <= 1, f"shipped twice: {shipped} {where}"
    shipper = shipped[0]["attemptId"] if shipped else None

    if not manual:
        # No shipment without its charge, by the same attempt.
        if shipper is not None:
            assert [c["attemptId"] for c in charges if c["status"] == "CHARGED"] == [shipper], (
                f"shipment without its charge: {charges} {where}"
            )
        # Every charge of an order that did not ship is refunded.
        for charge in charges:
            assert charge["status"] != "CHARGED" or charge["attemptId"] == shipper, (
                f"charge of an order that did not ship is not refunded: {charge} {where}"
            )
        # Stock reserved equals the stock of live orders (the shipped one), and only it holds a reservation.
        held = [r for r in reservations if r["status"] == "RESERVED"]
        assert [r["attemptId"] for r in held] == ([shipper] if shipper else []), (
            f"reservations held {held} but shipped by {shipper}: {where}"
        )
        taken: Counter[str] = Counter()
        if shipper is not None:
            for line in by_attempt[shipper].body["items"]:
                taken[line["sku"]] += line["quantity"]
        for sku, units in initial.items():
            assert stock.get(sku) == units - taken[sku], (
                f"stock of {sku}: {stock.get(sku)}, expected {units - taken[sku]}: {where}"
            )

    _check_places(run, started, by_attempt, shipper, where, claim_outages)
    if "deliveries" in tables:
        _check_status(run, started, _rows(client, tables["deliveries"]), shipper, where)
    # A good order with no fault succeeds.
    if not run.faults:
        assert shipper is not None, f"a good order without faults did not ship: {where}"


def _check_places(run: Run, started: list[Any], by_attempt: dict[str, Any], shipper: str | None, where: str,
                  claim_outages: list[str] | None) -> None:
    # Every message in exactly one place: succeeded, the failure DLQ, or ignored as a duplicate.
    placed = 0
    for message_id in by_attempt:
        runs = [e for e in started if e.attempt.message_id == message_id]
        succeeded = sum(1 for e in runs if e.end == SUCCEEDED_END)
        in_dlq = sum(1 for entry in run.dlq if entry["record"]["messageId"] == message_id)
        places = succeeded + in_dlq
        claim_down = any(state == "ClaimFailure" and fault.value == "exhaust" for _, state, fault in run.faults)
        if claim_outages is not None and claim_down and (succeeded, in_dlq) == (1, 1):
            claim_outages.append(f"{message_id}: {where}")
            places = 1
        assert places == 1 or (places == 0 and all(e.end in IGNORED_ENDS for e in runs)), (
            f"message {message_id} is in {places} places ({succeeded} succeeded, {in_dlq} in the DLQ): {where}"
        )
        placed += places
        # Every failure that needs a person announced once, and nothing else announced (a failure waiting for an
        # automatic retry is announced only if it fails for good, by the run that records that).
        announced = sum(1 for arn in run.announcements if arn in {e.arn for e in runs})
        needing = sum(1 for entry in run.dlq
                      if entry["record"]["messageId"] == message_id and not waits_for_an_automatic_retry(entry))
        assert announced == needing, (
            f"message {message_id}: {announced} alerts for {needing} failures needing a person ({in_dlq} in all): "
            f"{where}"
        )
        if succeeded:
            assert shipper == message_id, f"{message_id} succeeded but {shipper} shipped: {where}"
    assert placed >= 1, f"every message of the order was ignored: the order is nowhere: {where}"


def _check_status(run: Run, started: list[Any], rows: list[dict[str, Any]], shipper: str | None, where: str) -> None:
    """What a caller reads on its message's row says what became of it (the row as DynamoDB JSON, read here, not
    through fire_and_forget.runtime.status): succeeded exactly when its owning execution shipped the order; failed,
    with the error recorded, exactly when that execution's failure is in the DLQ; absorbed when another message owns
    the order."""
    by_message = {row["messageId"]: row for row in rows}
    for execution in started:
        message_id = execution.attempt.message_id
        row = by_message.get(message_id, {})
        if row.get("executionArn") != execution.arn:
            continue  # a twin delivery that lost the claim: the row is the owner's, read for the owner
        outcome = row.get("outcome")
        shipped = execution.end == SUCCEEDED_END
        assert (outcome == "SUCCEEDED") == shipped, f"{message_id} reads {outcome!r}, ended {execution.end}: {where}"
        if shipped:
            assert row.get("stage") == "shipped" and shipper == message_id, f"{message_id} reads {row}: {where}"
        recorded = [entry for entry in run.dlq
                    if entry["record"]["messageId"] == message_id and entry["executionArn"] == execution.arn]
        if recorded:
            assert outcome == "FAILED" and row.get("error") == recorded[0]["failure"]["error"], (
                f"{message_id} is in the DLQ ({recorded[0]['failure']['error']}) but reads {row}: {where}")
        if outcome == "ABSORBED":
            owner = by_message.get(row.get("absorbedBy") or "", {})
            assert execution.end in IGNORED_ENDS and owner and owner.get("executionArn") != execution.arn, (
                f"{message_id} reads absorbed by {row.get('absorbedBy')!r}: {where}")
