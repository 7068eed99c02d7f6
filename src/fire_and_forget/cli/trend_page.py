"""The failure-trend page: one self-contained HTML file (inline SVG, no script, no network).

Written by an example's demo from its report and by `ff-ops report --html` from a deployed stack
(trend_report.py). Three charts of executions on one time axis (trend_axis.py), each meaning in one colour on the
whole page, and tables that name what they count: executions, or the pieces of work (messages grouped by their key) with
each key's final outcome counted once.
"""

from __future__ import annotations

import zlib
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from html import escape

from fire_and_forget.cli.trend_axis import Axis, axis, stamp, utc
from fire_and_forget.runtime.records import DEFAULT_KEY_FIELD

WIDTH, HEIGHT, MARGIN = 760, 220, 48
# One colour per meaning on the whole page. The statuses have theirs (Okabe-Ito's green, vermillion, orange and
# pink; grey for still running). Error names and steps take theirs from SERIES_COLOURS, each name its own: blues,
# indigo, sand, olive, wine, yellow and black (mostly Paul Tol's muted set), with no green, red, orange or
# pink, so that no error can be read as a status.
STATUS_COLOURS = {"SUCCEEDED": "#009E73", "FAILED": "#D55E00", "TIMED_OUT": "#E69F00", "ABORTED": "#CC79A7",
                  "RUNNING": "#BBBBBB"}
SERIES_COLOURS = ("#0072B2", "#332288", "#88CCEE", "#DDCC77", "#999933", "#882255", "#000000", "#6699CC",
                  "#F0E442")
OTHER = "other"  # the series that gathers the names beyond SERIES_COLOURS
OTHER_COLOUR = "#777777"
UNSUCCESSFUL = ("FAILED", "TIMED_OUT", "ABORTED")


@dataclass(frozen=True)
class Run:
    """One execution on the page. `key` groups the executions of one piece of work (the message's key, else its
    message id); `duplicate`: it ended as a duplicate delivery, leaving the outcome to another execution."""

    started: datetime
    status: str
    error: str | None = None
    step: str | None = None
    key: str | None = None
    duplicate: bool = False

    @property
    def unsuccessful(self) -> bool:
        return self.status in UNSUCCESSFUL


@dataclass(frozen=True)
class KeyOutcomes:
    """Each key's final outcome, counted once: the status of its last execution that was not a duplicate."""

    outcomes: Counter[str]
    ran_again: int  # keys with more than one such execution: redriven, or resent by their producer
    succeeded_after_running_again: int

    @property
    def total(self) -> int:
        return sum(self.outcomes.values())


def final_outcomes(runs: Iterable[Run]) -> KeyOutcomes:
    """Group executions by key; a key redriven to success counts once, as SUCCEEDED."""
    groups: dict[str, list[Run]] = {}
    for index, run in enumerate(runs):
        groups.setdefault(run.key if run.key is not None else f"#{index}", []).append(run)
    outcomes: Counter[str] = Counter()
    ran_again = succeeded_after = 0
    for group in groups.values():
        owning = sorted((r for r in group if not r.duplicate), key=lambda r: r.started) or sorted(
            group, key=lambda r: r.started)  # only duplicates in the window: the owner started before it
        outcomes[owning[-1].status] += 1
        if len(owning) > 1:
            ran_again += 1
            succeeded_after += owning[-1].status == "SUCCEEDED"
    return KeyOutcomes(outcomes, ran_again, succeeded_after)


@dataclass(frozen=True)
class Table:
    """A table of counts (or of another measure, such as hours) that says what it measures in its last column's
    header."""

    table_id: str
    title: str
    label: str  # the first column: what a row is (status, error, outcome)
    counted: str  # the second column: what is counted (executions, the key's nouns, messages)
    rows: Sequence[tuple[str, int | float]]
    note: str = ""


@dataclass
class Palette:
    """The page's colours by meaning: (kind, name), kind being status, error or step."""

    chosen: dict[tuple[str, str], str] = field(default_factory=dict)

    @classmethod
    def for_names(cls, names: Iterable[tuple[str, str]]) -> Palette:
        """Every status its fixed colour; every other name its own colour, the most frequent first, starting from a
        slot fixed by the name (the same name keeps its colour from page to page while the slots last)."""
        palette = cls()
        free = list(SERIES_COLOURS)
        for (kind, name), _ in Counter(names).most_common():
            if kind == "status" and name in STATUS_COLOURS:
                palette.chosen[(kind, name)] = STATUS_COLOURS[name]
            elif free:
                start = zlib.crc32(f"{kind}:{name}".encode()) % len(SERIES_COLOURS)
                colour = next(c for c in SERIES_COLOURS[start:] + SERIES_COLOURS[:start] if c in free)
                free.remove(colour)
                palette.chosen[(kind, name)] = colour
        return palette

    def colour(self, kind: str, name: str) -> str:
        return self.chosen.get((kind, name), OTHER_COLOUR)

    def series(self, kind: str, name: str) -> tuple[str, str]:
        """(the kind, the name) a bar is drawn as: a name without a colour of its own goes to OTHER."""
        return (kind, name) if (kind, name) in self.chosen else ("other", OTHER)


