"""Prints the demo's report the way an operator wants to read it; plain text when not on a terminal."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from fire_and_forget.cli import TrendRun, TrendTable, trend_window
from fire_and_forget.cli import trend_page as trend_page_of
from fire_and_forget.rehearsal import LAMBDA_BILLED_MS, PRICES, PRICES_READ_ON, REGION


def _counts(title: str, label: str, counts: dict[str, int]) -> Table:
    """Messages per key, in the report's order (most first, ties by name: demo.summarize)."""
    table = Table(title=title)
    table.add_column(label)
    table.add_column("messages", justify="right")
    for key, count in counts.items():
        table.add_row(escape(key), str(count))
    return table


# Where each kind of outcome is handled in docs/runbook.md.
RUNBOOK = "docs/runbook.md"
OUTCOME_RUNBOOK = {
    "failed, compensated, in failure DLQ": f"{RUNBOOK}#r1-failed-orders-in-the-failure-dlq",
    "needs manual repair": f"{RUNBOOK}#r1-failed-orders-in-the-failure-dlq (step 2, manual repair first)",
    "transient, automatic redrives spent, in failure DLQ": f"{RUNBOOK}#failuresneedaperson",
    "never handed over, in source DLQ": f"{RUNBOOK}#r2-messages-in-the-source-dlq",
    "failed execution, input kept":
        f"{RUNBOOK}#r3-executions-that-failed-without-a-failure-record-timed-out-or-were-aborted",
}
# What fixes each business error before a redrive (runbook R1, step 3).
ERROR_FIX = {
    "OutOfStock": "restock, then redrive",
    "PaymentDeclined": "a new payment from the customer (a new order, not a redrive)",
    "ShippingUnavailable": "a served country (a corrected order)",
    "InvalidOrder": "a corrected body from the producer (redriving the same body fails again)",
}
ORDER_ID_WIDTH = 24
SUBJECTS_SHOWN = 8


def shown_order_id(order_id: str) -> str:
    """An order id short enough for a table cell; a cut one says how long it was."""
    if len(order_id) <= ORDER_ID_WIDTH:
        return order_id
    return f"{order_id[:12]}... ({len(order_id)} chars)"


def render(console: Console, result: dict[str, Any]) -> None:
    opts = result["options"]
    console.print()
    console.rule(f"Fire-and-forget offline demo: {result['messages_in']} messages, chaos={opts['chaos']}, "
                 f"seed={opts['seed']}, {result['elapsed_seconds']} s")
    console.print(_counts("Where every message ended", "outcome", result["outcomes"]))
    console.print(_counts("Failures by error", "error", result["errors"]))

    sample = Table(title="Failure-DLQ entries, the first by orderId",
                   caption="orderId (not JSON): the body is not JSON; (none): no orderId; (not an object): JSON "
                           "but not an object; a long id is cut. The demo sends these malformed orders on purpose: "
                           "each must end as InvalidOrder.")
    for column in ("orderId", "error", "failedState", "manualRepair"):
        sample.add_column(column)
    for entry in result["failure_dlq_sample"]:
        cells = {**entry, "orderId": shown_order_id(str(entry["orderId"]))}
        sample.add_row(*(escape(str(cells[column])) for column in ("orderId", "error", "failedState", "manualRepair")))
    console.print(sample)

    notes = result["notifications"]
    by_subject: dict[str, int] = notes.get("by_subject", {})
    shown = list(by_subject.items())[:SUBJECTS_SHOWN]
    console.print(f"Notifications published to the alerts topic: {notes['count']}, "
                  f"{len(by_subject)} distinct subjects" + (f" ({len(shown)} most frequent shown)"
                                                            if len(shown) < len(by_subject) else "") + ":")
    for subject, count in shown:
        console.print(f"  {count:>4} x {escape(subject)}")

    transitions = Table(title="Billed state transitions per execution (states entered + retries)")
    for column in ("outcome", "mean", "min", "max"):
        transitions.add_column(column)
    for outcome, stats in result["transitions_per_outcome"].items():
        transitions.add_row(outcome, str(stats["mean"]), str(stats["min"]), str(stats["max"]))
    console.print(transitions)

    c = result["conservation"]
    verdict = "[green]BALANCED[/green]" if c["balanced"] and not c["saga_violations"] else "[red]NOT BALANCED[/red]"
    console.print(f"Conservation: {c['in']} in = {c['accounted']} accounted for; lost {c['lost']}, "
                  f"in two places {c['in_two_places']}, announced twice {c['announced_twice']}, "
                  f"failures unannounced {c['unannounced_failures']}, saga violations {len(c['saga_violations'])}"
                  f" -> {verdict}")
    console.print(f"Estimated AWS cost per 1M orders with this mix: ${result['cost_per_million_orders_usd']:,.2f} "
                  f"({REGION} list prices read {PRICES_READ_ON}; Lambda at {LAMBDA_BILLED_MS} ms per invocation; "
                  f"the {len(PRICES)} prices and their pages: src/fire_and_forget/rehearsal/cost.py, and "
                  "price_sources in the JSON report)")


