"""Per-module mutation scores from `mutmut results --all true` output, written as its own section of
docs/performance.md (between the markers below; `make bench` carries the section over when it rewrites the file).

Usage: python tests/support/mutation_table.py mutation-results.txt [--out docs/performance.md] [--seconds N]
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter, defaultdict
from pathlib import Path

# What counts as killed: a test failed, the mutant hung (timeout), or it crashed the run (segfault).
KILLED = {"killed", "timeout", "segfault"}
BEGIN = "<!-- mutation-table:begin (tests/support/mutation_table.py) -->"
END = "<!-- mutation-table:end -->"


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
    # A mutant not run yet (an interrupted or partial run) is left out of the score, and counted apart. A mutant no
    # test reaches counts as a survivor: nothing would notice it.
    run = sum(counts.values()) - counts["not checked"]
    killed = sum(counts[status] for status in KILLED)
    score = f"{100 * killed / run:.1f} %" if run else "-"
    return (
        f"| {module} | {sum(counts.values())} | {killed} | {counts['survived']} | {counts['no tests']} |"
        f" {counts['not checked']} | {score} |"
    )


def section(by_module: dict[str, Counter[str]], seconds: int | None = None) -> str:
    took = f" The run took {seconds // 60} min {seconds % 60} s." if seconds is not None else ""
    return "\n".join(
        [
            BEGIN,
            "## Mutation testing",
            "",
            "`make mutation` (mutmut 3.8, one worker, `nice`): each target module's mutants against tests/unit and"
            f' tests/handlers. Survivors and why they remain: docs/testing.md, "Mutation testing".{took}',
            "",
            table(by_module),
            END,
        ]
    )


def with_section(document: str, new_section: str) -> str:
    """`document` with its mutation section replaced by `new_section` (appended when it has none)."""
    start, end = document.find(BEGIN), document.find(END)
    if start == -1 or end == -1:
        return document.rstrip("\n") + "\n\n" + new_section + "\n"
    return document[:start] + new_section + document[end + len(END) :]


def carried_over(rendered: str, previous: str) -> str:
    """`rendered` (a fresh benchmark report) keeping the mutation section `previous` had, if any."""
    start, end = previous.find(BEGIN), previous.find(END)
    if start == -1 or end == -1:
        return rendered
    return with_section(rendered, previous[start : end + len(END)])


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("results", type=Path)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[2] / "docs" / "performance.md")
    parser.add_argument("--seconds", type=int, default=None, help="wall time of the mutmut run")
    args = parser.parse_args(argv)
    by_module = scores(args.results.read_text(encoding="utf-8").splitlines())
    print(table(by_module))
    args.out.write_text(with_section(args.out.read_text(encoding="utf-8"), section(by_module, args.seconds)), "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
