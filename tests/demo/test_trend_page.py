"""The failure-trend page: its axis, colours and tables parsed from the HTML it writes, and rendered by headless
Chromium (what a reader sees, not only what the HTML says)."""

from __future__ import annotations

import re
import struct
import zlib
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from demos.orders.report import trend_page
from fire_and_forget.cli import TrendRun
from fire_and_forget.cli import trend_page as page_of
from fire_and_forget.cli.trend_axis import axis
from tests.support import trend_html
from tests.support.chromium import chromium

START = datetime(2026, 12, 1, 16, 4, 36, tzinfo=UTC)


def _row(seconds: float, status: str, order: str, error: str | None = None, step: str | None = None,
         duplicate: bool = False) -> dict[str, Any]:
    return {"start": (START + timedelta(seconds=seconds)).isoformat(), "status": status, "error": error,
            "step": step, "messageId": f"m-{order}-{seconds}", "order": order, "duplicate": duplicate}


def _result() -> dict[str, Any]:
    """A report with known counts, over 34 seconds: 6 orders that succeeded (one of them delivered twice by SQS),
    3 OutOfStock in ReserveInventory (one of them redriven after a restock, then SUCCEEDED), 2 PaymentDeclined in
    ChargePayment, 1 aborted execution in ArrangeShipping."""
    timeline = [_row(i * 0.5, "SUCCEEDED", f"ord-{i}") for i in range(6)]
    timeline.append(_row(0.7, "SUCCEEDED", "ord-0", duplicate=True))
    timeline += [_row(1.0 + i, "FAILED", f"ord-1{i}", "OutOfStock", "ReserveInventory") for i in range(3)]
    timeline += [_row(2.2 + i / 10, "FAILED", f"ord-2{i}", "PaymentDeclined", "ChargePayment") for i in range(2)]
    timeline.append(_row(4.0, "ABORTED", "ord-30", "ABORTED", "ArrangeShipping"))  # named by its status
    timeline.append(_row(34.0, "SUCCEEDED", "ord-10"))  # the redrive of ord-10, after the restock
    return {
        "messages_in": 12,
        "options": {"chaos": True, "seed": 3},
        "timeline": timeline,
        "outcomes": {"succeeded": 7, "failed, compensated, in failure DLQ": 4, "failed execution, input kept": 1},
        "errors": {"OutOfStock": 2, "PaymentDeclined": 2, "ABORTED": 1},
        "conservation": {"in": 12, "accounted": 12, "lost": 0, "balanced": True, "saga_violations": []},
    }


@pytest.fixture
def page(tmp_path: Path) -> Path:
    path = tmp_path / "demo-report.html"
    path.write_text(trend_page(_result()), encoding="utf-8")
    return path


def test_every_chart_is_drawn_on_one_utc_axis_with_clock_times(page: Path) -> None:
    charts = trend_html.charts(page.read_text(encoding="utf-8"))
    # One window for all three: from the first execution's start to the last's, in UTC
    assert {(c.attrs["data-start"], c.attrs["data-end"]) for c in charts.values()} == {
        (START.isoformat(), (START + timedelta(seconds=34)).isoformat())}
    for chart in charts.values():
        # A 34-second window counts in seconds: clock times every 5 s, the same on every chart
        assert trend_html.tick_labels(chart) == ["16:04:40", "16:04:45", "16:04:50", "16:04:55", "16:05:00",
                                                 "16:05:05", "16:05:10"]
        assert chart.find("text", "axis-start")[0].all_text() == "2026-12-01 16:04:36Z"
        assert chart.find("text", "axis-end")[0].all_text() == "2026-12-01 16:05:10Z"
        assert "UTC" in chart.find("text", "axis-caption")[0].all_text()


@pytest.mark.parametrize(("length", "unit", "labels"), [
    (timedelta(seconds=40), "seconds", r"\d\d:\d\d:\d\d"),
    (timedelta(hours=3), "minutes", r"\d\d:\d\d"),
    (timedelta(hours=24), "hours", r"\d\d:\d\d|\d\d-\d\d"),
    (timedelta(days=20), "days", r"\d\d-\d\d"),
])
def test_the_axis_unit_follows_the_window(length: timedelta, unit: str, labels: str) -> None:
    drawn = axis(START, START + length)
    assert drawn.unit == unit
    ticks = drawn.ticks()
    assert 2 <= len(ticks) <= 9 and all(re.fullmatch(labels, tick.label) for tick in ticks)
    assert drawn.buckets <= 41 and drawn.first_bucket <= START


def test_a_day_long_window_labels_midnight_with_its_date() -> None:
    labels = [tick.label for tick in axis(START, START + timedelta(hours=24)).ticks()]
    assert "12-02" in labels and "21:00" in labels


def test_one_colour_per_meaning_across_the_page(page: Path) -> None:
    drawn = trend_html.colours(page.read_text(encoding="utf-8"))
    # Each meaning (a status, an error, a step) is drawn in one colour wherever it appears
    assert all(len(fills) == 1 for fills in drawn.values()), drawn
    # and no two meanings share one: green is SUCCEEDED only, never an error or a step
    meaning_of = {}
    for meaning, (fill,) in drawn.items():
        assert fill not in meaning_of, f"{meaning} and {meaning_of.get(fill)} are both {fill}"
        meaning_of[fill] = meaning
    assert meaning_of["#009E73"] == ("status", "SUCCEEDED") and meaning_of["#D55E00"] == ("status", "FAILED")
    # An execution without an error of its own is drawn, by error too, as its status, in the status's colour
    assert drawn[("status", "ABORTED")] == {"#CC79A7"} and ("error", "ABORTED") not in drawn


