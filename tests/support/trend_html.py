"""Reads the failure-trend page the way the tests check it: its charts' axes, bars and legends, and its tables.

Parsed with the standard library's HTMLParser, from the file the page writer produced or from the DOM headless
Chromium rendered (both are HTML; the SVG is inline).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser


@dataclass
class Element:
    tag: str
    attrs: dict[str, str]
    text: str = ""
    children: list[Element] = field(default_factory=list)

    def find(self, tag: str, cls: str | None = None) -> list[Element]:
        """Every descendant with this tag (and class)."""
        found = []
        for child in self.children:
            if child.tag == tag and (cls is None or cls in child.attrs.get("class", "").split()):
                found.append(child)
            found.extend(child.find(tag, cls))
        return found

    def all_text(self) -> str:
        return self.text + "".join(child.all_text() for child in self.children)


class _Builder(HTMLParser):
    VOID = frozenset({"meta", "br", "hr", "img", "input", "link"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("#root", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(element)
        if tag not in self.VOID:
            self.stack.append(element)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.stack[-1].children.append(Element(tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag: str) -> None:
        for depth in range(len(self.stack) - 1, 0, -1):
            if self.stack[depth].tag == tag:
                del self.stack[depth:]
                return

    def handle_data(self, data: str) -> None:
        self.stack[-1].text += data


def parse(html: str) -> Element:
    builder = _Builder()
    builder.feed(html)
    builder.close()
    return builder.root


CHARTS = ("executions-by-status", "failures-by-error", "failures-by-step")


def charts(html: str) -> dict[str, Element]:
    """The page's three charts, by id."""
    found = {svg.attrs.get("id", ""): svg for svg in parse(html).find("svg")}
    assert set(CHARTS) <= set(found), f"charts missing: {set(CHARTS) - set(found)}"
    return {chart: found[chart] for chart in CHARTS}


def legend(chart: Element) -> dict[str, int]:
    """Series name -> total, as the chart's legend states it."""
    return {g.attrs["data-series"]: int(g.attrs["data-total"]) for g in chart.find("g", "legend")}


def colours(html: str) -> dict[tuple[str, str], set[str]]:
    """(kind, series) -> every fill it is drawn in, over every bar and legend entry of the page."""
    found: dict[tuple[str, str], set[str]] = {}
    for chart in charts(html).values():
        for bar in chart.find("rect", "bar"):
            found.setdefault((bar.attrs["data-kind"], bar.attrs["data-series"]), set()).add(bar.attrs["fill"].upper())
        for entry in chart.find("g", "legend"):
            (swatch,) = entry.find("rect")
            found.setdefault((entry.attrs["data-kind"], entry.attrs["data-series"]), set()).add(
                swatch.attrs["fill"].upper())
    return found


def tick_labels(chart: Element) -> list[str]:
    return [tick.all_text().strip() for tick in chart.find("g", "tick")]


def table(html: str, table_id: str) -> tuple[list[str], dict[str, int]]:
    """A counts table: its header cells, and its rows as name -> count."""
    (found,) = [t for t in parse(html).find("table") if t.attrs.get("id") == table_id]
    headers = [th.all_text().strip() for th in found.find("th")]
    rows = {}
    for row in found.find("tbody")[0].find("tr"):
        name, count = (td.all_text().strip() for td in row.find("td"))
        rows[name] = int(count)
    return headers, rows
