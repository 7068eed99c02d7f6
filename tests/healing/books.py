"""The healing explorer's books: what one run left, read raw, and every rule it must keep.

Deliberately independent: no code of the handlers, lambdas/healing, src/fire_and_forget/cli/ or
src/fire_and_forget/rehearsal/accounting.py. It reads the tables as DynamoDB JSON, the failure DLQ and the topic from
moto's own stores, the messages SendMessage put in the failure DLQ, and how each execution ended; the rules are stated
here as the pipeline promises them: nothing lost, nothing in two places, nothing announced twice, every failure that
needs a person announced once, nothing charged without a shipment or a refund, no stock held and no order held for an
order that did not ship. Two windows the design accepts are named (`accepted`) rather than reported as defects.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

SUCCESS_END = "ArrangeShipping"  # the saga's last task ends the execution: the order shipped
DUPLICATE_ENDS = {"DuplicateDeliveryIgnored", "DuplicateFailureIgnored"}
TAIL_STATES = {"ClaimFailure", "HandleFailure", "NotifyFailure"}
AUTOMATIC_ATTEMPTS = 3  # automatic redrives of one message (ff:healing maxAttempts)
FIRST_ID, ATTEMPT = "ffFirstMessageId", "ffRedriveAttempt"
# The two windows the design accepts (docs/design.md, "Windows the design accepts" and "The books: every message in
# exactly one place").
HANDLE_FAILURE_WINDOW = "two records: the execution was stopped while HandleFailure's send was in flight"
PUBLISH_WINDOW = "two announcements: the Reconciler died between SNS accepting its publish and the row saying so"
RECORD_WINDOW = ("two records: the Reconciler died between its SendMessage and the row saying RECORDED (every reader "
                 "reads the records of one execution as one)")
NOTIFY_WINDOW = ("two announcements: the execution was stopped while NotifyFailure's publish was in flight (SNS "
                 "cannot say whether it took effect, and a standard topic cannot deduplicate)")
# Faults that end a Reconciler run between its record's SendMessage and its RECORDED update.
RECORD_FAULTS = ("sqs.send_message(failure) [crash]", "sqs.send_message(failure) [lost]", " RECORDED) [refused]")


@dataclass(frozen=True)
class Finding:
    rule: str
    detail: str
    accepted: str | None = None


@dataclass
class Leftovers:
    """What one run left, read raw (tests/healing/explorer.py fills it in)."""

    executions: list[dict[str, Any]]  # arn, label, record, status, end, stopped_in
    dlq: list[dict[str, Any]]  # the failure DLQ's message bodies at the end, parsed
    recorded: list[dict[str, Any]]  # every body SendMessage put into the failure DLQ
    lineage: dict[str, str]  # a redriven copy's messageId -> the messageId of the record it was made of
    alerts: list[str]  # every message published to the alerts topic
    reconciler_dlq: list[str]  # execution ARNs whose status-change event ended in the ReconcilerDlq
    source_left: list[dict[str, Any]]  # messages still in the source queue, as records (messageId, attributes)
    tables: dict[str, list[dict[str, Any]]]  # role -> items, DynamoDB JSON
    faults: list[str]
    stock: dict[str, int]  # the initial stock
    retried: dict[str, set[str]] = field(default_factory=dict)  # state -> error names its Retry lists


def check(run: Leftovers) -> list[Finding]:
    findings: list[Finding] = []
    findings += _records(run)
    findings += _places(run)
    findings += _announcements(run)
    findings += _money_and_stock(run)
    return findings


def _plain(item: dict[str, Any]) -> dict[str, Any]:
    return {key: next(iter(value.values())) for key, value in item.items()}


def _attribute(record: dict[str, Any], name: str) -> str | None:
    value = (record.get("messageAttributes") or {}).get(name)
    return value.get("stringValue") if isinstance(value, dict) else None


def _caller(record: dict[str, Any], lineage: dict[str, str]) -> str:
    """The caller's message a copy descends from: the automatic redrive names it, an operator's copy is followed
    through the record it was made of; the caller's own message is itself."""
    first = _attribute(record, FIRST_ID)
    if first:
        return first
    message_id = str(record["messageId"])
    seen = {message_id}
    while message_id in lineage and lineage[message_id] not in seen:
        message_id = lineage[message_id]
        seen.add(message_id)
    return message_id


