"""What a function prints while it runs, collected per invocation without touching the process's sys.stdout.

In Lambda a function's stdout is its own: its log lines and its EMF metrics (Powertools' Metrics `print()`s them) go
to its log stream. Here handlers run on the interpreter's threads while other threads of the same process print too:
the test, the operator CLI run in-process (Click's CliRunner swaps `sys.stdout` for a buffer it closes afterwards),
the pipe. Swapping `sys.stdout` per invocation races with them: an invocation that began inside a CliRunner's window
and ended after it restores the CLI's closed buffer as everyone's stdout, and the next write fails with "I/O
operation on closed file". So nothing here swaps a process-wide stream. Instead the calling thread is marked as
running a function (`capture`), and two routes read that mark at each write:
- `print()` without an explicit `file` writes to the thread's capture (`builtins.print` is replaced once, on the
  first capture; on any other thread it is the original print, called as it was);
- each plain `logging.StreamHandler` that writes to stdout (Powertools' Logger creates one when its module is
  imported) gets a stream that writes to the capture of the thread that logs, and to the handler's own stream on
  every other thread (`route_log_handlers`, called before each invocation and after each import of a handler).
"""

from __future__ import annotations

import builtins
import io
import logging
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

_local = threading.local()
_original_print = builtins.print
_install_lock = threading.Lock()


def _current() -> io.StringIO | None:
    output: io.StringIO | None = getattr(_local, "output", None)
    return output


def _print(*values: object, sep: str | None = " ", end: str | None = "\n", file: Any = None,
           flush: bool = False) -> None:
    output = _current() if file is None else None
    _original_print(*values, sep=sep, end=end, file=output if output is not None else file, flush=flush)


class _Routed(io.TextIOBase):
    """A log handler's stream: the logging thread's capture while it runs a function, else the handler's own."""

    def __init__(self, own: TextIO) -> None:
        super().__init__()
        self.own = own

    def write(self, text: str) -> int:
        output = _current()
        return (output if output is not None else self.own).write(text)

    def flush(self) -> None:
        if _current() is None:
            self.own.flush()

    def writable(self) -> bool:
        return True


@contextmanager
def capture() -> Iterator[io.StringIO]:
    """The calling thread runs a function: what it prints and logs until the block ends is in the yielded buffer."""
    with _install_lock:
        if builtins.print is not _print:
            builtins.print = _print
    output = io.StringIO()
    outer = _current()
    _local.output = output
    try:
        yield output
    finally:
        _local.output = outer


def route_log_handlers() -> None:
    """Give every plain StreamHandler the routed stream, but those already routed and those writing to stderr."""
    loggers = [logging.getLogger(), *(lg for lg in logging.Logger.manager.loggerDict.values()
                                      if isinstance(lg, logging.Logger))]
    for handler in (h for lg in loggers for h in lg.handlers if type(h) is logging.StreamHandler):
        stream = handler.stream
        if isinstance(stream, _Routed) or stream in (sys.stderr, sys.__stderr__):
            continue
        handler.setStream(_Routed(stream))
