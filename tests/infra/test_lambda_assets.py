"""Each Lambda asset of the synthesized app holds every module its handler imports that the layer does not: imported
in a fresh interpreter whose path is the asset and the locked third-party libraries only (no repository path, no
installed `fire_and_forget`), every module of the pattern's package and of the handlers comes from the asset.

The rehearsal cannot show this: one process holds one `fire_and_forget`, so its handlers run the installed package
(fire_and_forget/rehearsal/lambda_runtime.py)."""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

from fire_and_forget.rehearsal.deployment import asset_directories
from tests.support.cdk import REPO, load_template

# The venv's site-packages without its .pth files (which put src/ and the repository on the path): the layer's
# libraries at the lock's versions, built here for this machine rather than arm64.
SITE = sysconfig.get_paths()["purelib"]
PROBE = """
import importlib, json, sys
asset, site, module = sys.argv[1:4]
sys.path[:] = [asset, *[p for p in sys.path if p.endswith(".zip") or "/lib/python" in p and "site-packages" not in p],
               site]
importlib.import_module(module)
print(json.dumps({name: getattr(m, "__file__", None) for name, m in sys.modules.items()}))
"""
PACKAGE_PARTS = {"runtime", "healing"}


def _functions(cloud_assembly: Path) -> list[tuple[str, Path, str]]:
    """(logical id, asset directory, handler module) of every function of both stacks."""
    from fire_and_forget.rehearsal.assembly import CloudAssembly
    from stacks.names import DEFAULT_STACK_NAME, catalog_stack_name

    found = []
    for stack in (DEFAULT_STACK_NAME, catalog_stack_name(DEFAULT_STACK_NAME)):
        assets = asset_directories(CloudAssembly.load(cloud_assembly, stack))
        template: dict[str, Any] = load_template(cloud_assembly, stack)
        for logical_id, resource in template["Resources"].items():
            if resource["Type"] == "AWS::Lambda::Function" and "Handler" in resource["Properties"]:
                key = resource["Properties"]["Code"]["S3Key"]
                found.append((logical_id, assets[key], resource["Properties"]["Handler"].rsplit(".", 1)[0]))
    return found


def test_every_function_of_both_stacks_is_checked(cloud_assembly: Path) -> None:
    handlers = {module for _, _, module in _functions(cloud_assembly)}
    assert {"fire_and_forget.healing.reconciler", "fire_and_forget.healing.redriver"} <= handlers
    assert len(_functions(cloud_assembly)) == 11  # six order tasks, one catalog task, two healers per stack


def test_each_asset_holds_what_its_handler_imports(cloud_assembly: Path) -> None:
    wrong = []
    for logical_id, asset, module in _functions(cloud_assembly):
        done = subprocess.run([sys.executable, "-S", "-c", PROBE, str(asset), SITE, module], capture_output=True,
                              text=True, env={"AWS_DEFAULT_REGION": "us-east-1", "POWERTOOLS_TRACE_DISABLED": "true"})
        if done.returncode != 0:
            wrong.append(f"{logical_id} ({module}): {done.stderr.strip().splitlines()[-1]}")
            continue
        files: dict[str, str | None] = json.loads(done.stdout)
        own = {asset.name for asset in asset.iterdir() if asset.is_dir()}
        for name, file in files.items():
            if name.split(".")[0] in own and file and not file.startswith(str(asset)):
                wrong.append(f"{logical_id}: {name} came from {file}, not the asset")
        shipped = {p.name for p in (asset / "fire_and_forget").iterdir() if p.is_dir() and p.name != "__pycache__"}
        if not shipped <= PACKAGE_PARTS:
            wrong.append(f"{logical_id}: the asset ships {sorted(shipped - PACKAGE_PARTS)} of the package")
        if module.startswith("fire_and_forget.") and module.split(".")[1] not in shipped:
            wrong.append(f"{logical_id}: {module} is not in its asset")
    assert not wrong, "\n".join(wrong)


def test_the_package_ships_the_locked_pins_of_the_lambda_group() -> None:
    """layer-requirements.txt (what DependenciesLayer installs for a team's app) is this repository's lock."""
    from fire_and_forget.construct.dependencies_layer import locked_requirements, shipped_requirements

    assert shipped_requirements() == locked_requirements(REPO)
