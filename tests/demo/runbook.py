"""docs/runbook.md's commands, read in the order a reader meets them, and run one after another like a shell would.

Every line of a ```bash block and every inline `ff-ops ...` or `aws ...` span is a command. The shell here knows
what the runbook writes and no more: `NAME=value` and `export` (several on a line, `;` between), `$(...)`, a
one-line function (`out() { ...; }`), `$NAME` / `${NAME}` / `$1`, comments, continuation lines. A command runs as:
- `ff-ops ...`: the ff-ops app in this process, with the practice account's environment;
- `aws ...`: the same API call through boto3 (tests/support/aws_cli.py);
- `.venv/bin/python -m demos.orders.cli_smoke ...`: the smoke test's app in this process;
- `make <target> ...`: not run (the Makefile's target is checked instead: it runs the line after it).
A command the runbook repeats word for word runs once. The placeholders (ORDER_ID, MESSAGE_ID, EXECUTION_ARN, ERROR,
RECEIPT_HANDLE) are filled from the account when the command runs; a receive keeps its first message's handle for
the next delete of that queue, and writes that message's body to event.json, as the runbook asks the reader to.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from click import Command as ClickCommand
from markdown_it import MarkdownIt
from typer.main import get_command
from typer.testing import CliRunner

from demos.orders import cli_smoke
from fire_and_forget.cli.app import app as ff_ops_app
from tests.support import aws_cli

ROOT = Path(__file__).resolve().parents[2]
RUNBOOK = ROOT / "docs" / "runbook.md"
PLACEHOLDERS = ("ORDER_ID", "MESSAGE_ID", "EXECUTION_ARN", "ERROR", "RECEIPT_HANDLE")
MODULES = {"demos.orders.cli_smoke": cli_smoke.app}
# What may change the account: a confirmed ff-ops write, the smoke test, an aws call that writes.
CHANGES = re.compile(r"--yes\b|cli_smoke|^aws \S+ (?:send|delete|start|stop|put|update)-")
_VARIABLE = re.compile(r"\$(?:\{(\w+)\}|(\w+))")
_FUNCTION = re.compile(r"^(\w+)\(\)\s*\{\s*(.+?);?\s*\}$")
_ASSIGNMENT = re.compile(r"(\w+)=(\$\([^)]*\)|\"[^\"]*\"|'[^']*'|\S+)")
_ASSIGNMENTS = re.compile(r"^(?:export\s+)?(?:\w+=(?:\$\([^)]*\)|\"[^\"]*\"|'[^']*'|\S+)\s*)+$")


@dataclass(frozen=True)
class Command:
    section: str
    line: int  # in the runbook, 1-based
    text: str


def commands(text: str) -> list[Command]:
    """Every command of the runbook, in order."""
    tokens = MarkdownIt().parse(text)
    found: list[Command] = []
    section = ""
    for index, token in enumerate(tokens):
        if token.type == "heading_open":
            section = tokens[index + 1].content
        elif token.type == "fence" and token.info.strip() == "bash" and token.map:
            found += [Command(section, line, text) for line, text in _lines(token.content, token.map[0] + 2)]
        elif token.type == "inline" and token.map:
            found += [Command(section, token.map[0] + 1, child.content.strip()) for child in token.children or []
                      if child.type == "code_inline" and re.match(r"(ff-ops|aws) \S", child.content.strip())]
    return found


def _lines(block: str, first: int) -> list[tuple[int, str]]:
    """A block's logical lines (continuations joined, comments dropped) with the runbook line each starts on."""
    found = []
    pending, start = "", first
    for offset, raw in enumerate(block.splitlines()):
        if not pending:
            start = first + offset
        line = raw.rstrip()
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        logical = _without_comment(pending + line).strip()
        pending = ""
        if logical:
            found.append((start, logical))
    return found


@dataclass(frozen=True)
class Outcome:
    command: Command
    ran: str  # what ran, placeholders and variables filled in
    exit_code: int
    output: str


def _without_comment(line: str) -> str:
    """The line up to a `#` that starts a comment (outside quotes, after a space)."""
    quote = ""
    for index, character in enumerate(line):
        if quote:
            quote = "" if character == quote else quote
        elif character in "'\"":
            quote = character
        elif character == "#" and (index == 0 or line[index - 1].isspace()):
            return line[:index]
    return line


def _split(line: str) -> list[str]:
    """A line's `;`-separated parts (outside quotes)."""
    parts, current, quote = [], "", ""
    for character in line:
        if quote:
            quote = "" if character == quote else quote
        elif character in "'\"":
            quote = character
        elif character == ";":
            parts.append(current.strip())
            current = ""
            continue
        current += character
    return [part for part in [*parts, current.strip()] if part]


