"""Run mutmut's CLI with lambdas/ as an import root, and the app synthesized once for every mutant's pytest session.

- Handler code is imported as `common.inventory`, not `lambdas.orders.common.inventory` (pytest's pythonpath, like
  the Lambda asset), and the runtime as `fire_and_forget.deliveries`; mutmut only strips a `src.` prefix, so the
  prefixes `lambdas.` and then an example's folder (`orders.`, `catalog.`) are stripped too.
- mutmut starts one pytest session per mutant, and the session fixture `cloud_assembly` would synthesize the CDK app
  in each (5-8 s, more than most mutants' tests). No mutant touches stacks/, so `run` synthesizes once, in a child
  process (jsii's node process is not inherited by mutmut's forks), and names it in FF_TEST_CLOUD_ASSEMBLY.

Usage (as `make mutation` does): python tests/support/mutmut_lambdas.py run --max-children 1
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from mutmut.utils import format_utils

REPO = Path(__file__).resolve().parents[2]
_strip_prefix = format_utils.strip_prefix


EXAMPLE_ROOTS = ("orders.", "catalog.")  # each example's handler folder is an import root of its own


def _strip_lambdas(text: str, *, prefix: str, strict: bool = False) -> str:
    text = _strip_prefix(text, prefix="lambdas.")
    for root in EXAMPLE_ROOTS:
        text = _strip_prefix(text, prefix=root)
    return _strip_prefix(text, prefix=prefix, strict=strict)


format_utils.strip_prefix = _strip_lambdas  # type: ignore[assignment]


def synthesize_once(outdir: Path) -> Path:
    """The app synthesized into `outdir` by a child Python; returns the cloud assembly directory."""
    script = "import sys, pathlib, tests.support.cdk as cdk; print(cdk.synthesize(pathlib.Path(sys.argv[1])))"
    done = subprocess.run(
        [sys.executable, "-c", script, str(outdir)], cwd=REPO, check=True, capture_output=True, text=True
    )
    return Path(done.stdout.strip().splitlines()[-1])


def main() -> int:
    from mutmut.__main__ import cli

    if sys.argv[1:2] != ["run"] or os.environ.get("FF_TEST_CLOUD_ASSEMBLY"):
        return int(cli() or 0)
    os.environ["FF_MUTATION_RUN"] = "1"  # tests/conftest.py: unit tests first
    with tempfile.TemporaryDirectory(prefix="mutmut-cdk-") as outdir:
        os.environ["FF_TEST_CLOUD_ASSEMBLY"] = str(synthesize_once(Path(outdir)))
        return int(cli() or 0)


if __name__ == "__main__":
    sys.exit(main())
