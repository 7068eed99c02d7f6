"""Every transcript README.md and docs/ quote is one the suite's own runs wrote, quoted exactly.

The runs themselves are compared with their files where they happen (tests/demo/test_demo.py, test_practice.py);
here, without running anything, each quote is held to its file and each file to a quote.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import transcripts


@pytest.mark.parametrize("document", transcripts.documents(), ids=lambda p: p.relative_to(transcripts.REPO).as_posix())
def test_every_quoted_transcript_is_its_file_verbatim(document: Path) -> None:
    wrong = []
    for quote in transcripts.quotes(document):
        path = transcripts.path_of(quote.name)
        assert path.exists(), f"{document.name} quotes {quote.name}, which no test writes ({path} is missing)"
        if quote.text != path.read_text(encoding="utf-8"):
            if transcripts.updating():
                transcripts.requote(quote.name)
            else:
                wrong.append(f"{document.name}, lines {quote.lines[0] + 1}-{quote.lines[1]}: not {path.name}")
    assert wrong == [], "run `make transcripts` (FF_UPDATE_TRANSCRIPTS=1) to quote the files again"


@pytest.mark.parametrize("document", transcripts.documents(), ids=lambda p: p.relative_to(transcripts.REPO).as_posix())
def test_every_transcript_a_document_shows_is_marked_as_one(document: Path) -> None:
    """A ```text block that begins with a shell prompt is a transcript: it must name the file a test writes."""
    unmarked = [f"{document.name}, line {lines[0]}: {text.splitlines()[0]}"
                for name, text, lines in transcripts.text_blocks(document) if text.startswith("$ ") and name is None]
    assert unmarked == []


def test_every_transcript_file_is_quoted_somewhere() -> None:
    quoted = {quote.name for document in transcripts.documents() for quote in transcripts.quotes(document)}
    assert {path.stem for path in transcripts.TRANSCRIPTS.glob("*.txt")} == quoted


def test_normalizing_drops_times_ids_and_durations_and_keeps_the_rest() -> None:
    one = "$ ff-ops status\n  FAILED  2026-12-01 16:04:42Z  pipe-5c65a8f0f204454da406594d6160fbc7\nseed=3, 27.45 s\n"
    other = "$ ff-ops status\n  FAILED  2026-12-02 09:00:01Z  pipe-0123456789abcdef0123456789abcdef\nseed=3, 31.02 s\n"
    assert transcripts.normalized(one) == transcripts.normalized(other)
    assert transcripts.normalized(one) != transcripts.normalized(one.replace("FAILED", "SUCCEEDED"))
    assert transcripts.normalized("redriven 3\n") != transcripts.normalized("redriven 2\n")
    # the demo's title rule is as wide as the terminal whatever its elapsed time took
    assert transcripts.normalized("──── demo: seed=3, 28.14 s ────\n") == transcripts.normalized(
        "──── demo: seed=3, 101.2 s ───\n")


def test_a_changed_run_fails_and_the_update_mode_rewrites_the_file_and_its_quotes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a transcript file and a document quoting it
    monkeypatch.setattr(transcripts, "REPO", tmp_path)
    monkeypatch.setattr(transcripts, "TRANSCRIPTS", tmp_path / "docs" / "transcripts")
    monkeypatch.setattr(transcripts, "DOCUMENTS", ("README.md",))
    (tmp_path / "docs" / "transcripts").mkdir(parents=True)
    (tmp_path / "docs" / "transcripts" / "run.txt").write_text("$ ff-ops status\nredriven 2\n", encoding="utf-8")
    readme = tmp_path / "README.md"
    readme.write_text("Before.\n\n<!-- transcript: run -->\n```text\n$ ff-ops status\nredriven 2\n```\n\nAfter.\n",
                      encoding="utf-8")
    monkeypatch.delenv(transcripts.UPDATE_VARIABLE, raising=False)
    # When a run prints something else, the comparison fails and says how to update
    with pytest.raises(pytest.fail.Exception, match="make transcripts"):
        transcripts.check("run", "$ ff-ops status\nredriven 3\n")
    # and only volatile parts differing is no difference
    transcripts.check("run", "$ ff-ops status\nredriven 2   \n")
    # When the same run is checked in the update mode
    monkeypatch.setenv(transcripts.UPDATE_VARIABLE, "1")
    transcripts.check("run", "$ ff-ops status\nredriven 3\n")
    # Then the file and its quote hold the new run, and the rest of the document is untouched
    written = (tmp_path / "docs" / "transcripts" / "run.txt").read_text(encoding="utf-8")
    assert written == "$ ff-ops status\nredriven 3\n"
    assert readme.read_text(encoding="utf-8") == (
        "Before.\n\n<!-- transcript: run -->\n```text\n$ ff-ops status\nredriven 3\n```\n\nAfter.\n")
