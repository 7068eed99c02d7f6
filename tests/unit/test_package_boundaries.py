"""The package's parts import in one direction only, the Lambda code imports nothing it is not shipped with, and the
examples use the package's public API (docs/construct.md, "Public API"; README.md, "Layout")."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import fire_and_forget.cli
import fire_and_forget.construct
import fire_and_forget.rehearsal

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "src" / "fire_and_forget"
# Each part, the parts it may import, and the third-party distributions' modules it may import (its extra's).
PARTS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "runtime": (frozenset({"runtime"}), frozenset({"boto3", "botocore"})),
    "healing": (frozenset({"runtime", "healing"}), frozenset({"boto3", "botocore", "aws_lambda_powertools"})),
    "cli": (frozenset({"runtime", "cli"}), frozenset({"boto3", "botocore", "typer", "click", "rich", "jmespath"})),
    "construct": (frozenset({"runtime", "construct"}),
                  frozenset({"aws_cdk", "constructs", "cdk_nag", "jsii", "pydantic"})),
    "rehearsal": (frozenset({"runtime", "rehearsal"}),
                  frozenset({"boto3", "botocore", "moto", "time_machine", "werkzeug"})),
}
PUBLIC = {"construct": fire_and_forget.construct, "cli": fire_and_forget.cli, "rehearsal": fire_and_forget.rehearsal}
EXAMPLES = ("app.py", "stacks", "lambdas", "demos", "bench")
REPOSITORY_PACKAGES = frozenset({"stacks", "demos", "lambdas", "tests", "bench", "app", "common", "ops", "offline"})


def _imports(path: Path) -> Iterator[tuple[int, str, list[str]]]:
    """(line, module, names) of every import that runs (not those under `if TYPE_CHECKING:`)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped |= {id(child) for statement in node.body for child in ast.walk(statement)}
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, []
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module, [alias.name for alias in node.names]


def _sources(*roots: Path) -> list[Path]:
    return sorted(p for root in roots for p in ([root] if root.is_file() else root.rglob("*.py"))
                  if "__pycache__" not in p.parts)


@pytest.mark.parametrize("part", PARTS)
def test_each_part_imports_only_the_parts_and_libraries_it_may(part: str) -> None:
    parts, libraries = PARTS[part]
    wrong = []
    for path in _sources(PACKAGE / part):
        for line, module, _ in _imports(path):
            top, *rest = module.split(".")
            where = f"{path.relative_to(REPO)}:{line} imports {module}"
            if top == "fire_and_forget":
                if rest and rest[0] not in parts:
                    wrong.append(where)
            elif top in REPOSITORY_PACKAGES or (top not in sys.stdlib_module_names and top not in libraries):
                wrong.append(where)
    assert not wrong, "\n".join(wrong)


def test_the_package_root_imports_nothing() -> None:
    assert list(_imports(PACKAGE / "__init__.py")) == []


def test_the_examples_use_only_the_public_api() -> None:
    """From the construct, the CLI and the rehearsal, the names of their `__all__`; from the runtime, its modules
    (what a handler imports, copied into its asset)."""
    wrong = []
    for path in _sources(*(REPO / example for example in EXAMPLES)):
        lambda_code = path.is_relative_to(REPO / "lambdas")
        for line, module, names in _imports(path):
            top, *rest = module.split(".")
            where = f"{path.relative_to(REPO)}:{line} imports {module} {names}"
            if top != "fire_and_forget":
                if lambda_code and top in {"stacks", "demos", "bench", "ops", "offline"}:
                    wrong.append(where)
                continue
            if not rest or (lambda_code and rest[0] != "runtime"):
                wrong.append(where)
            elif rest[0] == "runtime":
                if len(rest) != 2 or any(name.startswith("_") for name in names):
                    wrong.append(where)
            elif len(rest) != 1 or rest[0] not in PUBLIC or set(names) - set(PUBLIC[rest[0]].__all__):
                wrong.append(where)
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize(("modules", "absent"), [
    (["fire_and_forget.runtime." + p.stem for p in _sources(PACKAGE / "runtime") if p.stem != "__init__"],
     ["aws_cdk", "typer", "rich", "moto", "aws_lambda_powertools", "pydantic"]),
    (["fire_and_forget.healing.reconciler", "fire_and_forget.healing.redriver"], ["aws_cdk", "typer", "rich", "moto"]),
    # boto3 and botocore's Config (half of ff-ops' start-up) wait for the first clients: --help and --version need none;
    # jmespath waits for a --query.
    (["fire_and_forget.cli.app"], ["aws_cdk", "moto", "aws_lambda_powertools", "boto3", "botocore.config", "jmespath"]),
    (["fire_and_forget.rehearsal"], ["aws_cdk", "typer"]),
], ids=["runtime", "healing", "cli", "rehearsal"])
def test_importing_a_part_loads_none_of_the_others_libraries(modules: list[str], absent: list[str]) -> None:
    """In a fresh interpreter, as a Lambda function, an operator's shell or a test process imports it."""
    probe = (f"import importlib, sys\nfor m in {modules!r}: importlib.import_module(m)\n"
             f"print(sorted(n for n in {absent!r} if n in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                          env={"AWS_DEFAULT_REGION": "us-east-1", "PATH": "/usr/bin:/bin"})
    assert done.stdout.strip() == "[]", done.stderr


def test_the_package_has_one_version_and_the_changelog_names_it() -> None:
    import tomllib

    import fire_and_forget

    declared = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    changelog = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    assert fire_and_forget.__version__ == declared
    assert f"\n## {declared} (" in changelog
