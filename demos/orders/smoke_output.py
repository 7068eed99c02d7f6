"""What `smoke` prints: the pass/fail table and cleanup lines, or its --json document (docs/operator-cli.md)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from demos.orders.smoke import SmokeResult
from demos.orders.smoke_watch import Tracked


def render(console: Console, result: SmokeResult) -> None:
    table = Table(title=f"Smoke run {result.run_id}")
    for column in ("order", "check", "result", "detail"):
        table.add_column(column, no_wrap=column != "detail")
    for check in result.checks:
        table.add_row(check.case, check.name, "[green]PASS[/]" if check.passed else "[bold red]FAIL[/]", check.detail)
    console.print(table)
    cleanup = result.cleanup
    console.print(
        f"Removed {cleanup.records_deleted} failure record(s) of this run"
        f"{' and inventory item ' + cleanup.sku if cleanup.sku_removed else ''}; "
        f"{cleanup.foreign_restored} other message(s) of the failure DLQ were read and made visible again.",
        highlight=False,
    )
    for item in cleanup.left:
        console.print(f"[yellow]Left behind:[/] {item}", highlight=False)
    failed = sum(not check.passed for check in result.checks)
    verdict = "[bold green]PASSED[/]" if result.passed else f"[bold red]FAILED[/] ({failed} check(s))"
    timing = f"timed out after {result.timeout_seconds:g} s" if result.timed_out else f"{result.elapsed_seconds:g} s"
    console.print(f"Smoke {verdict} in {timing}.", highlight=False)


class Progress:
    """One line while the run waits, printed only when an order's state changed."""

    def __init__(self, console: Console) -> None:
        self._console = console
        self._last = ""

    def __call__(self, orders: list[Tracked], elapsed: float) -> None:
        line = ", ".join(f"{order.case} {_state(order)}" for order in orders)
        if line != self._last:
            self._console.print(f"{elapsed:6.1f} s  {line}", highlight=False)
            self._last = line


def _state(order: Tracked) -> str:
    view = order.execution
    if view is None:
        return "waiting for the pipe"
    if view.ended and not order.settled:
        return f"{view.status}, reading the failure DLQ"
    return view.status


def document(stack: str, result: SmokeResult) -> dict[str, Any]:
    return {
        "schema": "ff-ops/smoke/v1",
        "stack": stack,
        "runId": result.run_id,
        "passed": result.passed,
        "timedOut": result.timed_out,
        "timeoutSeconds": result.timeout_seconds,
        "elapsedSeconds": result.elapsed_seconds,
        "orders": [
            {
                "case": order.case,
                "orderId": order.order_id,
                "messageId": order.message_id,
                "executionArn": view.arn if (view := order.execution) else None,
                "status": view.status if view else None,
                "statesEntered": view.entered if view else [],
            }
            for order in result.orders
        ],
        "checks": [{"case": c.case, "check": c.name, "passed": c.passed, "detail": c.detail} for c in result.checks],
        "cleanup": {
            "failureRecordsDeleted": result.cleanup.records_deleted,
            "foreignMessagesRestored": result.cleanup.foreign_restored,
            "inventorySku": result.cleanup.sku,
            "inventorySkuRemoved": result.cleanup.sku_removed,
            "left": result.cleanup.left,
        },
    }
