"""How long `ff-ops --version` and `ff-ops --help` take, against starting the interpreter and nothing else.

Each run is a fresh process, wall time from spawn to exit; the cases are interleaved round by round, so drift on a
busy machine hits all of them alike, and each case runs once untimed first (bytecode cache warm, as an installed
package has it). The budget is 0.5 s for both commands.

    .venv/bin/python bench/cli_startup.py --runs 15
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

BUDGET_SECONDS = 0.5
_FF_OPS = [sys.executable, "-c", "import sys; from fire_and_forget.cli.app import app; sys.argv[0] = 'ff-ops'; app()"]
CASES: dict[str, list[str]] = {
    "python -c pass": [sys.executable, "-c", "pass"],
    'python -c "import boto3, typer, rich.console"': [sys.executable, "-c", "import boto3, typer, rich.console"],
    "ff-ops --version": [*_FF_OPS, "--version"],
    "ff-ops --help": [*_FF_OPS, "--help"],
}


@dataclass(frozen=True)
class Startup:
    """One command's wall times over `runs` fresh processes."""

    command: str
    seconds: list[float]

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    @property
    def worst(self) -> float:
        return max(self.seconds)


def _time(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   cwd=Path(__file__).resolve().parents[1])
    return time.perf_counter() - started


def measure(runs: int) -> list[Startup]:
    for argv in CASES.values():
        _time(argv)  # untimed: bytecode written, files in the page cache
    seconds: dict[str, list[float]] = {name: [] for name in CASES}
    names = list(CASES)
    for round_number in range(runs):
        shift = round_number % len(names)
        for name in names[shift:] + names[:shift]:
            seconds[name].append(_time(CASES[name]))
    return [Startup(name, times) for name, times in seconds.items()]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=15, help="fresh processes per command")
    args = parser.parse_args(argv)
    for startup in measure(args.runs):
        print(f"{startup.command:50} median {startup.median:.3f} s  worst {startup.worst:.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
