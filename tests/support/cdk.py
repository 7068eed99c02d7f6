"""Synthesizes the app the way `cdk synth` does, with cdk.json's context, for tests and the offline rehearsal."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from stacks.names import DEFAULT_STACK_NAME, catalog_stack_name

REPO = Path(__file__).resolve().parents[2]
STACK_NAME = DEFAULT_STACK_NAME
CATALOG_STACK_NAME = catalog_stack_name(DEFAULT_STACK_NAME)

# jsii starts `node` from PATH: use the Node 22 `make install` put in .tools when the machine's is older, also
# when pytest is run directly rather than through make (which puts it first on PATH itself).
LOCAL_NODE_BIN = REPO / ".tools" / "node" / "bin"
if (LOCAL_NODE_BIN / "node").exists() and str(LOCAL_NODE_BIN) not in os.environ["PATH"].split(os.pathsep):
    os.environ["PATH"] = os.pathsep.join((str(LOCAL_NODE_BIN), os.environ["PATH"]))


def cdk_context() -> dict[str, Any]:
    """The context block of cdk.json: `cdk.App()` in-process does not read cdk.json by itself."""
    context: dict[str, Any] = json.loads((REPO / "cdk.json").read_text(encoding="utf-8"))["context"]
    return context


def synthesize(outdir: Path, context: dict[str, Any] | None = None) -> Path:
    """Synthesize into `outdir` and return the directory of the cloud assembly."""
    from app import build_app

    app = build_app(cdk_context() if context is None else context, outdir=str(outdir))
    return Path(app.synth().directory)


def load_template(assembly_dir: Path, stack_name: str = STACK_NAME) -> dict[str, Any]:
    """One stack's template: the order example's unless another is named."""
    template: dict[str, Any] = json.loads((assembly_dir / f"{stack_name}.template.json").read_text(encoding="utf-8"))
    return template
