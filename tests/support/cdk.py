"""Synthesizes the app the way `cdk synth` does, with cdk.json's context, for tests and the offline rehearsal."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from stacks.config import DEFAULT_STACK_NAME

REPO = Path(__file__).resolve().parents[2]
STACK_NAME = DEFAULT_STACK_NAME

# jsii prints an end-of-life banner for Node 20 on every start; it says nothing about this project.
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")


def cdk_context() -> dict[str, Any]:
    """The context block of cdk.json: `cdk.App()` in-process does not read cdk.json by itself."""
    context: dict[str, Any] = json.loads((REPO / "cdk.json").read_text(encoding="utf-8"))["context"]
    return context


def synthesize(outdir: Path, context: dict[str, Any] | None = None) -> Path:
    """Synthesize into `outdir` and return the directory of the cloud assembly."""
    from app import build_app

    app = build_app(cdk_context() if context is None else context, outdir=str(outdir))
    return Path(app.synth().directory)


def load_template(assembly_dir: Path) -> dict[str, Any]:
    template: dict[str, Any] = json.loads((assembly_dir / f"{STACK_NAME}.template.json").read_text(encoding="utf-8"))
    return template
