"""The toolchain: the Lambda runtime's Python minor and a supported Node everywhere; an install path without uv."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from stacks.orders.tasks import RUNTIME
from tests.support.cdk import REPO

RUNTIME_MINOR = RUNTIME.name.removeprefix("python")  # "3.13"
SUPPORTED_NODE_MAJORS = (22, 24)
# What a make recipe needs besides the interpreter it looks for.
BASIC_TOOLS = ("bash", "sh", "ls", "sort", "mkdir", "cat", "make", "dirname", "echo", "head")


def _makefile_value(name: str) -> str:
    match = re.search(rf"^{name} := (.+)$", (REPO / "Makefile").read_text(encoding="utf-8"), re.MULTILINE)
    assert match, name
    return match.group(1).strip()


def test_every_python_setting_names_the_runtimes_minor() -> None:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    major, minor = RUNTIME_MINOR.split(".")
    assert pyproject["project"]["requires-python"] == f">={RUNTIME_MINOR},<{major}.{int(minor) + 1}"
    assert pyproject["tool"]["ruff"]["target-version"] == f"py{major}{minor}"
    assert pyproject["tool"]["mypy"]["python_version"] == RUNTIME_MINOR
    assert (REPO / ".python-version").read_text(encoding="utf-8").strip() == RUNTIME_MINOR
    assert _makefile_value("PYTHON_MINOR") == RUNTIME_MINOR
    ci = (REPO / ".github" / "workflows" / "ci.yml").read_text(encoding="utf-8")
    assert f'python-version: "{RUNTIME_MINOR}"' in ci


def test_node_is_supported_everywhere_it_is_named() -> None:
    package = json.loads((REPO / "package.json").read_text(encoding="utf-8"))
    assert package["engines"]["node"] == " || ".join(f"^{major}.0.0" for major in SUPPORTED_NODE_MAJORS)
    assert int(_makefile_value("NODE_VERSION").split(".")[0]) in SUPPORTED_NODE_MAJORS
    ci = (REPO / ".github" / "workflows" / "ci.yml").read_text(encoding="utf-8")
    assert 'node-version: "22"' in ci
    assert "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION" not in (REPO / "Makefile").read_text(encoding="utf-8")


def test_jsii_starts_a_supported_node() -> None:
    """The `node` on PATH is what jsii (the in-process synth) starts: 22 or 24, from .tools if the machine's is old."""
    node = shutil.which("node")
    assert node, "no node on PATH: run `make install`"
    version = subprocess.run([node, "-p", "process.versions.node"], capture_output=True, text=True, check=True)
    assert int(version.stdout.split(".")[0]) in SUPPORTED_NODE_MAJORS, f"{node} is Node {version.stdout.strip()}"


def test_cdk_app_command_needs_no_uv_and_says_what_is_missing(tmp_path: Path) -> None:
    """cdk.json's app runs the venv's Python directly; without a venv it tells the user to run make install."""
    assert json.loads((REPO / "cdk.json").read_text(encoding="utf-8"))["app"] == "scripts/cdk-app"
    (tmp_path / "scripts").mkdir()
    shutil.copy2(REPO / "scripts" / "cdk-app", tmp_path / "scripts" / "cdk-app")
    result = subprocess.run(
        ["scripts/cdk-app"], cwd=tmp_path, capture_output=True, text=True, check=False, env={"PATH": "/usr/bin:/bin"}
    )
    assert result.returncode == 1
    assert "run 'make install' first" in result.stderr.lower()


def _bare_path(tmp_path: Path, *extra: tuple[str, Path]) -> str:
    """A PATH with only the basic tools (plus `extra` name -> target links): no python3.13, uv or pyenv of the host."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in BASIC_TOOLS:
        found = shutil.which(tool)
        assert found, tool
        (bin_dir / tool).symlink_to(found)
    for name, target in extra:
        (bin_dir / name).symlink_to(target)
    return str(bin_dir)


def _make_python(project: Path, path: str) -> subprocess.CompletedProcess[str]:
    shutil.copy2(REPO / "Makefile", project / "Makefile")
    return subprocess.run(
        ["make", "-s", ".tools/python"],
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
        env={"PATH": path, "HOME": str(project)},
    )


def test_make_install_says_which_python_to_install_when_there_is_none(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    result = _make_python(project, _bare_path(tmp_path))
    assert result.returncode != 0
    assert f"needs Python {RUNTIME_MINOR}" in result.stderr
    assert f"pyenv install {RUNTIME_MINOR}" in result.stderr


def test_make_install_finds_a_pyenv_python_the_shims_do_not_offer(tmp_path: Path) -> None:
    """pyenv's shims refuse a non-global version; the Makefile looks under `pyenv root`/versions itself.

    The test interpreter stands in for pyenv's: it is of the runtime's minor (test_lambda_layer checks that).
    """
    root = tmp_path / "pyenv-root"
    interpreter = root / "versions" / f"{RUNTIME_MINOR}.99" / "bin" / f"python{RUNTIME_MINOR}"
    interpreter.parent.mkdir(parents=True)
    interpreter.symlink_to(sys.executable)
    fake_pyenv = tmp_path / "pyenv"
    fake_pyenv.write_text(f'#!/bin/sh\n[ "$1" = root ] && echo "{root}"\n', encoding="utf-8")
    fake_pyenv.chmod(0o755)
    project = tmp_path / "project"
    project.mkdir()
    result = _make_python(project, _bare_path(tmp_path, ("pyenv", fake_pyenv)))
    assert result.returncode == 0, result.stderr
    assert (project / ".tools" / "python").read_text(encoding="utf-8").strip() == str(interpreter)
    assert os.access(interpreter, os.X_OK)


_CDK_IMPORT = re.compile(r"^\s*(?:from (aws_cdk(?:\.[\w.]+)?) import ([\w, ()]+)|import (aws_cdk(?:\.[\w.]+)?))",
                         re.MULTILINE)


def _cdk_modules_imported() -> set[str]:
    """Every aws_cdk module the code `make lint` type-checks imports: `from aws_cdk import aws_sqs` names
    aws_cdk.aws_sqs."""
    checked = re.search(r"^\t\$\(RUN\) mypy (.+)$", (REPO / "Makefile").read_text(encoding="utf-8"), re.MULTILINE)
    assert checked, "make lint's mypy line"
    sources = [path for name in checked.group(1).split() for path in ([REPO / name] if name.endswith(".py")
                                                                      else (REPO / name).rglob("*.py"))]
    found: set[str] = set()
    for source in sources:
        for package, names, module in _CDK_IMPORT.findall(source.read_text(encoding="utf-8")):
            if module:
                found.add(module)
                continue
            found.add(package)
            for name in re.findall(r"(\w+)(?: as \w+)?", names.replace("(", "").replace(")", "")):
                if name.startswith(("aws_", "interfaces")):
                    found.add(f"{package}.{name}")
    return found


def test_mypy_reads_every_cdk_module_the_code_imports_and_no_other() -> None:
    overrides = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]["overrides"]
    skipped = [o for o in overrides if o.get("follow_imports") == "skip"]
    followed = [o for o in overrides if o.get("follow_imports") == "normal"]
    assert [o["module"] for o in skipped] == [["aws_cdk.*"]]
    (read,) = (set(o["module"]) for o in followed)
    imported = _cdk_modules_imported()
    assert {"aws_cdk", "aws_cdk.aws_sqs", "aws_cdk.interfaces.aws_events"} <= imported  # the scan sees the code
    assert read == imported
