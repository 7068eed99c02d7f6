"""A test-only app: the catalog example's workflow in REQUEST_RESPONSE mode (stacks/catalog/request_response.py),
synthesized once per test process with the compliance packs on, like the app (`assembly()`)."""

from __future__ import annotations

import json
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

import aws_cdk as cdk

from fire_and_forget.construct import add_compliance_checks
from stacks.catalog.request_response import LAYER_ARN, STACK_NAME, TASK, build

__all__ = ["LAYER_ARN", "STACK_NAME", "TASK", "assembly", "build", "template"]


@cache
def assembly() -> Path:
    """The synthesized assembly (compliance packs on), once per process."""
    app = cdk.App(outdir=tempfile.mkdtemp(prefix="rr-cdk.out-"))
    build(app)
    add_compliance_checks(app)
    return Path(app.synth().directory)


def template() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((assembly() / f"{STACK_NAME}.template.json").read_text(encoding="utf-8"))
    return loaded
