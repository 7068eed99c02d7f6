"""The functions' runtime dependencies as our own Lambda layer, built with uv for arm64 without Docker.

The pins are the package's own (`layer-requirements.txt` beside this module, exported from the repository's uv.lock
`lambda` group and checked against it by the tests), so the construct builds the same layer wherever it is
installed. An app whose handlers need more passes its own pins (`requirements`) or its own layer.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import cast

import jsii
from aws_cdk import AssetHashType, BundlingOptions, ILocalBundling, RemovalPolicy
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

# The pins the layer installs by default: Powertools, pydantic and boto3 with what they need.
SHIPPED_REQUIREMENTS = Path(__file__).resolve().parent / "layer-requirements.txt"
# The dependency group of the repository's pyproject.toml the shipped pins are exported from.
LAMBDA_GROUP = "lambda"
# Graviton functions; Lambda's Python 3.12+ runtimes run Amazon Linux 2023 (glibc 2.34), so every wheel built
# for manylinux2014 (glibc 2.17) loads there.
PLATFORM = "aarch64-manylinux2014"
# Bumped when the way the layer is built changes, so that the asset hash changes with it.
BUILD_RECIPE = "1"


class LayerBuildError(RuntimeError):
    """The layer could not be built: uv missing, uv.lock out of date, or a wheel neither cached nor reachable."""


def uv_executable() -> str:
    """The uv that ships with the app's virtualenv (a locked dependency), else one on PATH that really runs.

    pyenv puts a `uv` shim on PATH that fails under another Python, so a candidate must answer `--version`.
    """
    candidates = [Path(sys.executable).parent / "uv"]
    on_path = shutil.which("uv")
    if on_path:
        candidates.append(Path(on_path))
    for candidate in candidates:
        if candidate.is_file() and _runs(candidate):
            return str(candidate)
    raise LayerBuildError("uv not found: install fire-and-forget[construct] (it brings uv), or put uv on PATH")


def _runs(executable: Path) -> bool:
    return subprocess.run([executable, "--version"], capture_output=True, check=False).returncode == 0


def shipped_requirements() -> str:
    """The pins the package ships for its layer."""
    return SHIPPED_REQUIREMENTS.read_text(encoding="utf-8")


def locked_requirements(project: Path, uv: str | None = None) -> str:
    """The `lambda` group's exact pins, exported from `project`'s uv.lock (how the shipped pins are made)."""
    command = [
        uv or uv_executable(),
        "export",
        "--frozen",
        "--only-group",
        LAMBDA_GROUP,
        "--no-hashes",
        "--no-emit-project",
        "--no-header",
        "--no-annotate",
    ]
    result = subprocess.run(command, cwd=project, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise LayerBuildError(f"`{' '.join(command)}` failed: {result.stderr.strip()}")
    return result.stdout


def python_version(runtime: lambda_.Runtime) -> str:
    """`python3.13` -> `3.13`."""
    return runtime.name.removeprefix("python")


def layer_hash(requirements: str, runtime: lambda_.Runtime) -> str:
    """Changes exactly when what the layer holds can change: the locked pins, the platform, the Python minor."""
    key = "\n".join((BUILD_RECIPE, PLATFORM, python_version(runtime), requirements))
    return hashlib.sha256(key.encode()).hexdigest()


def build_layer(
    output_dir: Path, requirements: str, runtime: lambda_.Runtime, uv: str | None = None, *, offline_only: bool = False
) -> None:
    """Install the pinned wheels for the function's platform into `output_dir/python` (Lambda's layer layout).

    Offline first: after one install uv's cache holds every wheel, so synth makes no network call. Only when a
    wheel is missing from the cache does uv ask the package index (never with `offline_only`).
    """
    uv = uv or uv_executable()
    requirements_file = output_dir / "requirements.txt"
    requirements_file.write_text(requirements, encoding="utf-8")
    command = [
        uv,
        "pip",
        "install",
        "--quiet",
        "--no-deps",
        "--only-binary",
        ":all:",
        "--python-platform",
        PLATFORM,
        "--python-version",
        python_version(runtime),
        "--target",
        str(output_dir / "python"),
        "--requirements",
        str(requirements_file),
    ]
    environment = {**os.environ, "UV_PYTHON_DOWNLOADS": "never"}
    offline = subprocess.run([*command, "--offline"], capture_output=True, text=True, env=environment, check=False)
    if offline.returncode != 0 and offline_only:
        raise LayerBuildError(f"the Lambda layer's wheels are not all in uv's cache: {offline.stderr.strip()}")
    if offline.returncode != 0:
        online = subprocess.run(command, capture_output=True, text=True, env=environment, check=False)
        if online.returncode != 0:
            raise LayerBuildError(f"building the Lambda layer failed: {online.stderr.strip()}")
    requirements_file.unlink()
    # Console scripts are of no use in a layer and carry the build machine's interpreter path.
    shutil.rmtree(output_dir / "python" / "bin", ignore_errors=True)


@jsii.implements(ILocalBundling)
class UvLocalBundling:
    """CDK local bundling: `cdk synth` and the in-process synth of the tests both build the layer this way."""

    def __init__(self, requirements: str, runtime: lambda_.Runtime) -> None:
        self._requirements = requirements
        self._runtime = runtime

    # jsii hands the bundling options over as one positional struct, not as keywords.
    def try_bundle(self, output_dir: str, options: object) -> bool:
        build_layer(Path(output_dir), self._requirements, self._runtime)
        return True


class DependenciesLayer(Construct):
    """One LayerVersion (`.layer`) holding exactly the pinned versions, for arm64 functions.

    Built by local bundling with uv, so no Docker and no region-specific public layer are needed. The Docker
    image CDK's API requires is never used: local bundling always runs or fails with a clear error.
    """

    def __init__(
        self, scope: Construct, construct_id: str, *, runtime: lambda_.Runtime, requirements: str | None = None
    ) -> None:
        """`requirements`: pip-style exact pins; by default the package's own (SHIPPED_REQUIREMENTS)."""
        super().__init__(scope, construct_id)
        self.requirements = shipped_requirements() if requirements is None else requirements
        code = lambda_.Code.from_asset(
            # Any existing folder: local bundling writes the asset, the custom hash names it.
            str(Path(__file__).resolve().parent),
            asset_hash_type=AssetHashType.CUSTOM,
            asset_hash=layer_hash(self.requirements, runtime),
            bundling=BundlingOptions(
                image=runtime.bundling_image,
                # cast: jsii's Python signature lists the options as keywords, its kernel passes one struct.
                local=cast(ILocalBundling, UvLocalBundling(self.requirements, runtime)),
            ),
        )
        self.layer = lambda_.LayerVersion(
            self,
            "Layer",
            code=code,
            compatible_runtimes=[runtime],
            compatible_architectures=[lambda_.Architecture.ARM_64],
            description=f"Lambda runtime dependencies: {_summary(self.requirements)}",
            removal_policy=RemovalPolicy.DESTROY,
        )


def _summary(requirements: str) -> str:
    """The direct dependencies' pins, for the layer's description (at most 256 characters in AWS)."""
    wanted = ("aws-lambda-powertools==", "pydantic==", "boto3==")
    return ", ".join(line for line in requirements.splitlines() if line.startswith(wanted))
