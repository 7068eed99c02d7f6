"""A workflow's Lambda code asset: its handler folder with the pattern's runtime (`fire_and_forget`) beside it.

The runtime (lambdas/fire_and_forget: transient-error classification, the delivery claim) is copied into every
task's asset by local bundling, so a handler imports it like its own modules and no layer or Docker is needed.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import cast

import jsii
from aws_cdk import AssetHashType, BundlingOptions, ILocalBundling
from aws_cdk import aws_lambda as lambda_

REPO = Path(__file__).resolve().parents[2]
RUNTIME_PACKAGE = REPO / "lambdas" / "fire_and_forget"
# The pipeline's own functions (the Reconciler and the Redriver) and the ff-ops modules the Redriver shares with
# `ff-ops failures redrive` (one send-then-delete): they import only botocore and the standard library.
HEALING_HANDLERS = REPO / "lambdas" / "healing"
SHARED_OPS_MODULES = tuple(REPO / "ops" / name for name in ("__init__.py", "dlq.py", "errors.py", "healing_policy.py",
                                                               "records.py", "redrive.py"))
# The newest Python runtime whose minor version the tests can run on too (pyproject's requires-python): the
# handlers are tested on the interpreter they run on in AWS. See docs/design.md, "Lambda packaging and runtime".
RUNTIME = lambda_.Runtime.PYTHON_3_13
_IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc")


def source_hash(handlers: Path, extra: tuple[Path, ...] = ()) -> str:
    """Over the handler folder, the runtime and any extra files, path and content: the asset changes when any does."""
    digest = hashlib.sha256()
    for root, prefix in ((handlers, ""), (RUNTIME_PACKAGE, f"{RUNTIME_PACKAGE.name}/")):
        for path in sorted(root.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                digest.update(f"{prefix}{path.relative_to(root).as_posix()}\0".encode())
                digest.update(path.read_bytes())
    for path in extra:
        digest.update(f"{path.relative_to(REPO).as_posix()}\0".encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


@jsii.implements(ILocalBundling)
class _WithRuntime:
    """Copies the handler folder's contents (if any), the runtime, and extra files at their import paths."""

    def __init__(self, handlers: Path | None, extra: tuple[Path, ...] = ()) -> None:
        self._handlers = handlers
        self._extra = extra

    # jsii hands the bundling options over as one positional struct, not as keywords.
    def try_bundle(self, output_dir: str, options: object) -> bool:
        if self._handlers is not None:
            shutil.copytree(self._handlers, output_dir, dirs_exist_ok=True, ignore=_IGNORED)
        shutil.copytree(RUNTIME_PACKAGE, Path(output_dir) / RUNTIME_PACKAGE.name, dirs_exist_ok=True, ignore=_IGNORED)
        for path in self._extra:
            target = Path(output_dir) / import_path(path)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
        return True


def import_path(path: Path) -> Path:
    """Where a file goes in an asset: lambdas/healing/x.py as healing/x.py, ops/redrive.py as ops/redrive.py."""
    lambdas = REPO / "lambdas"
    return path.relative_to(lambdas) if path.is_relative_to(lambdas) else path.relative_to(REPO)


def handler_code(handlers: Path) -> lambda_.Code:
    """The asset for functions whose handlers live in `handlers` (the handler string is relative to it)."""
    if (handlers / RUNTIME_PACKAGE.name).exists():
        raise ValueError(f"{handlers} has its own {RUNTIME_PACKAGE.name}/: it would shadow the pipeline's runtime")
    return _asset(handlers, source_hash(handlers), _WithRuntime(handlers))


def healing_code() -> lambda_.Code:
    """The Reconciler's and the Redriver's asset: `healing/` (handlers `healing.reconciler.handler`, ...), the
    runtime, and the ff-ops modules the Redriver shares with `ff-ops failures redrive`."""
    files = tuple(sorted(p for p in HEALING_HANDLERS.rglob("*.py") if "__pycache__" not in p.parts))
    extra = files + SHARED_OPS_MODULES
    return _asset(HEALING_HANDLERS, source_hash(HEALING_HANDLERS, SHARED_OPS_MODULES), _WithRuntime(None, extra))


def _asset(source: Path, asset_hash: str, bundling: _WithRuntime) -> lambda_.Code:
    return lambda_.Code.from_asset(
        str(source),
        asset_hash_type=AssetHashType.CUSTOM,
        asset_hash=asset_hash,
        bundling=BundlingOptions(
            image=RUNTIME.bundling_image,  # never used: local bundling always runs
            # cast: jsii's Python signature lists the options as keywords, its kernel passes one struct.
            local=cast(ILocalBundling, bundling),
        ),
    )
