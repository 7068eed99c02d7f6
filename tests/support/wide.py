"""How wide the property tests search: the suite's own bound, or five times it under `make wide` (FF_WIDE=1)."""

from __future__ import annotations

import os

WIDE = os.environ.get("FF_WIDE") == "1"


def examples(suite: int) -> int:
    """Hypothesis examples for a property: `suite` in `make test`, five times as many in `make wide` / `make bench`."""
    return suite * 5 if WIDE else suite
