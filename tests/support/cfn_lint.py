"""cfn-lint on synthesized templates, as `make test` runs it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support.cdk import REPO


def cfn_lint(templates: list[Path]) -> str:
    """cfn-lint's findings on the templates, "" when none. The venv's cfn-lint: a bare name may find a pyenv shim that
    refuses under .python-version. One run for all of them (its findings name the file): most of a run is cfn-lint
    loading its schemas."""
    result = subprocess.run([str(Path(sys.executable).parent / "cfn-lint"), *map(str, templates)],
                            cwd=REPO, capture_output=True, text=True, check=False)
    return "" if result.returncode == 0 else result.stdout + result.stderr
