"""`make explore`: the interleaving explorer at its large bound (not collected by the suite: no test_ prefix).

The suite's two-attempt scenarios with up to EXPLORE_FAULTS faults (default 2) of the three distinct kinds, and
three attempts of one order with one fault of every kind.
Run it through pytest so that it gets the suite's fixtures: the synthesized template and the emulated account.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from tests.handlers.test_interleavings import explore_large


def test_every_interleaving_at_the_large_bound_keeps_the_books(template: dict[str, Any]) -> None:
    faults = int(os.environ.get("EXPLORE_FAULTS", "2"))
    started = time.perf_counter()
    totals, claim_outages = explore_large(template, faults)
    elapsed = time.perf_counter() - started
    print(f"total {sum(totals.values())} interleavings (two attempts: up to {faults} faults; three: one), "
          f"in {elapsed:.0f} s", file=sys.stderr)
    # The accepted double fault (tests/handlers/books.py): listed, so that a change in how often it happens shows.
    for run in claim_outages[:5]:
        print(f"  accepted: {run}", file=sys.stderr)
    print(f"{len(claim_outages)} runs of the accepted double fault (a duplicate's crash, then the claim store down)",
          file=sys.stderr)
    assert all(count > 0 for count in totals.values())