def next_steps(console: Console, result: dict[str, Any], report: Path, *, practising: bool) -> None:
    """What the numbers mean and what to do with the failures: the demo's last words."""
    c = result["conservation"]
    balanced = c["balanced"] and not c["saga_violations"]
    console.print()
    console.rule("Next steps")
    console.print(("BALANCED means" if balanced else "NOT BALANCED: the run broke the rule that") +
                  " every message that went in is in exactly one place (succeeded, the failure DLQ, the source DLQ, "
                  "a failed execution that keeps its input, or absorbed by another attempt of its order that owns "
                  "it), every failure was announced exactly once, and no "
                  "saga left a reservation or a charge standing without a failure record.")
    console.print(f"Report: {report} (JSON) and {report.with_suffix('.html')} (failure trends; open it in a browser).")
    failing = {outcome: count for outcome, count in result["outcomes"].items() if outcome in OUTCOME_RUNBOOK}
    if failing:
        console.print("What to do about the failures it produced:")
        for outcome, count in sorted(failing.items(), key=lambda item: -item[1]):
            console.print(f"  {count:>4} {outcome}: {OUTCOME_RUNBOOK[outcome]}")
        for error, count in sorted(result["errors"].items(), key=lambda item: -item[1]):
            fix = ERROR_FIX.get(error, "the system fixed or the outage over, then redrive (runbook R1, step 3)")
            console.print(f"       {error} ({count}): {fix}")
    if practising:
        console.print("Practise those recoveries now: the account stays up (below).")
    else:
        console.print("Practise them with the operator CLI on this run's account: make practice (or "
                      ".venv/bin/python -m demos.orders.practice start), then follow docs/operator-cli.md, "
                      "\"Practice account\".")


def trend_page(result: dict[str, Any]) -> str:
    """The failure-trend page of one demo report (demo.py summarize), drawn by ff-ops's page, with the demo's own
    tables of messages after the page's tables of orders and executions."""
    c = result["conservation"]
    verdict = "BALANCED" if c["balanced"] and not c["saga_violations"] else "NOT BALANCED"
    opts = result["options"]
    title = (
        f"Fire-and-forget offline demo: {result['messages_in']} messages, chaos={opts['chaos']}, seed={opts['seed']}"
    )
    summary = (f"Conservation: {c['in']} in = {c['accounted']} accounted for, lost {c['lost']}: "
               f"<strong>{verdict}</strong>.")
    runs = [TrendRun(datetime.fromisoformat(row["start"]), row["status"], row["error"], row["step"], row["order"],
                row["duplicate"]) for row in result.get("timeline", [])]
    messages = [
        TrendTable("messages", "Where every message ended", "outcome", "messages",
              sorted(result["outcomes"].items(), key=lambda item: -item[1]),
              "Each message the callers sent, once, where the demo's accounting found it."),
        TrendTable("message-errors", "Failed messages by error", "error", "messages",
              sorted(result["errors"].items(), key=lambda item: -item[1])),
    ]
    if "long_running" in result:
        messages.append(TrendTable(
            "long-running", "Orders the carrier confirms itself", "order, carrier and outcome", "hours",
            [(f"{row['orderId']}: {row['carrier']}; {row['outcome']}", row["hours"])
             for row in result["long_running"]["orders"]],
            "From the caller's SendMessage to the end of the order's last execution, on the rehearsal's clock."))
    return trend_page_of(title, summary, runs, trend_window(runs, datetime.now(UTC)), key_field="orderId",
                         tables=messages)
