"""The package as another team gets it: the wheel built from this repository, installed with its extras into a fresh
venv, used from a directory outside the repository (no repository path on sys.path, nothing but the wheel)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from fire_and_forget.construct.dependencies_layer import uv_executable
from tests.support.cdk import REPO

PACKAGE = REPO / "tests" / "package"
EXAMPLE = REPO / "tests" / "pipeline"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([uv_executable(), "build", "--python", sys.executable, "--wheel", "--offline", "--out-dir", str(out),
                    str(REPO)],
                   check=True, capture_output=True, text=True)
    (built,) = out.glob("fire_and_forget-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel and its three extras at the lock's versions (uv's cache holds the wheels; the
    registry answers the index lookups)."""
    root = tmp_path_factory.mktemp("venv") / "venv"
    uv = uv_executable()
    subprocess.run([uv, "venv", "--python", sys.executable, "--offline", str(root)], check=True, capture_output=True)
    constraints = root.parent / "constraints.txt"
    exported = subprocess.run([uv, "export", "--frozen", "--no-hashes", "--no-emit-project", "--all-extras",
                               "--no-dev", "--no-header", "--no-annotate"], cwd=REPO, check=True,
                              capture_output=True, text=True).stdout
    constraints.write_text(exported, encoding="utf-8")
    subprocess.run([uv, "pip", "install", "--python", str(root / "bin" / "python"),
                    "--constraint", str(constraints), f"{wheel}[construct,cli,rehearsal]"],
                   check=True, capture_output=True, text=True)
    share_bytecode(Path(sysconfig.get_paths()["purelib"]), next((root / "lib").glob("python3.*/site-packages")))
    return root


def share_bytecode(compiled: Path, fresh: Path) -> int:
    """Give the fresh venv the bytecode this venv compiled for the very same source files: uv links both venvs' files
    to one copy in its cache, so a module's source there is this one (the same inode: the same bytes, mtime and size,
    which is all a .pyc is checked against), and importing it need not compile it again (10 s of this test's 30
    otherwise: aws_cdk, moto, botocore). A module whose file is another (the wheel's own package) compiles as usual;
    importlib records the fresh venv's path as each code object's file."""
    shared = 0
    for cached in compiled.rglob("__pycache__/*.pyc"):
        source = fresh / cached.parent.parent.relative_to(compiled) / f"{cached.name.split('.', 1)[0]}.py"
        if source.exists() and source.samefile(cached.parent.parent / source.name):
            target = source.parent / "__pycache__" / cached.name
            target.parent.mkdir(exist_ok=True)
            if not target.exists():
                os.link(cached, target)
                shared += 1
    return shared


def test_the_wheel_holds_the_package_and_nothing_of_the_repository(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names if not name.startswith("fire_and_forget-")}
    assert tops == {"fire_and_forget"}
    for part in ("runtime", "healing", "construct", "cli", "rehearsal"):
        assert f"fire_and_forget/{part}/__init__.py" in names
    assert "fire_and_forget/py.typed" in names
    assert "fire_and_forget/construct/asl/failure_tail.asl.json" in names
    assert "fire_and_forget/construct/layer-requirements.txt" in names


def test_a_third_workflow_synthesizes_runs_and_is_operated_from_the_installed_wheel(
    venv: Path, tmp_path: Path
) -> None:
    work = tmp_path / "team-app"
    work.mkdir()
    for name in ("third_workflow.py", "confirmation", "asl"):
        source = EXAMPLE / name
        (shutil.copytree if source.is_dir() else shutil.copy)(source, work / name)
    shutil.copy(PACKAGE / "outside_app.py", work / "outside_app.py")
    # The machine's PATH (node for the jsii kernel), none of the repository's Python paths.
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTHON", "VIRTUAL_ENV"))}
    done = subprocess.run([str(venv / "bin" / "python"), "outside_app.py", str(tmp_path / "cdk.out")], cwd=work,
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert Path(result["package"]).is_relative_to(venv)
    assert result["statuses"] == ["FAILED", "SUCCEEDED"]
    assert result["exit"] == 0 and result["failed_keys"] == ["r-2"]
    assert result["status_exit"] == 0 and result["status_stack"] == "Confirmations"
    assert result["queues"]["FailureDlqUrl"] == 1 and result["queues"]["SourceQueueUrl"] == 0


def test_the_installed_ff_ops_runs_from_its_console_script(venv: Path) -> None:
    done = subprocess.run([str(venv / "bin" / "ff-ops"), "--help"], capture_output=True, text=True, check=True)
    assert "failures" in done.stdout and "trace" in done.stdout
