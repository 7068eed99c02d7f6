"""`make wide`: the healing explorer at its wide bound (not collected by the suite: no test_ prefix).

Every suite scenario with faults of every kind on any healer call (HEALING_FAULTS per run, default 1), aborts
beside timeouts, late invocations interleaved call by call, the tail stopped in ClaimFailure or a compensation, and
the redriven copies among the explored actors (tests/healing/scenarios.py, `wide`). It prints every finding with
its shortest schedule, and fails on any violation that is neither a known defect nor an accepted window.
HEALING_ONLY=<text> explores only the scenarios whose name contains it.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

import pytest

from tests.healing.harness import healing_explorer
from tests.healing.scenarios import known_defect, wide
from tests.healing.test_healer_interleavings import describe


def test_every_interleaving_at_the_wide_bound_keeps_the_books_but_for_the_known_defects(
        template: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    faults = int(os.environ.get("HEALING_FAULTS", "1"))
    only = os.environ.get("HEALING_ONLY", "")  # explore only the scenarios whose name contains it
    started, runs, steps, unexplained = time.perf_counter(), 0, 0, []
    with healing_explorer(template, monkeypatch) as explorer:
        for scenario in [s for s in wide(faults) if only in s.name]:
            report = explorer.explore(scenario, known_defect)
            runs, steps = runs + report.runs, steps + report.steps
            print(describe(report), file=sys.stderr, flush=True)
            unexplained += [(scenario.name, f) for f, _s, _n in report.unexplained()]
    print(f"total {runs} interleavings, {steps} steps, {time.perf_counter() - started:.0f} s "
          f"(up to {faults} fault(s) per run)", file=sys.stderr)
    assert not unexplained, unexplained
