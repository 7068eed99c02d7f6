"""What every ff-ops command that changes state shares: the list shown first, a confirmation, a rate, an audit line.

`executions redrive`, `failures redrive`, `source-dlq redrive` and `failures discard` each select nothing unless
told what to select (their own flags), then go through this module: the selected items are listed with their
identifiers, the operator confirms (or passes --yes; without a terminal and without --yes the command refuses before
any AWS call, rather than wait for an answer that cannot come), each action waits for its turn at --rate, and each
action done is appended as one `ff-ops/audit/v1` JSON line (who, what, when, result) to --log or stderr, written and
flushed (fsynced for a file) as soon as the action is done. --dry-run lists and changes nothing, without a prompt.

The clock the rate runs on (`monotonic`, `sleep`) and the terminal check (`stdin_is_terminal`) are this module's
functions, looked up when called, so that tests replace them as they replace `cli_common.now`.
"""

from __future__ import annotations

import contextlib
import getpass
import io
import json
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import IO, TYPE_CHECKING, Annotated, Any

import typer
from botocore.exceptions import BotoCoreError, ClientError
from rich.console import Console

from fire_and_forget.cli import cli_common
from fire_and_forget.cli.errors import ExitCode, UsageError
from fire_and_forget.cli.report import json_time

if TYPE_CHECKING:
    from fire_and_forget.cli.aws import Clients

AUDIT_SCHEMA = "ff-ops/audit/v1"
# Actions per second unless --rate says otherwise: a slice an operator can watch (1,000 items in under two minutes)
# that stays far below the services' quotas and gives the pipe and the workflow time to take what is sent back.
DEFAULT_RATE = 10
MAX_RATE = 500  # SQS StartMessageMoveTask's MaxNumberOfMessagesPerSecond allows at most 500

Yes = Annotated[bool, typer.Option("--yes", "-y", metavar=cli_common.FLAG,
                                   help="Do not ask for confirmation (required without a terminal).")]
Rate = Annotated[int, typer.Option("--rate", min=1, max=MAX_RATE, metavar="N",
                                   help="At most N actions per second.")]
AuditLog = Annotated[Path | None, typer.Option(
    "--log", help="Append one audit line (JSON) per action to this file, and for discard each whole record before "
                  "its delete (default: stderr).")]


def stdin_is_terminal() -> bool:
    return sys.stdin.isatty()


def monotonic() -> float:
    return time.monotonic()


def sleep(seconds: float) -> None:
    time.sleep(seconds)


def require_an_answer(yes: bool, dry_run: bool, as_json: bool) -> None:
    """Refuse at once when a confirmation would be needed and nobody can give it (no terminal, no --yes)."""
    if yes or dry_run or stdin_is_terminal():
        return
    cli_common.fail(UsageError("this command changes state and asks first, but stdin is not a terminal",
                               "add --yes to go ahead without asking, or --dry-run to see what it would do"), as_json)


@dataclass(frozen=True)
class WriteOptions:
    """The flags every state-changing command takes besides its selection."""

    yes: bool
    dry_run: bool
    rate: int = DEFAULT_RATE
    log: Path | None = None


class Decision(Enum):
    LOOK = "look"  # a dry run, or nothing to act on: the command reports what it found
    GO = "go"
    DECLINED = "declined"


@dataclass(frozen=True)
class Planned:
    """One selected item as the list before the prompt shows it: `acts` when the command will act on it."""

    identifier: str  # what AWS knows it by: an execution ARN, a DLQ message id
    label: str  # what an operator knows it by: a key, an execution name
    detail: str
    acts: bool
    reason: str | None = None


class Pace:
    """At most `rate` actions a second: each action starts no sooner than 1/rate after the one before it started."""

    def __init__(self, rate: float) -> None:
        self.interval = 1.0 / rate
        self._next: float | None = None

    def __call__(self) -> None:
        now = monotonic()
        if self._next is not None and now < self._next:
            sleep(self._next - now)
            now = self._next
        self._next = now + self.interval


