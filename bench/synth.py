"""Synth time in-process against a minimal one-queue app, and the wall time of the whole test suite."""

from __future__ import annotations

import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class SynthTimes:
    app_seconds: list[float]
    minimal_seconds: list[float]

    @property
    def app_median(self) -> float:
        return statistics.median(self.app_seconds)

    @property
    def minimal_median(self) -> float:
        return statistics.median(self.minimal_seconds)


def _the_app(context: dict[str, Any], outdir: str) -> Any:
    from app import build_app

    return build_app(context, outdir=outdir)


def _minimal_app(context: dict[str, Any], outdir: str) -> Any:
    """The yardstick: one stack with one queue, the same context, the same in-process synth."""
    import aws_cdk as cdk
    from aws_cdk import aws_sqs as sqs

    app = cdk.App(context=context, outdir=outdir)
    sqs.Queue(cdk.Stack(app, "Minimal"), "Queue")
    return app


def _synth_once(build: Callable[[dict[str, Any], str], Any], context: dict[str, Any]) -> float:
    with tempfile.TemporaryDirectory(prefix="bench-synth-") as outdir:
        started = time.perf_counter()
        build(context, outdir).synth()
        return time.perf_counter() - started


def synth_times(rounds: int = 3) -> SynthTimes:
    """Both apps once untimed (the jsii runtime and the CDK library load), then `rounds` each, alternating."""
    from tests.support.cdk import cdk_context

    context = cdk_context()
    _synth_once(_minimal_app, context)
    _synth_once(_the_app, context)
    app: list[float] = []
    minimal: list[float] = []
    for round_ in range(rounds):
        pair = [(_the_app, app), (_minimal_app, minimal)]
        for build, samples in pair if round_ % 2 == 0 else reversed(pair):
            samples.append(_synth_once(build, context))
    return SynthTimes(app, minimal)


@dataclass(frozen=True)
class SuiteRun:
    command: str
    seconds: float
    returncode: int
    summary: str  # pytest's last line, e.g. "412 passed, 3 skipped in 201.3s"
    passed: int
    failed: list[str]  # test ids pytest's short summary lists as FAILED or ERROR


def run_suite() -> SuiteRun:
    """`python -m pytest -q -p no:randomly` once, in a subprocess, timed from outside.

    The venv's own interpreter, not `uv run`: a `uv` found on PATH may be a pyenv shim that does not run here.
    """
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly"]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    lines = [line.strip("= ") for line in done.stdout.splitlines() if line.strip()]
    summary = lines[-1] if lines else done.stderr.strip()[-200:]
    passed = re.search(r"(\d+) passed", summary)
    shown = "python -m pytest -q -p no:randomly"
    failed = [line.split()[1] for line in done.stdout.splitlines() if line.startswith(("FAILED ", "ERROR "))]
    return SuiteRun(shown, seconds, done.returncode, summary, int(passed.group(1)) if passed else 0, failed)
