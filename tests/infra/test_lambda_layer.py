"""The Lambda dependencies layer: uv.lock's exact versions, for arm64 and the runtime's Python, in every function."""

from __future__ import annotations

import json
import re
import sys
import tomllib
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest

from fire_and_forget.construct.code import RUNTIME
from fire_and_forget.construct.dependencies_layer import DependenciesLayer, build_layer, shipped_requirements
from tests.support.cdk import REPO, STACK_NAME

EM_AARCH64 = 183  # ELF e_machine of 64-bit ARM (Graviton)
LAMBDA_GROUP = "lambda"


def _layers(resources: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {lid: res for lid, res in resources.items() if res["Type"] == "AWS::Lambda::LayerVersion"}


@pytest.fixture(scope="module")
def layer_dir(cloud_assembly: Path, resources: dict[str, Any]) -> Path:
    """The layer's asset directory in the cloud assembly, found through the template's S3 key."""
    ((_, layer),) = _layers(resources).items()
    key = layer["Properties"]["Content"]["S3Key"]
    manifest = json.loads((cloud_assembly / f"{STACK_NAME}.assets.json").read_text(encoding="utf-8"))
    (entry,) = (e for e in manifest["files"].values() if any(d["objectKey"] == key for d in e["destinations"].values()))
    return cloud_assembly / str(entry["source"]["path"])


def _locked_lambda_group() -> dict[str, str]:
    """Name -> version of the `lambda` group and everything it pulls in, read from uv.lock itself."""
    lock = tomllib.loads((REPO / "uv.lock").read_text(encoding="utf-8"))
    packages = {p["name"]: p for p in lock["package"]}
    project = next(p for p in lock["package"] if p.get("source", {}).get("editable") == ".")
    pending = list(project["dev-dependencies"][LAMBDA_GROUP])
    found: dict[str, str] = {}
    while pending:
        requirement = pending.pop()
        package = packages[requirement["name"]]
        extras = requirement.get("extra", [])
        if requirement["name"] in found and not extras:
            continue
        found[package["name"]] = package["version"]
        pending.extend(package.get("dependencies", []))
        for extra in extras:
            pending.extend(package["optional-dependencies"][extra])
    return found


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _installed(layer_dir: Path) -> dict[str, str]:
    """Name -> version of every distribution in the layer, from its .dist-info directories."""
    found = {}
    for dist_info in (layer_dir / "python").glob("*.dist-info"):
        name, version = dist_info.name.removesuffix(".dist-info").rsplit("-", 1)
        found[_normalized(name)] = version
    return found


def test_no_public_powertools_parameter_is_resolved(template: dict[str, Any]) -> None:
    """Only the bootstrap version parameter is left: nothing depends on a region's public SSM parameters."""
    ssm_parameters = {
        p["Default"]
        for p in template.get("Parameters", {}).values()
        if p["Type"].startswith("AWS::SSM::Parameter::Value")
    }
    assert ssm_parameters == {"/cdk-bootstrap/hnb659fds/version"}
    assert "/aws/service/" not in json.dumps(template)


def test_every_function_uses_our_layer_on_its_runtime_and_architecture(resources: dict[str, Any]) -> None:
    ((layer_id, layer),) = _layers(resources).items()
    functions = [res["Properties"] for res in resources.values() if res["Type"] == "AWS::Lambda::Function"]
    assert len(functions) == 8  # the six task functions, the Reconciler and the Redriver
    for function in functions:
        assert function["Layers"] == [{"Ref": layer_id}]
        assert function["Runtime"] == RUNTIME.name
        assert function["Architectures"] == ["arm64"]
    assert layer["Properties"]["CompatibleRuntimes"] == [RUNTIME.name]
    assert layer["Properties"]["CompatibleArchitectures"] == ["arm64"]


def test_the_tests_run_on_the_lambda_runtimes_python() -> None:
    """The handler tests prove what runs in AWS only if they run on the runtime's Python minor version."""
    assert RUNTIME.name == f"python{sys.version_info.major}.{sys.version_info.minor}"


def test_layer_holds_exactly_the_versions_of_uv_lock(layer_dir: Path) -> None:
    locked = {_normalized(name): version for name, version in _locked_lambda_group().items()}
    assert {"aws-lambda-powertools", "pydantic", "pydantic-core", "boto3", "botocore", "aws-xray-sdk"} <= set(locked)
    assert _installed(layer_dir) == locked


def test_compiled_extensions_are_built_for_graviton_and_the_runtimes_python(layer_dir: Path) -> None:
    tag = f"cpython-{RUNTIME.name.removeprefix('python').replace('.', '')}-aarch64-linux-gnu"
    assert (layer_dir / "python" / "pydantic_core" / f"_pydantic_core.{tag}.so").is_file()
    extensions = list((layer_dir / "python").rglob("*.so"))
    assert extensions
    for extension in extensions:
        assert extension.name.endswith(f".{tag}.so"), extension
        header = extension.read_bytes()[:20]
        assert header[:5] == b"\x7fELF\x02", extension  # a 64-bit ELF shared object
        assert int.from_bytes(header[18:20], "little") == EM_AARCH64, extension


def test_layer_uses_lambdas_python_directory_layout(layer_dir: Path) -> None:
    """Lambda puts /opt/python on sys.path for Python runtimes: packages must sit under python/."""
    assert {path.name for path in layer_dir.iterdir()} == {"python"}
    assert (layer_dir / "python" / "aws_lambda_powertools" / "__init__.py").is_file()


def _layer_key(tmp_path: Path, requirements: str) -> str:
    """The layer's S3 key for these pins, synthesized without bundling (the key is computed before it)."""
    app = cdk.App(context={"aws:cdk:bundling-stacks": []}, outdir=str(tmp_path))
    stack = cdk.Stack(app, "LayerOnly")
    DependenciesLayer(stack, "Dependencies", runtime=RUNTIME, requirements=requirements)
    template = app.synth().get_stack_by_name("LayerOnly").template
    (layer,) = _layers(template["Resources"]).values()
    key: str = layer["Properties"]["Content"]["S3Key"]
    return key


def test_asset_hash_follows_the_locked_versions(resources: dict[str, Any], tmp_path: Path) -> None:
    """A new pin in uv.lock is a new asset (so `cdk deploy` publishes a new layer version); the same pins are not."""
    locked = shipped_requirements()
    pin = next(line for line in locked.splitlines() if line.startswith("pydantic=="))
    (layer,) = _layers(resources).values()
    assert _layer_key(tmp_path / "same", locked) == layer["Properties"]["Content"]["S3Key"]
    bumped = locked.replace(pin, f"{pin}.post1")
    assert _layer_key(tmp_path / "bumped", bumped) != layer["Properties"]["Content"]["S3Key"]


def test_layer_builds_without_network_after_make_install(tmp_path: Path) -> None:
    """make install builds the layer once, so uv's cache holds every wheel: synth then needs no package index."""
    build_layer(tmp_path, shipped_requirements(), RUNTIME, offline_only=True)
    assert (tmp_path / "python" / "pydantic_core").is_dir()