def stacked_bars(chart_id: str, title: str, time_axis: Axis, rows: Sequence[tuple[datetime, str, str]],
                 palette: Palette) -> str:
    """An SVG of executions per bucket of `time_axis`, stacked by series; `rows` are (start, kind, name)."""
    series = [(moment, *palette.series(kind, name)) for moment, kind, name in rows]
    totals = Counter((kind, name) for _, kind, name in series)
    ranked = [key for key, _ in totals.most_common()]
    counts: dict[int, Counter[tuple[str, str]]] = {}
    for moment, kind, name in series:
        counts.setdefault(time_axis.bucket_of(moment), Counter())[(kind, name)] += 1
    peak = max((sum(c.values()) for c in counts.values()), default=0) or 1
    plot_width, plot = WIDTH - 2 * MARGIN, HEIGHT - 2 * MARGIN
    bar = plot_width / time_axis.buckets
    base = HEIGHT - MARGIN
    parts = [
        f'<svg id="{chart_id}" role="img" aria-label="{escape(title)}" width="{WIDTH}" height="{HEIGHT + 40}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT + 40}" xmlns="http://www.w3.org/2000/svg" '
        f'data-start="{time_axis.start.isoformat()}" data-end="{time_axis.end.isoformat()}" '
        f'data-unit="{time_axis.unit}">',
        f'<line x1="{MARGIN}" y1="{base}" x2="{WIDTH - MARGIN}" y2="{base}" stroke="#444"/>',
        f'<text x="{MARGIN - 6}" y="{MARGIN + 4}" text-anchor="end" font-size="11">{peak}</text>',
        f'<text x="{MARGIN - 6}" y="{base}" text-anchor="end" font-size="11">0</text>',
    ]
    for index in sorted(counts):
        y = float(base)
        start, end = time_axis.bucket_start(index), time_axis.bucket_start(index + 1)
        for kind, name in ranked:
            count = counts[index][(kind, name)]
            if not count:
                continue
            h = count / peak * plot
            y -= h
            parts.append(
                f'<rect class="bar" data-kind="{kind}" data-series="{escape(name)}" data-count="{count}" '
                f'data-start="{start.isoformat()}" x="{MARGIN + index * bar + 0.5:.1f}" y="{y:.1f}" '
                f'width="{max(bar - 1, 0.5):.1f}" height="{h:.1f}" fill="{palette.colour(kind, name)}">'
                f"<title>{escape(name)}: {count} started {start:%H:%M:%S}-{end:%H:%M:%S} UTC</title></rect>"
            )
    for tick in time_axis.ticks():
        x = MARGIN + time_axis.fraction(tick.at) * plot_width
        parts.append(
            f'<g class="tick" data-time="{tick.at.isoformat()}"><line x1="{x:.1f}" y1="{base}" x2="{x:.1f}" '
            f'y2="{base + 4}" stroke="#444"/><text x="{x:.1f}" y="{base + 15}" font-size="11" '
            f'text-anchor="middle">{tick.label}</text></g>'
        )
    parts.append(
        f'<text class="axis-start" x="{MARGIN}" y="{base + 30}" font-size="11">{stamp(time_axis.start)}</text>'
        f'<text class="axis-caption" x="{WIDTH / 2}" y="{base + 30}" font-size="11" text-anchor="middle">'
        f"start time (UTC, {time_axis.unit}); one bar per {_duration(time_axis.bucket_seconds)}</text>"
        f'<text class="axis-end" x="{WIDTH - MARGIN}" y="{base + 30}" font-size="11" text-anchor="end">'
        f"{stamp(time_axis.end)}</text>"
    )
    x = MARGIN
    for kind, name in ranked:
        label = f"{name} ({totals[(kind, name)]})"
        parts.append(
            f'<g class="legend" data-kind="{kind}" data-series="{escape(name)}" data-total="{totals[(kind, name)]}" '
            f'data-colour="{palette.colour(kind, name)}"><rect x="{x}" y="{HEIGHT + 20}" width="12" height="12" '
            f'fill="{palette.colour(kind, name)}"/><text x="{x + 16}" y="{HEIGHT + 30}" font-size="12">'
            f"{escape(label)}</text></g>"
        )
        x += 24 + 7 * len(label)
    if not rows:
        parts.append(f'<text x="{WIDTH / 2}" y="{HEIGHT / 2}" text-anchor="middle">none in the window</text>')
    parts.append("</svg>")
    return "".join(parts)


