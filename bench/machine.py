"""The machine a benchmark ran on, so every figure in the report says where it came from."""

from __future__ import annotations

import os
import platform
import subprocess
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _cpu_model() -> str:
    try:
        lines = Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines()
    except OSError:
        return platform.processor() or "unknown"
    models = [line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")]
    return models[0] if models else platform.processor() or "unknown"


def commit() -> str:
    """The commit checked out, and whether tracked files differ from it."""
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        return "unknown"
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True,
                           text=True, check=False).stdout.strip()
    return done.stdout.strip() + (" (with uncommitted changes)" if dirty else "")


def describe() -> dict[str, str]:
    """CPU model, cores usable by this process, Python, OS, date (UTC) and the commit measured."""
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "cpu": _cpu_model(),
        "cores": f"{usable} usable of {os.cpu_count()}",
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "os": f"{platform.system()} {platform.release()} ({platform.machine()})",
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        # Other work on the machine slows the timed sections; the ratios, measured side by side, less so.
        "load": f"{os.getloadavg()[0]:.2f}" if hasattr(os, "getloadavg") else "unknown",
        "commit": commit(),
    }
