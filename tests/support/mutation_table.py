"""Per-module mutation scores from `mutmut results --all true` output, as the Markdown table docs/testing.md keeps.

Usage: python tests/support/mutation_table.py mutation-results.txt
"""

from __future__ import annotations

import sys
from collections import Counter, defaultdict
from pathlib import Path

# What counts as killed: a test failed, the mutant hung (timeout), or it crashed the run (segfault).
KILLED = {"killed", "timeout", "segfault"}


def scores(lines: list[str]) -> dict[str, Counter[str]]:
    by_module: dict[str, Counter[str]] = defaultdict(Counter)
    for line in lines:
        name, sep, status = line.strip().rpartition(": ")
        if not sep or "__mutmut_" not in name:
            continue
        by_module[name.rsplit(".", 1)[0]][status] += 1
    return dict(by_module)


def table(by_module: dict[str, Counter[str]]) -> str:
    rows = [
        "| module | mutants | killed | survived | no tests | not run | score |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    total: Counter[str] = Counter()
    for module in sorted(by_module):
        counts = by_module[module]
        total.update(counts)
        rows.append(_row(module, counts))
    rows.append(_row("**all**", total))
    return "\n".join(rows)


def _row(module: str, counts: Counter[str]) -> str:
    # A mutant not run yet (an interrupted or partial run) is left out of the score, and counted apart.
    run = sum(counts.values()) - counts["not checked"]
    killed = sum(counts[status] for status in KILLED)
    score = f"{100 * killed / run:.1f} %" if run else "-"
    return (
        f"| {module} | {sum(counts.values())} | {killed} | {counts['survived']} | {counts['no tests']} |"
        f" {counts['not checked']} | {score} |"
    )


if __name__ == "__main__":
    print(table(scores(Path(sys.argv[1]).read_text(encoding="utf-8").splitlines())))
