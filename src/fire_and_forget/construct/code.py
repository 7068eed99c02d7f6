"""Lambda code assets: a workflow's handler folder with the pattern's runtime beside it, and the pattern's own
functions (the Reconciler, the Redriver and the callback entry point).

The runtime (`fire_and_forget.runtime`: transient-error classification, the delivery claim, the failure record, the
healing policy, the redrive) is copied into every asset from the installed package by local bundling, at its import
path, so a handler imports `fire_and_forget.runtime.errors` like its own modules and no layer or Docker is needed.
Only the package's `__init__.py` and the parts named here go in: never the construct, the CLI or the rehearsal.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import jsii
from aws_cdk import AssetHashType, BundlingOptions, ILocalBundling
from aws_cdk import aws_lambda as lambda_

import fire_and_forget

PACKAGE = Path(fire_and_forget.__file__).resolve().parent
# What a task's asset carries of the package, and what the pattern's own functions carry besides.
RUNTIME_PARTS = ("runtime",)
HEALING_PARTS = ("runtime", "healing")
CALLBACK_PARTS = ("runtime", "callbacks")
# The newest Python runtime whose minor version the tests can run on too (pyproject's requires-python): the
# handlers are tested on the interpreter they run on in AWS. See docs/design.md, "Lambda packaging and runtime".
RUNTIME = lambda_.Runtime.PYTHON_3_13
_IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc")


def package_files(parts: tuple[str, ...]) -> Iterator[Path]:
    """The package's `__init__.py` and every source file of `parts`, sorted by path."""
    yield PACKAGE / "__init__.py"
    for part in parts:
        yield from sorted(p for p in (PACKAGE / part).rglob("*.py") if "__pycache__" not in p.parts)


def source_hash(handlers: Path | None, parts: tuple[str, ...]) -> str:
    """Over the handler folder and the package parts, path and content: the asset changes when any does."""
    digest = hashlib.sha256()
    if handlers is not None:
        for path in sorted(handlers.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                digest.update(f"{path.relative_to(handlers).as_posix()}\0".encode())
                digest.update(path.read_bytes())
    for path in package_files(parts):
        digest.update(f"{PACKAGE.name}/{path.relative_to(PACKAGE).as_posix()}\0".encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


@jsii.implements(ILocalBundling)
class _WithRuntime:
    """Copies the handler folder's contents (if any) and the package parts at their import paths."""

    def __init__(self, handlers: Path | None, parts: tuple[str, ...]) -> None:
        self._handlers = handlers
        self._parts = parts

    # jsii hands the bundling options over as one positional struct, not as keywords.
    def try_bundle(self, output_dir: str, options: object) -> bool:
        if self._handlers is not None:
            shutil.copytree(self._handlers, output_dir, dirs_exist_ok=True, ignore=_IGNORED)
        for path in package_files(self._parts):
            target = Path(output_dir) / PACKAGE.name / path.relative_to(PACKAGE)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
        return True


def handler_code(handlers: Path) -> lambda_.Code:
    """The asset for functions whose handlers live in `handlers` (the handler string is relative to it)."""
    if (handlers / PACKAGE.name).exists():
        raise ValueError(f"{handlers} has its own {PACKAGE.name}/: it would shadow the pattern's runtime")
    return _asset(handlers, source_hash(handlers, RUNTIME_PARTS), _WithRuntime(handlers, RUNTIME_PARTS))


def healing_code() -> lambda_.Code:
    """The Reconciler's and the Redriver's asset: the runtime and `fire_and_forget.healing` (handlers
    `fire_and_forget.healing.reconciler.handler`, ...)."""
    return _asset(PACKAGE / "healing", source_hash(None, HEALING_PARTS), _WithRuntime(None, HEALING_PARTS))


def callback_code() -> lambda_.Code:
    """The callback entry point's asset: the runtime and `fire_and_forget.callbacks` (handler
    `fire_and_forget.callbacks.entry_point.handler`)."""
    return _asset(PACKAGE / "callbacks", source_hash(None, CALLBACK_PARTS), _WithRuntime(None, CALLBACK_PARTS))


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
