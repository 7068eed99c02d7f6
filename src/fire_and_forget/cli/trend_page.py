"""The failure-trend page: one self-contained HTML file (inline SVG, no script, no network).

Written by the demo from its report (`trend_page`) and by `ff-ops report --html` from a deployed stack (`page`).
"""

from __future__ import annotations

from collections import Counter
from html import escape
from typing import Any

BUCKETS = 20
WIDTH, HEIGHT, MARGIN = 720, 220, 40
# Colour-blind-safe (Okabe-Ito), fixed for the statuses so that a reader learns them once.
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"]
STATUS_COLOURS = {"SUCCEEDED": "#009E73", "FAILED": "#D55E00", "ABORTED": "#CC79A7", "TIMED_OUT": "#E69F00"}


def _buckets(times: list[float]) -> tuple[float, list[int]]:
    """The bucket width (seconds) and each time's bucket."""
    end = max(times, default=0.0)
    width = max(end / BUCKETS, 0.001) if end > 0 else 1.0
    return width, [min(int(t / width), BUCKETS - 1) for t in times]


def stacked_bars(
    chart_id: str, title: str, rows: list[tuple[float, str]], colours: dict[str, str] | None = None
) -> str:
    """An SVG of counts per time bucket, stacked by series; `rows` are (seconds since the first start, series)."""
    width, indexes = _buckets([t for t, _ in rows])
    totals = Counter(series for _, series in rows)
    ranked = [name for name, _ in totals.most_common()]
    colour = {name: (colours or {}).get(name, PALETTE[i % len(PALETTE)]) for i, name in enumerate(ranked)}
    counts: dict[int, Counter[str]] = {}
    for index, (_, series) in zip(indexes, rows, strict=True):
        counts.setdefault(index, Counter())[series] += 1
    peak = max((sum(c.values()) for c in counts.values()), default=0) or 1
    bar = (WIDTH - 2 * MARGIN) / BUCKETS
    plot = HEIGHT - 2 * MARGIN
    parts = [
        f'<svg id="{chart_id}" role="img" aria-label="{escape(title)}" width="{WIDTH}" height="{HEIGHT + 30}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT + 30}" xmlns="http://www.w3.org/2000/svg">',
        f'<line x1="{MARGIN}" y1="{HEIGHT - MARGIN}" x2="{WIDTH - MARGIN}" y2="{HEIGHT - MARGIN}" stroke="#444"/>',
        f'<text x="{MARGIN - 6}" y="{MARGIN + 4}" text-anchor="end" font-size="11">{peak}</text>',
        f'<text x="{MARGIN - 6}" y="{HEIGHT - MARGIN}" text-anchor="end" font-size="11">0</text>',
    ]
    for index in sorted(counts):
        y = float(HEIGHT - MARGIN)
        for name in ranked:
            count = counts[index][name]
            if not count:
                continue
            h = count / peak * plot
            y -= h
            parts.append(
                f'<rect class="bar" data-series="{escape(name)}" data-count="{count}" '
                f'x="{MARGIN + index * bar + 1:.1f}" y="{y:.1f}" width="{bar - 2:.1f}" height="{h:.1f}" '
                f'fill="{colour[name]}"><title>{escape(name)}: {count} '
                f"at {index * width:.1f}-{(index + 1) * width:.1f} s</title></rect>"
            )
    parts.append(
        f'<text x="{MARGIN}" y="{HEIGHT - MARGIN + 16}" font-size="11">0 s</text>'
        f'<text x="{WIDTH - MARGIN}" y="{HEIGHT - MARGIN + 16}" font-size="11" text-anchor="end">'
        f"{width * BUCKETS:.1f} s after the first execution started</text>"
    )
    x = MARGIN
    for name in ranked:
        label = f"{name} ({totals[name]})"
        parts.append(
            f'<g class="legend" data-series="{escape(name)}" data-total="{totals[name]}">'
            f'<rect x="{x}" y="{HEIGHT + 4}" width="12" height="12" fill="{colour[name]}"/>'
            f'<text x="{x + 16}" y="{HEIGHT + 14}" font-size="12">{escape(label)}</text></g>'
        )
        x += 24 + 7 * len(label)
    if not rows:
        parts.append(f'<text x="{WIDTH / 2}" y="{HEIGHT / 2}" text-anchor="middle">none</text>')
    parts.append("</svg>")
    return "".join(parts)


def _table(table_id: str, headers: tuple[str, ...], rows: list[tuple[Any, ...]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{escape(str(cell))}</td>" for cell in row) + "</tr>" for row in rows)
    return f'<table id="{table_id}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def page(title: str, summary: str, timeline: list[dict[str, Any]], outcomes: list[tuple[str, int]],
         errors: list[tuple[str, int]]) -> str:
    """The page: executions over time by status, failures by error and by step, and the two tables.

    `timeline` holds one {"t": seconds since the first start, "status", "error", "step"} per execution; `summary` is
    a sentence of plain text shown under the title.
    """
    failed = [e for e in timeline if e["status"] != "SUCCEEDED"]
    sections = [
        "<h2>Executions over time, by status</h2>",
        stacked_bars(
            "executions-by-status",
            "Executions started per interval, by final status",
            [(e["t"], e["status"]) for e in timeline],
            STATUS_COLOURS,
        ),
        "<h2>Failures over time, by error</h2>",
        stacked_bars(
            "failures-by-error",
            "Unsuccessful executions per interval, by error",
            [(e["t"], e["error"] or e["status"]) for e in failed],
        ),
        "<h2>Failures over time, by step</h2>",
        stacked_bars(
            "failures-by-step",
            "Unsuccessful executions per interval, by the step that failed",
            [(e["t"], e["step"] or "(none)") for e in failed],
        ),
        "<h2>Where every message ended</h2>",
        _table("outcomes", ("outcome", "messages"), outcomes),
        "<h2>Failures by error</h2>",
        _table("errors", ("error", "messages"), errors),
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title><style>"
        "body{font-family:system-ui,sans-serif;margin:2em;color:#222;background:#fff}"
        "table{border-collapse:collapse;margin-bottom:1em}td,th{border:1px solid #bbb;padding:4px 10px}"
        "td:last-child{text-align:right}h2{font-size:1.1em;margin-top:1.5em}"
        "</style></head><body>"
        f"<h1>{escape(title)}</h1>"
        f'<p id="verdict">{summary} {len(timeline)} executions, {len(failed)} unsuccessful.</p>'
        + "".join(sections)
        + "</body></html>\n"
    )
