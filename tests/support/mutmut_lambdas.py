"""Run mutmut's CLI with lambdas/ as an import root: handler code is imported as `common.inventory`, not
`lambdas.common.inventory` (pytest's pythonpath, like the Lambda asset), and mutmut only strips a `src.` prefix.

Usage (as `make mutation` does): python tests/support/mutmut_lambdas.py run --max-children 1
"""

from __future__ import annotations

import sys

from mutmut.utils import format_utils

_strip_prefix = format_utils.strip_prefix


def _strip_lambdas(text: str, *, prefix: str, strict: bool = False) -> str:
    return _strip_prefix(_strip_prefix(text, prefix="lambdas."), prefix=prefix, strict=strict)


format_utils.strip_prefix = _strip_lambdas  # type: ignore[assignment]

if __name__ == "__main__":
    from mutmut.__main__ import cli

    sys.exit(cli())
