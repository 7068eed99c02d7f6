"""The failure-trend page, rendered by headless Chromium: what a reader sees, not only what the HTML says."""

from __future__ import annotations

import re
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest

from demos.orders.report import trend_page
from tests.support.chromium import chromium


def _result() -> dict[str, Any]:
    """A report with known counts: 6 successes, 3 OutOfStock in ReserveInventory, 2 PaymentDeclined in
    ChargePayment, 1 aborted execution in ArrangeShipping."""
    timeline = [{"t": i * 0.5, "status": "SUCCEEDED", "error": None, "step": None} for i in range(6)]
    timeline += [
        {"t": 1.0 + i, "status": "FAILED", "error": "OutOfStock", "step": "ReserveInventory"} for i in range(3)
    ]
    timeline += [{"t": 2.2, "status": "FAILED", "error": "PaymentDeclined", "step": "ChargePayment"}] * 2
    timeline += [{"t": 4.0, "status": "ABORTED", "error": "ABORTED", "step": "ArrangeShipping"}]
    return {
        "messages_in": 12,
        "options": {"chaos": True, "seed": 3},
        "timeline": timeline,
        "outcomes": {"succeeded": 6, "failed, compensated, in failure DLQ": 5, "failed execution, input kept": 1},
        "errors": {"OutOfStock": 3, "PaymentDeclined": 2, "ABORTED": 1},
        "conservation": {"in": 12, "accounted": 12, "lost": 0, "balanced": True, "saga_violations": []},
    }


@pytest.fixture
def page(tmp_path: Path) -> Path:
    path = tmp_path / "demo-report.html"
    path.write_text(trend_page(_result()), encoding="utf-8")
    return path


def test_the_rendered_page_shows_the_counts_by_error_status_and_step(page: Path, tmp_path: Path) -> None:
    dom = chromium(tmp_path, "--dump-dom", page.as_uri()).stdout

    def legend(chart: str) -> dict[str, int]:
        svg = re.search(rf'<svg id="{chart}".*?</svg>', dom, flags=re.S)
        assert svg is not None, f"{chart} not rendered"
        found = re.findall(r'class="legend" data-series="([^"]+)" data-total="(\d+)"', svg.group(0))
        return {name: int(total) for name, total in found}

    assert legend("executions-by-status") == {"SUCCEEDED": 6, "FAILED": 5, "ABORTED": 1}
    assert legend("failures-by-error") == {"OutOfStock": 3, "PaymentDeclined": 2, "ABORTED": 1}
    assert legend("failures-by-step") == {"ReserveInventory": 3, "ChargePayment": 2, "ArrangeShipping": 1}
    assert "OutOfStock (3)" in dom and "BALANCED" in dom
    assert re.search(r"<td>failed, compensated, in failure DLQ</td><td>5</td>", dom)
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
    for hex_colour in ("009E73", "D55E00", "0072B2"):  # SUCCEEDED, FAILED, the first error series
        assert bytes.fromhex(hex_colour) in colours, f"no #{hex_colour} pixel: a chart did not render"
