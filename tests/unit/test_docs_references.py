"""Every `ff-ops` command and option, `make` target and repository path that README.md and docs/ name exists."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from typer.main import get_command

from fire_and_forget.cli.app import app

REPO = Path(__file__).resolve().parents[2]
# docs/ and its decision records (docs/decisions/), which name paths, commands and design.md's sections too.
DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
TOP_LEVEL = ("src", "stacks", "lambdas", "demos", "tests", "docs", "statemachines", "scripts", "bench")
_CODE = re.compile(r"```.*?```|`[^`\n]+`", re.S)
_FF_OPS = re.compile(r"\bff-ops\b([^\n|;&,()]*)")
_MAKE = re.compile(r"\bmake[ \t]+([a-z][\w-]*)")
_PATH = re.compile(r"(?<![\w/.-])((?:" + "|".join(TOP_LEVEL) + r")/[\w./-]*[\w/])")
_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
# The commands that change state answer their confirmation prompt with `--yes`, which docs/runbook.md writes on
# every such command: accepted on these four whether or not this build of ff-ops has the option yet.
CONFIRMED = {"failures redrive", "failures discard", "source-dlq redrive", "executions redrive"}


def _document_id(document: Path) -> str:
    """The file name for README.md and docs/*.md; the path under docs/ below it (decisions/README.md)."""
    return document.name if document.parent in (REPO, REPO / "docs") else document.relative_to(REPO / "docs").as_posix()


def _tree() -> dict[str, set[str]]:
    """Command path ("failures redrive", "" for ff-ops itself) -> its options."""
    found: dict[str, set[str]] = {}

    def walk(command: object, path: str) -> None:
        found[path] = {o for p in getattr(command, "params", []) for o in (*p.opts, *p.secondary_opts)} | {"--help"}
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, f"{path} {name}".strip())

    walk(get_command(app), "")
    return found


def _code(document: Path) -> str:
    return "\n".join(m.group(0).strip("`") for m in _CODE.finditer(document.read_text(encoding="utf-8")))


def _invocations(text: str) -> list[tuple[str, list[str]]]:
    """(command words, options) of each `ff-ops ...` in the code of a document."""
    found = []
    for line in text.splitlines():
        for match in _FF_OPS.finditer(line):
            tokens = match.group(1).split()
            words = []
            for token in tokens:
                if not re.fullmatch(r"[a-z][a-z-]*", token):
                    break
                words.append(token)
            options = [t.split("=")[0] for t in tokens if re.fullmatch(r"--[a-z][a-z-]*(=\S+)?", t)]
            found.append((" ".join(words), options))
    return found


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: _document_id(p))
def test_every_ff_ops_command_and_option_named_exists(document: Path) -> None:
    tree = _tree()
    wrong = []
    for words, options in _invocations(_code(document)):
        split = words.split()
        command = next((" ".join(split[:n]) for n in range(len(split), -1, -1) if " ".join(split[:n]) in tree), "")
        # A word after the command is an argument (an order id) only where the command takes one.
        extra = split[len(command.split()) if command else 0 :]
        if extra and not any(p.param_type_name == "argument" for p in _params(command)):
            wrong.append(f"ff-ops {words}: no such command")
        # `ff-ops --stack-name` in prose names an option every command takes.
        known = tree[command] | tree[""] if command else set().union(*tree.values())
        known |= {"--yes"} if command in CONFIRMED else set()
        wrong += [f"ff-ops {command} {o}: no such option" for o in options if o not in known]
    assert wrong == []


def _params(command: str) -> list[object]:
    node: object = get_command(app)
    for word in command.split():
        node = node.commands[word]  # type: ignore[attr-defined]
    return list(node.params)  # type: ignore[attr-defined]


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: _document_id(p))
def test_every_make_target_named_exists(document: Path) -> None:
    targets = set(re.findall(r"^([a-z][\w-]*):", (REPO / "Makefile").read_text(encoding="utf-8"), re.M))
    named = set(_MAKE.findall(_code(document)))
    assert named - targets == set()


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: _document_id(p))
def test_every_repository_path_named_exists(document: Path) -> None:
    text = document.read_text(encoding="utf-8")
    paths = {p.rstrip(".") for p in _PATH.findall(text)}
    links = {
        (document.parent / link).resolve()
        for link in _LINK.findall(text)
        if "://" not in link and not link.startswith("mailto:")
    }
    missing = sorted(p for p in paths if not (REPO / p).exists() and not any(c in p for c in "*<>{"))
    missing += sorted(str(link.relative_to(REPO)) for link in links if not link.exists())
    assert missing == []


def test_the_license_file_and_pyproject_agree() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    assert (REPO / "LICENSE").read_text(encoding="utf-8").startswith("MIT License\n")


def test_the_parser_catches_a_made_up_command_option_and_target() -> None:
    invocations = _invocations("ff-ops failures purge --all\nff-ops trace ord-1 --max-executions 3 --colour")
    assert invocations == [("failures purge", ["--all"]), ("trace", ["--max-executions", "--colour"])]
    tree = _tree()
    assert "failures purge" not in tree and "--colour" not in tree["trace"] and "--max-executions" in tree["trace"]