def test_many_error_names_never_take_a_status_colour() -> None:
    runs = [TrendRun(START, "FAILED", f"Error{i}", f"Step{i % 3}", f"o{i}") for i in range(20)]
    runs += [TrendRun(START, status, None, None, f"s-{status}") for status in ("SUCCEEDED", "TIMED_OUT", "RUNNING")]
    drawn = trend_html.colours(page_of("t", "", runs, (START, START + timedelta(minutes=1))))
    status_fills = {next(iter(f)) for (kind, _), f in drawn.items() if kind == "status"}
    other_fills = {next(iter(f)) for (kind, _), f in drawn.items() if kind != "status"}
    assert len(status_fills) == 4 and not status_fills & other_fills
    # Beyond the palette, the rarest names are drawn together as one "other" series, in a colour of its own
    assert ("other", "other") in drawn


def test_the_tables_say_what_they_count(page: Path) -> None:
    html = page.read_text(encoding="utf-8")
    assert trend_html.table(html, "keys")[0] == ["final outcome", "orders"]
    assert trend_html.table(html, "executions")[0] == ["status", "executions"]
    assert trend_html.table(html, "errors")[0] == ["error", "executions"]
    assert trend_html.table(html, "messages")[0] == ["outcome", "messages"]
    # 14 executions: 8 SUCCEEDED (the duplicate and the redrive among them), 5 FAILED, 1 ABORTED
    assert trend_html.table(html, "executions")[1] == {"SUCCEEDED": 8, "FAILED": 5, "ABORTED": 1}


def test_an_order_redriven_to_success_counts_once_as_succeeded(page: Path) -> None:
    html = page.read_text(encoding="utf-8")
    # 12 orders: ord-10 failed, was redriven and succeeded; ord-0's duplicate delivery decides nothing
    assert trend_html.table(html, "keys")[1] == {"SUCCEEDED": 7, "FAILED": 4, "ABORTED": 1}
    window = trend_html.parse(html).find("p")[1].all_text()
    assert "of 12 orders; 1 order ran more than once (redriven or resent), 1 of them succeeded in the end" in window


def test_the_rendered_page_shows_the_counts_by_error_status_and_step(page: Path, tmp_path: Path) -> None:
    dom = chromium(tmp_path, "--dump-dom", page.as_uri()).stdout
    charts = trend_html.charts(dom)
    assert trend_html.legend(charts["executions-by-status"]) == {"SUCCEEDED": 8, "FAILED": 5, "ABORTED": 1}
    assert trend_html.legend(charts["failures-by-error"]) == {"OutOfStock": 3, "PaymentDeclined": 2, "ABORTED": 1}
    assert trend_html.legend(charts["failures-by-step"]) == {"ReserveInventory": 3, "ChargePayment": 2,
                                                             "ArrangeShipping": 1}
    # The reader sees clock times under every chart
    assert all(trend_html.tick_labels(chart)[0] == "16:04:40" for chart in charts.values())
    assert "OutOfStock (3)" in dom and "BALANCED" in dom
    assert re.search(r"<td>failed, compensated, in failure DLQ</td><td>4</td>", dom)
    assert "http" not in page.read_text(encoding="utf-8").replace("http://www.w3.org/2000/svg", "")  # no network


def _pixels(png: bytes) -> tuple[int, int, list[bytes]]:
    """Width, height and the unfiltered rows of an 8-bit RGB(A) PNG (what Chromium writes)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    offset, data, width, height, channels = 8, b"", 0, 0, 0
    while offset < len(png):
        length, kind = struct.unpack(">I4s", png[offset : offset + 8])
        chunk = png[offset + 8 : offset + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", chunk[:10])
            assert depth == 8 and colour in (2, 6)
            channels = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            data += chunk
        offset += 12 + length
    raw, stride, rows, previous = zlib.decompress(data), width * channels, [], bytes(width * channels)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up, corner = previous[i], previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 255
            elif kind == 2:
                line[i] = (line[i] + up) & 255
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 255
        rows.append(bytes(line[j : j + 3]) for j in range(0, stride, channels))
        rows[-1] = b"".join(rows[-1])
        previous = bytes(line)
    return width, height, rows


def test_a_screenshot_of_the_page_shows_the_chart_colours(page: Path, tmp_path: Path) -> None:
    shot = tmp_path / "shot.png"
    chromium(tmp_path, f"--screenshot={shot}", "--window-size=800,1400", page.as_uri())
    width, height, rows = _pixels(shot.read_bytes())
    colours = {rows[y][x : x + 3] for y in range(0, height, 2) for x in range(0, width * 3, 6)}
    assert len(colours) > 8, "the screenshot is blank"
    drawn = trend_html.colours(page.read_text(encoding="utf-8"))
    (out_of_stock,) = drawn[("error", "OutOfStock")]
    for hex_colour in ("#009E73", "#D55E00", out_of_stock):  # SUCCEEDED, FAILED, the most frequent error
        assert bytes.fromhex(hex_colour[1:]) in colours, f"no {hex_colour} pixel: a chart did not render"