def _places(run: Leftovers) -> list[Finding]:
    """Every caller's message is in exactly one place at quiet: succeeded, in the failure DLQ, in the ReconcilerDlq
    (a person is told by its alarm), or absorbed by another attempt of its order that has a place."""
    findings = []
    callers: dict[str, dict[str, int]] = {}
    deliveries = {row["messageId"]: row for row in map(_plain, run.tables["deliveries"])}
    for execution in run.executions:
        counts = callers.setdefault(_caller(execution["record"], run.lineage), Counter())
        counts["executions"] += 1
        counts["succeeded"] += execution["end"] == SUCCESS_END
        owner = deliveries.get(execution["record"]["messageId"], {}).get("executionArn")
        stopped = execution["status"] in ("TIMED_OUT", "ABORTED", "FAILED")
        ignored = execution["end"] in DUPLICATE_ENDS or (stopped and owner not in (None, execution["arn"]))
        counts["last-ignored"] = int(ignored)  # executions are listed in the order they started
        counts["reconciler-dlq"] += run.reconciler_dlq.count(execution["arn"])
    # The records of one execution are one failure, one place (the readers keep one: the books say so on their own).
    for record in {r["executionArn"]: r for r in run.dlq}.values():
        callers.setdefault(_caller(record["record"], run.lineage), Counter())["dlq"] += 1
    for message in run.source_left:
        callers.setdefault(_caller(message, run.lineage), Counter())["source"] += 1
    placed = {caller: c["succeeded"] + c["dlq"] + c["reconciler-dlq"] + c["source"] for caller, c in callers.items()}
    for caller, counts in callers.items():
        where = {k: v for k, v in counts.items() if v}
        if placed[caller] > 1:
            findings.append(Finding("in two places", f"message {caller}: {where}", _handle_failure_window(run, caller)))
        elif placed[caller] == 0:
            # Placed by its last copy: a copy that found another attempt owning the order handed it over.
            absorbed = counts["last-ignored"] and any(n for other, n in placed.items() if other != caller)
            if not absorbed:
                findings.append(Finding("lost", f"message {caller} is nowhere: {where}"))
    return findings


def _records(run: Leftovers) -> list[Finding]:
    """One failure, one record: an execution's failure is written to the failure DLQ once."""
    findings = []
    for execution in run.executions:
        mine = [r for r in run.recorded if r["executionArn"] == execution["arn"]]
        if len(mine) > 1:
            writers = sorted("the Reconciler" if "reconciliation" in r else "HandleFailure" for r in mine)
            accepted = HANDLE_FAILURE_WINDOW if execution.get("stopped_in") == "HandleFailure" \
                and writers == ["HandleFailure", "the Reconciler"] else RECORD_WINDOW \
                if writers == ["the Reconciler", "the Reconciler"] and _faulted(run, RECORD_FAULTS) else None
            findings.append(Finding("recorded twice", f"{execution['label']}: {len(mine)} records, by {writers}",
                                    accepted))
    return findings


def _handle_failure_window(run: Leftovers, caller: str) -> str | None:
    """Accepted: one execution's two records, its tail's and the Reconciler's, because it was stopped while
    HandleFailure's SendMessage was in flight (the history shows HandleFailure entered, not left)."""
    for execution in run.executions:
        if _caller(execution["record"], run.lineage) != caller or execution.get("stopped_in") != "HandleFailure":
            continue
        mine = [r for r in run.dlq if r["executionArn"] == execution["arn"]]
        if len(mine) == 2 and {"reconciliation" in r for r in mine} == {True, False}:
            return HANDLE_FAILURE_WINDOW
    return None


def needs_a_person(record: dict[str, Any], retried: dict[str, set[str]]) -> bool:
    """The pipeline's rule, restated: a failure waits unannounced for an automatic redrive when its cause is
    transient (the failed state's own Retry lists the error, a timeout, or the failure tail itself failing), no
    compensation failed, it was not aborted (a person stopped it), and fewer than three redrives were made."""
    failure = record["failure"]
    status = (record.get("reconciliation") or {}).get("status", "FAILED")
    attempt = int(_attribute(record["record"], ATTEMPT) or 0)
    transient = status == "TIMED_OUT" or failure["error"] == "States.Timeout" or failure["state"] in TAIL_STATES \
        or failure["error"] in retried.get(failure["state"], set())
    waits = transient and status != "ABORTED" and record.get("manualRepair") is not True \
        and attempt < AUTOMATIC_ATTEMPTS
    return not waits


