"""Prints the demo's report the way an operator wants to read it; plain text when not on a terminal."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from offline.cost import LAMBDA_BILLED_MS, PRICES, PRICES_READ_ON, REGION


def _counts(title: str, label: str, counts: dict[str, int]) -> Table:
    """Messages per key, most first."""
    table = Table(title=title)
    table.add_column(label)
    table.add_column("messages", justify="right")
    for key, count in sorted(counts.items(), key=lambda item: -item[1]):
        table.add_row(escape(key), str(count))
    return table


def render(console: Console, result: dict[str, Any]) -> None:
    opts = result["options"]
    console.print()
    console.rule(f"Fire-and-forget offline demo: {result['messages_in']} messages, chaos={opts['chaos']}, "
                 f"seed={opts['seed']}, {result['elapsed_seconds']} s")
    console.print(_counts("Where every message ended", "outcome", result["outcomes"]))
    console.print(_counts("Failures by error", "error", result["errors"]))

    sample = Table(title="First failure-DLQ entries")
    for column in ("orderId", "error", "failedState", "manualRepair"):
        sample.add_column(column)
    for entry in result["failure_dlq_sample"]:
        sample.add_row(*(escape(str(entry[column])) for column in ("orderId", "error", "failedState", "manualRepair")))
    console.print(sample)

    notes = result["notifications"]
    console.print(f"Notifications published to the alerts topic: {notes['count']}")
    for subject in notes["subjects"]:
        console.print(f"  - {escape(subject)}")

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
                  f"sources: {', '.join(sorted({p.source for p in PRICES.values()}))})")
