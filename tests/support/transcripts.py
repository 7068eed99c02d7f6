"""The transcripts the documents quote, kept true: written by the tests' own runs, compared, updated on request.

A quoted transcript lives in docs/transcripts/<name>.txt, and each document that quotes it holds it verbatim in the
```text block right after a marker line `<!-- transcript: <name> -->`. A test that runs the commands calls `check`
with what they printed: the run and the file must agree once their volatile parts (times, ids, durations, paths) are
normalized by VOLATILE. With FF_UPDATE_TRANSCRIPTS=1 a disagreement rewrites the file and every quote of it instead
of failing (docs/testing.md, "Quoted transcripts"). tests/docs/test_transcripts.py holds every quote to its file.
"""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

REPO = Path(__file__).resolve().parents[2]
TRANSCRIPTS = REPO / "docs" / "transcripts"
UPDATE_VARIABLE = "FF_UPDATE_TRANSCRIPTS"
MARKER = re.compile(r"<!-- transcript: ([a-z0-9-]+) -->")
# What changes from run to run without meaning anything, and what stands for it when runs are compared.
VOLATILE = [
    (re.compile(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(\.\d+)?Z?"), "<time>"),
    (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), "<uuid>"),
    (re.compile(r"pipe-[0-9a-f]{32}"), "pipe-<id>"),
    (re.compile(r"(Table[0-9A-F]{8})-[0-9A-Z]{12}"), r"\1-<suffix>"),  # CloudFormation's physical-name suffix
    (re.compile(r"│\s*\d+\s*│(?=\s*$)", flags=re.M), "│ <age> │"),  # status's last column: an age in seconds
    (re.compile(r"seed=(\d+), [\d.]+ s\b"), r"seed=\1, <seconds> s"),  # the demo's elapsed time
    (re.compile(r"^─+ (.+?) ─+$", flags=re.M), r"── \1 ──"),  # a rule's padding follows its title's length
    (re.compile(r"clock \d+ min past"), "clock <minutes> min past"),  # how far the demo's clock had to travel
    (re.compile(r"^executions: \d+ of \d+ finished \(\d+ s\)\n", flags=re.M), ""),  # progress, when slow
]
# Documents that may quote transcripts.
DOCUMENTS = ("README.md", "CONTRIBUTING.md", "docs")


def updating() -> bool:
    return os.environ.get(UPDATE_VARIABLE) == "1"


def normalized(text: str) -> str:
    """The text without its volatile parts, lines sorted: executions end, and are listed, in any order."""
    for pattern, replacement in VOLATILE:
        text = pattern.sub(replacement, text)
    return "\n".join(sorted(line.rstrip() for line in text.strip().splitlines()))


def as_transcript(steps: list[tuple[str, str]]) -> str:
    """`$ command` then its output, for each step, a blank line between; no trailing spaces."""
    text = "\n\n".join(f"$ {command}\n{output.rstrip()}" for command, output in steps)
    return "\n".join(line.rstrip() for line in text.splitlines()) + "\n"


@dataclass(frozen=True)
class Quote:
    """A quoted transcript: the document, the transcript's name, the block's text and its lines (0-based, the
    block's content only, end exclusive)."""

    document: Path
    name: str
    text: str
    lines: tuple[int, int]


def documents() -> list[Path]:
    found: list[Path] = []
    for entry in DOCUMENTS:
        path = REPO / entry
        found += sorted(path.rglob("*.md")) if path.is_dir() else [path]
    return found


def text_blocks(document: Path) -> list[tuple[str | None, str, tuple[int, int]]]:
    """Every ```text block: the transcript marker right before it (or None), its content, its content's lines."""
    tokens = MarkdownIt().parse(document.read_text(encoding="utf-8"))
    found = []
    for previous, token in zip([None, *tokens], tokens, strict=False):
        if token.type != "fence" or token.info.strip() != "text" or token.map is None:
            continue
        marker = MARKER.fullmatch(previous.content.strip()) if previous and previous.type == "html_block" else None
        start, end = token.map
        found.append((marker.group(1) if marker else None, token.content, (start + 1, end - 1)))
    return found


def quotes(document: Path) -> list[Quote]:
    return [Quote(document, name, text, lines) for name, text, lines in text_blocks(document) if name]


def path_of(name: str) -> Path:
    return TRANSCRIPTS / f"{name}.txt"


def requote(name: str) -> list[Path]:
    """Put the file's text into every block that quotes it; the documents changed."""
    text = path_of(name).read_text(encoding="utf-8")
    changed = []
    for document in documents():
        for quote in reversed(quotes(document)):  # from the end, so earlier blocks keep their line numbers
            if quote.name == name and quote.text != text:
                lines = document.read_text(encoding="utf-8").splitlines(keepends=True)
                lines[quote.lines[0]:quote.lines[1]] = [text]
                document.write_text("".join(lines), encoding="utf-8")
                changed.append(document)
    return changed


def check(name: str, produced: str) -> None:
    """`produced` (this run's transcript) against docs/transcripts/<name>.txt, volatile parts aside; with
    FF_UPDATE_TRANSCRIPTS=1 a difference rewrites the file and its quotes instead of failing."""
    path = path_of(name)
    kept = path.read_text(encoding="utf-8") if path.exists() else ""
    if normalized(kept) == normalized(produced):
        return
    if updating():
        TRANSCRIPTS.mkdir(exist_ok=True)
        path.write_text(produced, encoding="utf-8")
        requote(name)
        return
    diff = "\n".join(difflib.unified_diff(normalized(kept).splitlines(), normalized(produced).splitlines(),
                                          f"{path.relative_to(REPO)} (normalized)", "this run (normalized)",
                                          lineterm=""))
    pytest.fail(f"docs/transcripts/{name}.txt is not what this run printed; if the change is meant, run "
                f"`make transcripts` ({UPDATE_VARIABLE}=1) and review the diff:\n{diff}", pytrace=False)
