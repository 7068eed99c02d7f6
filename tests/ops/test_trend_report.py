"""`ff-ops report --html` on the offline deployment: the failure-trend page drawn from the stack's own records.

Order numbers are 74xx (the package's deployment keeps earlier tests' executions; `--since` leaves those out).
"""

from __future__ import annotations

import random
from datetime import UTC, datetime
from pathlib import Path

from typer.testing import CliRunner

from demos.orders.samples import OrderKind, make_order
from fire_and_forget.rehearsal.faults import Fault, FaultKind
from fire_and_forget.rehearsal.rehearsal import Rehearsal
from tests.ops.helpers import ff_ops, restock
from tests.support import trend_html
from tests.support.chromium import rendered_dom


def _send(aws: Rehearsal, kind: OrderKind, number: int) -> str | None:
    sample = make_order(kind, number, random.Random(number))
    aws.send(sample.body)
    return sample.order_id


def _legend(dom: str, chart: str) -> dict[str, int]:
    return trend_html.legend(trend_html.charts(dom)[chart])


def test_the_page_shows_the_windows_executions_by_status_error_and_step(
    aws: Rehearsal, cli: CliRunner, tmp_path: Path
) -> None:
    # Given, after a point in time: two good orders, one nobody ships to, one malformed, one aborted in ChargePayment
    aws.advance(1)  # a moment after the earlier tests' executions (the clock stands still while work runs)
    since = datetime.now(UTC).isoformat()
    _send(aws, OrderKind.VALID, 7401)
    _send(aws, OrderKind.VALID, 7402)
    _send(aws, OrderKind.UNSERVED, 7403)
    _send(aws, OrderKind.MALFORMED, 7404)
    aws.run()
    held = _send(aws, OrderKind.VALID, 7405)
    aws.faults.add(Fault("ChargePayment", FaultKind.HANG, key=held))
    aws.drain()
    (hung,) = aws.wait_for_hang()
    aws.abort(hung)
    aws.faults.release()
    aws.run()

    # When the operator writes the report for that window
    page = tmp_path / "trends.html"
    code, doc = ff_ops(cli, "report", "--html", str(page), "--since", since)

    # Then the document counts exactly the window's executions, with the recorded errors and the aborted one
    assert code == 0 and doc["schema"] == "ff-ops/report/v1" and doc["html"] == str(page)
    assert doc["outcomes"] == {"SUCCEEDED": 2, "FAILED": 2, "ABORTED": 1}
    # (the aborted one by the error of the record the Reconciler wrote for it, in ChargePayment)
    assert doc["errors"] == {"ShippingUnavailable": 1, "InvalidOrder": 1, "Aborted": 1}
    assert doc["truncated"] is False
    # And the page, rendered by Chromium, shows the same by status, by error and by the step that failed
    dom = rendered_dom(tmp_path, page)
    assert _legend(dom, "executions-by-status") == {"SUCCEEDED": 2, "FAILED": 2, "ABORTED": 1}
    assert _legend(dom, "failures-by-error") == {"ShippingUnavailable": 1, "InvalidOrder": 1, "Aborted": 1}
    assert _legend(dom, "failures-by-step") == {"ArrangeShipping": 1, "ReserveInventory": 1, "ChargePayment": 1}
    assert "Fire-and-forget failure trends: FireAndForget" in dom
    # on one axis for all three charts: the window asked for, from --since to the report's time, in UTC clock times
    # (the rehearsal's clock stands still while work runs: a window shorter than 10 s is drawn 10 s long)
    ((start, end),) = {(c.attrs["data-start"], c.attrs["data-end"]) for c in trend_html.charts(dom).values()}
    assert datetime.fromisoformat(start) == datetime.fromisoformat(since)
    assert datetime.fromisoformat(end) >= datetime.fromisoformat(doc["until"])
    labels = trend_html.tick_labels(trend_html.charts(dom)["failures-by-step"])
    assert labels and all(len(label) == 8 and label.count(":") == 2 for label in labels)  # a short window: seconds


