"""Synthesizes the app the way `cdk synth` does, with cdk.json's context, for tests and the offline rehearsal."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from stacks.names import DEFAULT_STACK_NAME, catalog_stack_name

REPO = Path(__file__).resolve().parents[2]
MAKE_SYNTH_OUTPUT = REPO / "cdk.out"  # where `make synth` (the CLI) writes the app
STACK_NAME = DEFAULT_STACK_NAME
CATALOG_STACK_NAME = catalog_stack_name(DEFAULT_STACK_NAME)

# jsii starts `node` from PATH: use the Node 22 `make install` put in .tools when the machine's is older, also
# when pytest is run directly rather than through make (which puts it first on PATH itself).
LOCAL_NODE_BIN = REPO / ".tools" / "node" / "bin"
if (LOCAL_NODE_BIN / "node").exists() and str(LOCAL_NODE_BIN) not in os.environ["PATH"].split(os.pathsep):
    os.environ["PATH"] = os.pathsep.join((str(LOCAL_NODE_BIN), os.environ["PATH"]))


# The app with every optional part: each chat channel and the e-mail DLQ, the completion webhook, the tickets, and the
# carrier's own confirmation (its step, its entry point and a named answerer, with the workflow's timeout raised above
# the carrier's 48 hours).
CARRIER_ANSWERER = "arn:aws:iam::210987654321:role/carrier-answers"
COMPLETION_WEBHOOK_SECRET = "arn:aws:secretsmanager:us-east-1:123456789012:secret:orders-webhook-key-AbCdEf"
FULL_CONTEXT: dict[str, Any] = {
    "ff:alarmEmail": "ops@example.com",
    "ff:webhookUrl": "https://hooks.example.com/alerts",
    "ff:completionWebhookUrl": "https://orders.example.com/hooks/fire-and-forget",
    "ff:completionWebhookSecretArn": COMPLETION_WEBHOOK_SECRET,
    "ff:opsCenterTickets": True,
    "ff:slackWorkspaceId": "T0123ABCD",
    "ff:slackChannelId": "C0456EFGH",
    "ff:teamsTeamId": "0123abcd-0123-4567-89ab-0123456789ab",
    "ff:teamsTenantId": "89abcdef-0123-4567-89ab-0123456789ab",
    "ff:teamsChannelId": "19%3a0123abcd4567%40thread.tacv2",
    "ff:carrierConfirmation": True,
    "ff:carrierAnswererArn": CARRIER_ANSWERER,
    "ff:executionTimeoutMinutes": 3000,
}


def cdk_context() -> dict[str, Any]:
    """The context block of cdk.json: `cdk.App()` in-process does not read cdk.json by itself."""
    context: dict[str, Any] = json.loads((REPO / "cdk.json").read_text(encoding="utf-8"))["context"]
    return context


def synthesize(outdir: Path, context: dict[str, Any] | None = None) -> Path:
    """Synthesize into `outdir` and return the directory of the cloud assembly."""
    from app import build_app

    app = build_app(cdk_context() if context is None else context, outdir=str(outdir))
    return Path(app.synth().directory)


def synthesize_once(outdir: Path, synth: Callable[[Path], Path] | None = None) -> Path:
    """`synth(outdir)` (this app's `synthesize` unless told another) once for every process that asks: the first
    synthesizes, the others wait for it on a lock and reuse what it wrote (pytest-xdist's workers of one run share
    `outdir`). POSIX `flock`: the lock goes with the process that holds it, so a worker that dies synthesizing leaves
    no stale lock, and the next one synthesizes again (only a finished synth writes the marker beside the assembly)."""
    outdir.parent.mkdir(parents=True, exist_ok=True)
    marker = outdir.with_name(outdir.name + ".synthesized")
    with outdir.with_name(outdir.name + ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not marker.exists():
            shutil.rmtree(outdir, ignore_errors=True)
            marker.write_text(str((synth or synthesize)(outdir)), encoding="utf-8")
        return Path(marker.read_text(encoding="utf-8"))


def synthesize_full(outdir: Path) -> Path:
    """The app with FULL_CONTEXT."""
    return synthesize(outdir, cdk_context() | FULL_CONTEXT)


def load_template(assembly_dir: Path, stack_name: str = STACK_NAME) -> dict[str, Any]:
    """One stack's template: the order example's unless another is named."""
    template: dict[str, Any] = json.loads((assembly_dir / f"{stack_name}.template.json").read_text(encoding="utf-8"))
    return template


# What `cdk synth` reads: the app (cdk.json runs app.py), the code it synthesizes, the CLI's and the libraries' pins.
SYNTH_INPUTS = ("app.py", "cdk.json", "cdk.context.json", "pyproject.toml", "uv.lock", "package-lock.json",
                "scripts/cdk-app", "stacks", "src", "lambdas", "statemachines")


def made_since_the_last_change(repo: Path = REPO) -> bool:
    """True when `make synth` wrote repo/cdk.out after the last change to anything synth reads: the assembly is newer
    than every input, and the log (cdk.out.synth.log, which only a synth that succeeded leaves) no older than it."""
    log, manifest = repo / "cdk.out.synth.log", repo / "cdk.out" / "manifest.json"
    if not (log.is_file() and manifest.is_file()):
        return False
    files = [path for name in SYNTH_INPUTS for path in ([repo / name] if (repo / name).is_file()
                                                          else (repo / name).rglob("*"))
             if path.is_file() and "__pycache__" not in path.parts]
    return max(path.stat().st_mtime for path in files) < manifest.stat().st_mtime <= log.stat().st_mtime