@dataclass
class Shell:
    environment: dict[str, str]
    cwd: Path
    placeholder: Callable[[str], str]  # ORDER_ID, MESSAGE_ID, EXECUTION_ARN, ERROR -> a value from the account now
    variables: dict[str, str] = field(default_factory=dict)
    functions: dict[str, str] = field(default_factory=dict)
    handles: dict[str, str] = field(default_factory=dict)  # queue URL -> the last receive's first receipt handle
    outcomes: list[Outcome] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)  # the commands already run

    def expand(self, text: str, arguments: tuple[str, ...] = ()) -> str:
        def value(match: re.Match[str]) -> str:
            name = match.group(1) or match.group(2)
            if name.isdigit():
                return arguments[int(name) - 1]
            return self.variables.get(name, self.environment.get(name, match.group(0)))

        return _VARIABLE.sub(value, text)

    def run(self, command: Command) -> bool:
        """Run one command of the runbook; whether it may have changed something. A command the runbook already
        gave word for word is not run again: the first run proved it."""
        function = _FUNCTION.match(command.text)
        if function:
            self.functions[function.group(1)] = function.group(2)
            return False
        if command.text in self.seen:
            return False
        self.seen.add(command.text)
        for part in _split(command.text):
            if _ASSIGNMENTS.match(part):
                for name, raw in _ASSIGNMENT.findall(part.removeprefix("export ")):
                    self.variables[name] = self._substitute(command, raw)
            else:
                self._execute(command, part)
        return bool(CHANGES.search(command.text))

    def _substitute(self, command: Command, raw: str) -> str:
        inner = re.fullmatch(r"\$\((.*)\)", raw)
        if inner is None:
            return shlex.split(self.expand(raw))[0]
        return self._execute(command, inner.group(1)).strip()

    def _execute(self, command: Command, text: str, arguments: tuple[str, ...] = ()) -> str:
        words = shlex.split(text, comments=True)
        if words and words[0] in self.functions:
            return self._execute(command, self.functions[words[0]], tuple(words[1:]))
        line = self.expand(text, arguments)
        for name in PLACEHOLDERS:
            if re.search(rf"\b{name}\b", line):
                line = re.sub(rf"\b{name}\b", shlex.quote(self._placeholder(name, line)), line)
        words = shlex.split(line, comments=True)
        exit_code, output = self._program(words, line)
        self.outcomes.append(Outcome(command, shlex.join(words), exit_code, output))
        return output

    def _placeholder(self, name: str, line: str) -> str:
        if name != "RECEIPT_HANDLE":
            return self.placeholder(name)
        queue = shlex.split(line)[shlex.split(line).index("--queue-url") + 1]
        if queue not in self.handles:
            raise AssertionError(f"{line}: no message was received from {queue} before this delete")
        return self.handles.pop(queue)

    def _program(self, words: list[str], line: str) -> tuple[int, str]:
        program = words[0]
        if program == "ff-ops":
            return _invoke(ff_ops_app, _without_missing_yes(words[1:]), self.environment)
        if program == "aws":
            output = aws_cli.run(line, self.environment, self.cwd)
            self._remember_receive(words, output)
            return 0, output
        if program.endswith("/python") and words[1] == "-m" and words[2] in MODULES:
            # The smoke test looks every 5 s against AWS; the practice account answers at once.
            return _invoke(MODULES[words[2]], [*words[3:], "--poll-seconds", "0.1"], self.environment)
        if program == "make":
            return 0, ""  # the target runs the command the runbook gives next (test_practice checks the Makefile)
        raise AssertionError(f"the runbook runs {program!r}, which this test does not know how to run")

    def _remember_receive(self, words: list[str], output: str) -> None:
        if words[1:3] != ["sqs", "receive-message"]:
            return
        messages = json.loads(output).get("Messages") or [] if output.startswith("{") else []
        if messages:
            self.handles[words[words.index("--queue-url") + 1]] = messages[0]["ReceiptHandle"]
            (self.cwd / "event.json").write_text(messages[0]["Body"], encoding="utf-8")


def _invoke(app: object, args: list[str], environment: Mapping[str, str]) -> tuple[int, str]:
    result = CliRunner().invoke(app, args, env=dict(environment))  # type: ignore[arg-type]
    return result.exit_code, result.output


def _without_missing_yes(args: list[str]) -> list[str]:
    """`--yes` answers the confirmation of a command that asks for one; a command that does not ask has no such
    option, and the runbook's `--yes` is left out for it."""
    node: ClickCommand = get_command(ff_ops_app)
    for word in args:
        commands_ = getattr(node, "commands", {})
        if word not in commands_:
            break
        node = commands_[word]
    known = {option for parameter in node.params for option in parameter.opts}
    return [arg for arg in args if arg != "--yes" or "--yes" in known]
