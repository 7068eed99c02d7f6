"""The commands the documents tell a reader to type work after `make install`, which puts no uv on PATH.

`make install` keeps its tools in the checkout: the venv's programs (.venv/bin: ff-ops, python, pytest, uv) and
.tools/. So the documents suggest `.venv/bin/<program>` or a make target, never `uv run`, which needs a uv of the
reader's own. docs/performance.md is left out: `make bench` writes it, quoting the command of the run it measured.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.transcripts import REPO, documents

GENERATED = {REPO / "docs" / "performance.md"}
SUGGESTING = [d for d in documents() if d not in GENERATED]
# A program of the venv a document names: .venv/bin/ff-ops, .venv/bin/python, ...
VENV_PROGRAM = re.compile(r"(?<![\w/])(\.venv/bin/[\w.-]+)")
# `uv run ...` or `uv sync` as a command: at the start of a code span or of a line of a code block
UV_COMMAND = re.compile(r"(?:`|^\s*(?:\$ )?)uv (?:run|sync)\b", flags=re.M)


@pytest.mark.parametrize("document", SUGGESTING, ids=lambda p: p.relative_to(REPO).as_posix())
def test_no_document_suggests_uv_run(document: Path) -> None:
    found = [line for line in document.read_text(encoding="utf-8").splitlines() if UV_COMMAND.search(line)]
    assert found == [], f"{document.name} suggests uv, which make install does not put on PATH: {found}"


@pytest.mark.parametrize("document", SUGGESTING, ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_venv_program_a_document_names_exists(document: Path) -> None:
    named = set(VENV_PROGRAM.findall(document.read_text(encoding="utf-8")))
    assert sorted(p for p in named if not (REPO / p).exists()) == []


def test_the_uv_check_catches_a_suggestion() -> None:
    assert UV_COMMAND.search("call it as `uv run ff-ops status`")
    assert UV_COMMAND.search("$ uv sync --frozen")
    assert not UV_COMMAND.search("`.venv/bin/uv build` writes the wheel")
    assert not UV_COMMAND.search("uv.lock's versions, built by `uv export --frozen`")
