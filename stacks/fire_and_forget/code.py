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

RUNTIME_PACKAGE = Path(__file__).resolve().parents[2] / "lambdas" / "fire_and_forget"
# The newest Python runtime whose minor version the tests can run on too (pyproject's requires-python): the
# handlers are tested on the interpreter they run on in AWS. See docs/design.md, "Lambda packaging and runtime".
RUNTIME = lambda_.Runtime.PYTHON_3_13
_IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc")


def source_hash(handlers: Path) -> str:
    """Over the handler folder and the runtime, path and content: the asset changes when either does."""
    digest = hashlib.sha256()
    for root, prefix in ((handlers, ""), (RUNTIME_PACKAGE, f"{RUNTIME_PACKAGE.name}/")):
        for path in sorted(root.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                digest.update(f"{prefix}{path.relative_to(root).as_posix()}\0".encode())
                digest.update(path.read_bytes())
    return digest.hexdigest()


@jsii.implements(ILocalBundling)
class _WithRuntime:
    def __init__(self, handlers: Path) -> None:
        self._handlers = handlers

    # jsii hands the bundling options over as one positional struct, not as keywords.
    def try_bundle(self, output_dir: str, options: object) -> bool:
        shutil.copytree(self._handlers, output_dir, dirs_exist_ok=True, ignore=_IGNORED)
        shutil.copytree(RUNTIME_PACKAGE, Path(output_dir) / RUNTIME_PACKAGE.name, dirs_exist_ok=True, ignore=_IGNORED)
        return True


def handler_code(handlers: Path) -> lambda_.Code:
    """The asset for functions whose handlers live in `handlers` (the handler string is relative to it)."""
    if (handlers / RUNTIME_PACKAGE.name).exists():
        raise ValueError(f"{handlers} has its own {RUNTIME_PACKAGE.name}/: it would shadow the pipeline's runtime")
    return lambda_.Code.from_asset(
        str(handlers),
        asset_hash_type=AssetHashType.CUSTOM,
        asset_hash=source_hash(handlers),
        bundling=BundlingOptions(
            image=RUNTIME.bundling_image,  # never used: local bundling always runs
            # cast: jsii's Python signature lists the options as keywords, its kernel passes one struct.
            local=cast(ILocalBundling, _WithRuntime(handlers)),
        ),
    )