def _duration(seconds: int) -> str:
    """A bucket's width in words: `second`, `5 seconds`, `hour`, `2 days`."""
    size, unit = next((size, unit) for size, unit in ((86400, "day"), (3600, "hour"), (60, "minute"), (1, "second"))
                      if seconds % size == 0)
    count = seconds // size
    return unit if count == 1 else f"{count} {unit}s"


def _table(table: Table) -> str:
    head = f"<th>{escape(table.label)}</th><th>{escape(table.counted)}</th>"
    body = "".join(f"<tr><td>{escape(str(name))}</td><td>{count}</td></tr>" for name, count in table.rows)
    note = f'<p class="note">{escape(table.note)}</p>' if table.note else ""
    return (f"<h2>{escape(table.title)}</h2>"
            f'<table id="{table.table_id}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{note}')


def key_nouns(key_field: str) -> tuple[str, str]:
    """What the page calls the work one key names, singular and plural: productId ->
    product, products; customerId -> customer, customers; any other field -> `<field> value`, `<field> values`."""
    stem = key_field[:-2] if key_field.endswith("Id") and len(key_field) > 2 else f"{key_field} value"
    return stem, f"{stem}s"


def page(title: str, summary: str, runs: Sequence[Run], window: tuple[datetime, datetime], *,
         key_field: str = DEFAULT_KEY_FIELD, tables: Sequence[Table] = ()) -> str:
    """The page: executions over the window by status, by error and by step; then the final outcome per key and
    the executions' counts; then `tables` (the caller's own, e.g. the demo's messages). `summary` is HTML."""
    time_axis = axis(*window)
    failed = [r for r in runs if r.unsuccessful]
    status_rows = [(r.started, "status", r.status) for r in runs]
    # An execution without an error of its own (the demo names it by its status) is drawn as its status.
    error_rows = [(r.started, *(("error", r.error) if r.error not in (None, r.status) else ("status", r.status)))
                  for r in failed]
    step_rows = [(r.started, "step", r.step or "(none)") for r in failed]
    palette = Palette.for_names((kind, name) for _, kind, name in status_rows + error_rows + step_rows)
    keys = final_outcomes(runs)
    one, noun = key_nouns(key_field)
    again = f"{keys.ran_again} {one if keys.ran_again == 1 else noun} ran more than once (redriven or resent)"
    summary_line = (
        f"Window {stamp(time_axis.start)} to {stamp(time_axis.end)}: {len(runs)} executions, {len(failed)} "
        f"unsuccessful, of {keys.total} {noun}; {again}, {keys.succeeded_after_running_again} of them succeeded "
        "in the end."
    )
    own_tables = [
        Table("keys", f"Final outcome per {one}", "final outcome", noun,
              keys.outcomes.most_common(),
              f"Executions grouped by {key_field} (by message id where a body has none); each counts once, by its "
              f"last execution that was not a duplicate delivery. {again}, "
              f"{keys.succeeded_after_running_again} of them succeeded in the end."),
        Table("executions", "Executions by final status", "status", "executions",
              Counter(r.status for r in runs).most_common()),
        Table("errors", "Unsuccessful executions by error", "error", "executions",
              Counter(name for _, _, name in error_rows).most_common()),
    ]
    sections = [
        "<h2>Executions over time, by status</h2>",
        stacked_bars("executions-by-status", "Executions started per interval, by final status", time_axis,
                     status_rows, palette),
        "<h2>Unsuccessful executions over time, by error</h2>",
        stacked_bars("failures-by-error", "Unsuccessful executions started per interval, by error", time_axis,
                     error_rows, palette),
        "<h2>Unsuccessful executions over time, by step</h2>",
        stacked_bars("failures-by-step", "Unsuccessful executions started per interval, by the step that failed",
                     time_axis, step_rows, palette),
        *(_table(t) for t in [*own_tables, *tables]),
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title><style>"
        "body{font-family:system-ui,sans-serif;margin:2em;color:#222;background:#fff}"
        "table{border-collapse:collapse;margin-bottom:0.5em}td,th{border:1px solid #bbb;padding:4px 10px}"
        "td:last-child{text-align:right}h2{font-size:1.1em;margin-top:1.5em}.note{font-size:0.9em;color:#555}"
        "</style></head><body>"
        f"<h1>{escape(title)}</h1>"
        f'<p id="verdict">{summary}</p><p id="window">{escape(summary_line)}</p>'
        + "".join(sections)
        + "</body></html>\n"
    )


def runs_window(runs: Sequence[Run], otherwise: datetime) -> tuple[datetime, datetime]:
    """The window of a set of executions: the first start to the last (both `otherwise` when there are none)."""
    starts = [utc(r.started) for r in runs] or [utc(otherwise)]
    return min(starts), max(starts)
