"""Runs a batch of IAM requests through @cloud-copilot/iam-simulate in one Node process (node starts slowly)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
SCRIPT = HERE / "simulate.mjs"


def available() -> str | None:
    """Why the simulator cannot run here, or None when it can."""
    if shutil.which("node") is None:
        return "node is not on PATH"
    if not (REPO / "node_modules" / "@cloud-copilot" / "iam-simulate").is_dir():
        return "npm dev dependencies are not installed (npm ci)"
    return None


def simulate(requests: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """id -> {result: Allowed | ExplicitlyDenied | ImplicitlyDenied | Error, decisive, errors}."""
    completed = subprocess.run(
        ["node", str(SCRIPT)],
        input=json.dumps(requests),
        capture_output=True,
        text=True,
        cwd=REPO,
        check=True,
        timeout=120,
    )
    return {r["id"]: r for r in json.loads(completed.stdout)}