def _announcements(run: Leftovers) -> list[Finding]:
    """Every execution whose failure needs a person is announced once (an alert naming it, or its event in the
    ReconcilerDlq, whose alarm announces); nothing else is announced."""
    findings = []
    by_execution: dict[str, list[dict[str, Any]]] = {}
    for record in run.recorded:
        by_execution.setdefault(record["executionArn"], []).append(record)
    for execution in run.executions:
        arn = execution["arn"]
        pattern = re.compile(re.escape(arn) + r"(?![\w-])")
        alerts = [text for text in run.alerts if pattern.search(text)]
        alarm = run.reconciler_dlq.count(arn)
        records = by_execution.get(arn, [])
        needing = any(needs_a_person(r, run.retried) for r in records)
        told = len(alerts) + alarm
        label = execution["label"]
        if told > 1:
            by = "NotifyFailure" if all(a.startswith("NotifyFailure") for a in alerts) else "the Reconciler" \
                if not any(a.startswith("NotifyFailure") for a in alerts) else "NotifyFailure and the Reconciler"
            accepted = PUBLISH_WINDOW if by == "the Reconciler" and _publish_window(run) else NOTIFY_WINDOW \
                if by == "NotifyFailure and the Reconciler" and execution.get("stopped_in") == "NotifyFailure" \
                else None
            findings.append(Finding("announced twice", f"{label}: {told} announcements by {by}", accepted))
        elif needing and told == 0:
            findings.append(Finding("unannounced", f"{label}: its failure needs a person and nobody was told"))
        elif not needing and told and not alarm:
            why = "its failure waits for an automatic redrive" if records else "it has no failure"
            findings.append(Finding("announced for nothing", f"{label}: announced, but {why}"))
    return findings


def _faulted(run: Leftovers, markers: tuple[str, ...]) -> bool:
    return any(marker in fault for fault in run.faults for marker in markers)


def _publish_window(run: Leftovers) -> bool:
    return any(("sns.publish" in fault and ("[crash]" in fault or "[lost]" in fault))
               or (" ANNOUNCED)" in fault and ("[refused]" in fault or "[lost]" in fault)) for fault in run.faults)


def _money_and_stock(run: Leftovers) -> list[Finding]:
    if any(record.get("manualRepair") is True for record in run.recorded):
        return []  # a compensation failed: a person repairs by hand, the books cannot balance on their own
    shipments = [row for row in map(_plain, run.tables["shipments"]) if row["status"] == "ARRANGED"]
    findings = [Finding("shipped twice", str(shipments))] if len(shipments) > 1 else []
    shipper = shipments[0]["attemptId"] if shipments else None
    return findings + _charges(run, shipper) + _stock(run, shipper) + _ledger(run, shipper)


def _charges(run: Leftovers, shipper: str | None) -> list[Finding]:
    """Every live charge is the shipped attempt's, and the shipped attempt has its own live charge."""
    findings = []
    charges = [row for row in map(_plain, run.tables["payments"]) if str(row["pk"]).startswith("ORDER#")]
    for charge in charges:
        if charge["status"] == "CHARGED" and charge["attemptId"] != shipper:
            findings.append(Finding("charged without a shipment or a refund",
                                    f"charge of attempt {charge['attemptId']} is CHARGED; shipped by {shipper}"))
    if shipper is not None and not any(c["status"] == "CHARGED" and c["attemptId"] == shipper for c in charges):
        findings.append(Finding("shipped without its own charge", f"attempt {shipper} shipped; charges "
                                f"{[(c['attemptId'], c['status']) for c in charges]}"))
    return findings


def _stock(run: Leftovers, shipper: str | None) -> list[Finding]:
    """Only the shipped attempt holds a reservation, and the stock is the initial less what is reserved."""
    findings = []
    reservations = [row for row in map(_plain, run.tables["reservations"]) if row["status"] == "RESERVED"]
    taken: Counter[str] = Counter()
    for reservation in reservations:
        if reservation["attemptId"] != shipper:
            findings.append(Finding("stock held for an order that did not ship",
                                    f"attempt {reservation['attemptId']} holds its reservation; shipped by {shipper}"))
        for line in reservation["items"]:
            taken[line["M"]["sku"]["S"]] += int(line["M"]["quantity"]["N"])
    for row in map(_plain, run.tables["inventory"]):
        if int(row["available"]) != run.stock[row["sku"]] - taken[row["sku"]]:
            findings.append(Finding("stock does not add up", f"{row['sku']}: {row['available']} available, "
                                    f"{run.stock[row['sku']]} less {taken[row['sku']]} reserved"))
    return findings


def _ledger(run: Leftovers, shipper: str | None) -> list[Finding]:
    """At quiet nobody runs: the order is COMPLETED if it shipped, and held by no attempt otherwise."""
    findings = []
    for order in map(_plain, run.tables["orders"]):
        if order["status"] == "ACTIVE":
            findings.append(Finding("order held by an attempt nobody runs",
                                    f"the ledger says ACTIVE, owned by {order['attemptId']}, at quiet"))
        if (order["status"] == "COMPLETED") != (shipper is not None):
            findings.append(Finding("ledger disagrees with the shipment",
                                    f"the ledger says {order['status']}; shipped by {shipper}"))
    return findings


def parse_bodies(bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [json.loads(message["body"]) for message in bodies]