def write_line(sink: IO[str], line: str) -> None:
    """Append one line and make it durable before the caller goes on: flushed, and fsynced when it is a file."""
    sink.write(line + "\n")
    sink.flush()
    # A terminal or a pipe (stderr) cannot be synced: flushed is as far as it goes.
    with contextlib.suppress(OSError, ValueError, AttributeError, io.UnsupportedOperation):
        os.fsync(sink.fileno())


@dataclass
class Guard:
    """One run of a state-changing command: its list and prompt, its pace, and its audit log."""

    command: str  # "executions redrive"
    stack: str
    options: WriteOptions
    out: Console
    sink: IO[str]
    caller: Callable[[], str | None]  # the AWS principal, asked once, when the first line is written
    written: int = 0
    declined: bool = False
    pace: Pace = field(init=False)
    _who: dict[str, str | None] | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.pace = Pace(self.options.rate)

    @classmethod
    @contextlib.contextmanager
    def open(cls, command: str, options: WriteOptions, clients: Clients, stack: str, out: Console) -> Iterator[Guard]:
        """The guard of one run, its log opened for appending (a log that cannot be opened stops the command first)."""
        with contextlib.ExitStack() as files:
            try:
                sink = files.enter_context(options.log.open("a", encoding="utf-8")) if options.log else sys.stderr
            except OSError as error:
                raise UsageError(f"cannot write the log {options.log}: {error}",
                                 "give --log a writable file") from error
            yield cls(command, stack, options, out, sink, lambda: _principal(clients))

    def show(self, verb: str, planned: Sequence[Planned]) -> None:
        """One line per selected item: what the command will do with it, its name, identifier and details."""
        for item in planned:
            what = f"will {verb.lower()}" if item.acts else "refuses"
            reason = f" ({item.reason})" if item.reason else ""
            self.out.print(f"{what:>14}  {item.label}  {item.identifier}  {item.detail}{reason}", highlight=False)

    def decide(self, verb: str, noun: str, planned: Sequence[Planned]) -> Decision:
        """LOOK for a dry run or when nothing is to be acted on; otherwise list every selected item and ask (unless
        --yes): GO when the items marked `acts` may be acted on, DECLINED when the answer is no."""
        acting = [p for p in planned if p.acts]
        if self.options.dry_run or not acting:
            return Decision.LOOK
        self.show(verb, planned)
        question = f"{verb} the {len(acting)} {noun} marked 'will {verb.lower()}' above, at most {self.options.rate}/s?"
        if self.options.yes:
            self.out.print(f"{question} --yes: going ahead.", highlight=False)
            return Decision.GO
        try:
            agreed = typer.confirm(question, default=False, err=True)
        except typer.Abort:  # no answer (stdin closed): no
            agreed = False
        self.declined = not agreed
        return Decision.GO if agreed else Decision.DECLINED

    def exit_code(self, complete: bool) -> ExitCode:
        """DECLINED when the operator said no; otherwise OK, or INCOMPLETE when something selected was left behind."""
        if self.declined:
            return ExitCode.DECLINED
        return ExitCode.OK if complete else ExitCode.INCOMPLETE

    def audit(self, action: str, target: dict[str, Any], result: str, reason: str | None = None,
              forced: bool = False) -> None:
        """One `ff-ops/audit/v1` line for an action just done."""
        line = {"schema": AUDIT_SCHEMA, "at": json_time(cli_common.now()), "who": self.who, "command": self.command,
                "stack": self.stack, "action": action, "target": target, "result": result, "reason": reason,
                "forced": forced}
        write_line(self.sink, json.dumps(line, sort_keys=False))
        self.written += 1

    @property
    def who(self) -> dict[str, str | None]:
        if self._who is None:
            self._who = {"principal": self.caller(), "user": _local_user()}
        return self._who

    def document(self) -> dict[str, Any]:
        """The `audit` block of the command's --json document."""
        return {"schema": AUDIT_SCHEMA, "log": str(self.options.log) if self.options.log else "stderr",
                "actions": self.written}


def _principal(clients: Clients) -> str | None:
    """The ARN of the credentials in use (STS GetCallerIdentity, which needs no permission); None if it fails."""
    try:
        return str(clients.sts.get_caller_identity()["Arn"])
    except (ClientError, BotoCoreError, KeyError):
        return None  # the audit line is written all the same: the principal is also in CloudTrail


def _local_user() -> str | None:
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return None