def test_a_window_with_more_executions_than_read_says_so(aws: Rehearsal, cli: CliRunner, tmp_path: Path) -> None:
    # Given three executions in the window
    aws.advance(1)  # a moment after the earlier tests' executions (the clock stands still while work runs)
    since = datetime.now(UTC).isoformat()
    for number in (7411, 7412, 7413):
        _send(aws, OrderKind.VALID, number)
    aws.run()

    # When the report may read only two
    code, doc = ff_ops(cli, "report", "--html", str(tmp_path / "p.html"), "--since", since, "--max-executions", "2")

    # Then it draws the newest two and says that it stopped
    assert code == 0 and doc["outcomes"] == {"SUCCEEDED": 2} and doc["truncated"] is True
    assert "more started than were read" in (tmp_path / "p.html").read_text(encoding="utf-8")


def test_a_failure_no_longer_in_the_dlq_still_shows_its_error_and_step(
    aws: Rehearsal, cli: CliRunner, tmp_path: Path
) -> None:
    # Given an order that failed OutOfStock and whose record the operator has since discarded
    aws.advance(1)  # a moment after the earlier tests' executions (the clock stands still while work runs)
    since = datetime.now(UTC).isoformat()
    order_id = _send(aws, OrderKind.OUT_OF_STOCK, 7421)
    aws.run()
    assert order_id is not None
    code, _ = ff_ops(cli, "failures", "discard", "--order-id", order_id, "--yes", "--log", str(tmp_path / "log"))
    assert code == 0

    # When the report covers it
    code, doc = ff_ops(cli, "report", "--html", str(tmp_path / "p.html"), "--since", since)

    # Then the execution's own history names the error and the step that failed
    assert code == 0 and doc["errors"] == {"OutOfStock": 1}
    dom = rendered_dom(tmp_path, tmp_path / "p.html")
    assert _legend(dom, "failures-by-step") == {"ReserveInventory": 1}


def test_an_order_redriven_to_success_counts_once_as_succeeded(aws: Rehearsal, cli: CliRunner, tmp_path: Path) -> None:
    # Given an order that failed OutOfStock, a good one, and, after a restock, the failed one redriven and succeeded
    aws.advance(1)  # a moment after the earlier tests' executions (the clock stands still while work runs)
    since = datetime.now(UTC).isoformat()
    failed = _send(aws, OrderKind.OUT_OF_STOCK, 7431)
    _send(aws, OrderKind.VALID, 7432)
    aws.run()
    assert failed is not None
    restock(aws)
    code, _ = ff_ops(cli, "failures", "redrive", "--key", failed, "--yes")
    assert code == 0
    aws.run()

    # When the operator writes the report for that window
    page = tmp_path / "trends.html"
    code, doc = ff_ops(cli, "report", "--html", str(page), "--since", since)

    # Then three executions ran, one FAILED; but of the two orders both succeeded, one of them after running again
    assert code == 0 and doc["outcomes"] == {"SUCCEEDED": 2, "FAILED": 1}
    assert doc["keys"] == {"total": 2, "outcomes": {"SUCCEEDED": 2}, "ranMoreThanOnce": 1,
                             "succeededAfterRunningAgain": 1}
    html = page.read_text(encoding="utf-8")
    assert trend_html.table(html, "keys") == (["final outcome", "orders"], {"SUCCEEDED": 2})
    assert trend_html.table(html, "executions") == (["status", "executions"], {"SUCCEEDED": 2, "FAILED": 1})
    assert "1 order ran more than once (redriven or resent), 1 of them succeeded in the end" in html


def test_a_duplicate_delivery_of_a_failed_order_does_not_make_it_succeed(
    aws: Rehearsal, cli: CliRunner, tmp_path: Path
) -> None:
    # Given an order nobody ships to, delivered twice by SQS: one execution fails, its twin ends as a duplicate
    aws.advance(1)  # a moment after the earlier tests' executions (the clock stands still while work runs)
    since = datetime.now(UTC).isoformat()
    aws.pipe.duplicate_next = 1
    _send(aws, OrderKind.UNSERVED, 7441)
    aws.run()

    # When the report covers them
    code, doc = ff_ops(cli, "report", "--html", str(tmp_path / "p.html"), "--since", since)

    # Then two executions, one SUCCEEDED (the ignored duplicate), and the order's outcome is FAILED, once
    assert code == 0 and doc["outcomes"] == {"SUCCEEDED": 1, "FAILED": 1}
    assert doc["keys"]["outcomes"] == {"FAILED": 1} and doc["keys"]["ranMoreThanOnce"] == 0
