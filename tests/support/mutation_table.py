"""Per-module mutation scores from `mutmut results --all true` output, written as its own section of
docs/performance.md (between the markers below; `make bench` carries the section over when it rewrites the file).

A survivor docs/testing.md names in its "Equivalent mutants" list (a backticked mutant name, with the reason it cannot
change behaviour) counts as explained, apart from the survivors nothing explains. The tests each module was measured
against are read from mutmut's stats (which tests reached which function), when they are there.

Usage: python tests/support/mutation_table.py mutation-results.txt [--out docs/performance.md] [--seconds N]
       [--equivalents docs/testing.md] [--stats mutants/mutmut-stats.json]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# What counts as killed: a test failed, the mutant hung (timeout), or it crashed the run (segfault).
KILLED = {"killed", "timeout", "segfault"}
# What nothing noticed: a test ran and passed, or no test reached the mutated function.
UNNOTICED = {"survived", "no tests"}
BEGIN = "<!-- mutation-table:begin (tests/support/mutation_table.py) -->"
END = "<!-- mutation-table:end -->"
EQUIVALENTS_HEADING = "### Equivalent mutants"
_MUTANT = re.compile(r"`([^`\s]+__mutmut_\d+)`")


def module_of(mutant: str) -> str:
    return mutant.rsplit(".", 1)[0]


def statuses(lines: list[str]) -> dict[str, str]:
    """Mutant name -> its status, from `mutmut results --all true`."""
    found = {}
    for line in lines:
        name, sep, status = line.strip().rpartition(": ")
        if sep and "__mutmut_" in name:
            found[name] = status
    return found


def equivalents(document: str) -> set[str]:
    """The mutant names listed under the "Equivalent mutants" heading of docs/testing.md."""
    start = document.find(EQUIVALENTS_HEADING)
    if start == -1:
        return set()
    rest = document[start + len(EQUIVALENTS_HEADING):]
    following = re.search(r"^#{2,3} ", rest, re.M)
    return set(_MUTANT.findall(rest[: following.start()] if following else rest))


def scores(lines: list[str], explained: set[str] = frozenset()) -> dict[str, Counter[str]]:  # type: ignore[assignment]
    """Per module, how many mutants ended in each status; an explained survivor counts as "explained"."""
    by_module: dict[str, Counter[str]] = defaultdict(Counter)
    for name, status in statuses(lines).items():
        by_module[module_of(name)]["explained" if status in UNNOTICED and name in explained else status] += 1
    return dict(by_module)


def measured_against(stats: dict[str, object]) -> dict[str, str]:
    """Per module, the test files that reached its functions (mutmut's stats), grouped by folder."""
    tests = stats.get("tests_by_mangled_function_name", {})
    files: dict[str, set[str]] = defaultdict(set)
    for function, ids in tests.items() if isinstance(tests, dict) else ():
        for test in ids:
            files[module_of(function)].add(str(test).split("::", 1)[0])
    described = {}
    for module, paths in files.items():
        by_folder: dict[str, list[str]] = defaultdict(list)
        for path in sorted(paths):
            folder, _, name = path.rpartition("/")
            by_folder[folder].append(name.removesuffix(".py"))
        described[module] = "; ".join(
            f"{folder}: {', '.join(names)}" if len(names) <= 9 else f"{folder}: {len(names)} files"
            for folder, names in sorted(by_folder.items()))
    return described


def previous_rows(document: str) -> dict[str, tuple[Counter[str], str]]:
    """The rows of the table `document`'s mutation section holds: module -> (counts, tests measured against).

    Reads this layout and the one before it (module, mutants, killed, survived, no tests, not run, score)."""
    start, end = document.find(BEGIN), document.find(END)
    rows: dict[str, tuple[Counter[str], str]] = {}
    for line in document[start:end].splitlines() if start != -1 and end != -1 else []:
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) < 7 or not cells[1].isdigit() or cells[0].startswith("**"):
            continue
        module = cells[0].rstrip(" †")
        if len(cells) >= 10:  # module, mutants, killed, survived, explained, no tests, not run, %, %, tests
            mutants, killed, survived, explained, no_tests, not_run = (int(c) for c in cells[1:7])
            tests = cells[9]
        else:
            mutants, killed, survived, no_tests, not_run = (int(c) for c in cells[1:6])
            explained, tests = 0, ""
        counts = Counter({"killed": killed, "survived": survived, "explained": explained, "no tests": no_tests,
                          "not checked": not_run})
        counts["other"] = mutants - sum(counts.values())
        rows[module] = (+counts, tests)
    return rows


Rows = dict[str, Counter[str]]


def carry_over(by_module: Rows, tests: dict[str, str],
               previous: dict[str, tuple[Counter[str], str]]) -> tuple[Rows, dict[str, str], set[str]]:
    """A module this run did not run (every mutant "not checked") keeps its previous row; returns the modules kept."""
    kept = set()
    merged, merged_tests = dict(by_module), dict(tests)
    for module, (counts, measured) in previous.items():
        current = by_module.get(module)
        if current is None or current["not checked"] == sum(current.values()):
            merged[module], merged_tests[module] = counts, measured
            kept.add(module)
    return merged, merged_tests, kept


def table(by_module: dict[str, Counter[str]], tests: dict[str, str] | None = None,
          carried: set[str] = frozenset()) -> str:  # type: ignore[assignment]
    rows = [
        "| module | mutants | killed | survived | explained | no tests | not run | killed % | killed or explained %"
        " | tests measured against |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    total: Counter[str] = Counter()
    for module in sorted(by_module):
        counts = by_module[module]
        total.update(counts)
        rows.append(_row(f"{module} †" if module in carried else module, counts, (tests or {}).get(module, "")))
    rows.append(_row("**all**", total, ""))
    return "\n".join(rows)


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f} %" if whole else "-"


def _row(module: str, counts: Counter[str], tests: str) -> str:
    # A mutant not run yet (an interrupted or partial run) is left out of the score, and counted apart. A mutant no
    # test reaches counts as a survivor: nothing would notice it (unless it is explained).
    run = sum(counts.values()) - counts["not checked"]
    killed = sum(counts[status] for status in KILLED)
    return (
        f"| {module} | {sum(counts.values())} | {killed} | {counts['survived']} | {counts['explained']} |"
        f" {counts['no tests']} | {counts['not checked']} | {_percent(killed, run)} |"
        f" {_percent(killed + counts['explained'], run)} | {tests} |"
    )


def section(by_module: dict[str, Counter[str]], seconds: int | None = None, tests: dict[str, str] | None = None,
            note: str = "", carried: set[str] = frozenset()) -> str:  # type: ignore[assignment]
    took = f" The run took {seconds // 60} min {seconds % 60} s." if seconds is not None else ""
    if carried:
        took += " † not run this time: the row of the module's previous run."
    return "\n".join(
        [
            BEGIN,
            "## Mutation testing",
            "",
            "`make mutation` (mutmut 3.8, one worker, `nice`): each target module's mutants, each run against the"
            " selected tests (pyproject.toml, `[tool.mutmut]`) that reach the mutated function; the last column names"
            " them. A survivor that cannot change behaviour is explained in docs/testing.md (\"Equivalent mutants\")"
            f" and counted apart.{took}{(' ' + note) if note else ''}",
            "",
            table(by_module, tests, carried),
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
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "performance.md")
    parser.add_argument("--seconds", type=int, default=None, help="wall time of the mutmut run")
    parser.add_argument("--equivalents", type=Path, default=REPO / "docs" / "testing.md")
    parser.add_argument("--stats", type=Path, default=REPO / "mutants" / "mutmut-stats.json")
    parser.add_argument("--note", default="", help="a sentence added to the section's introduction")
    args = parser.parse_args(argv)
    explained = equivalents(args.equivalents.read_text(encoding="utf-8")) if args.equivalents.exists() else set()
    tests = measured_against(json.loads(args.stats.read_text(encoding="utf-8"))) if args.stats.exists() else {}
    by_module = scores(args.results.read_text(encoding="utf-8").splitlines(), explained)
    document = args.out.read_text(encoding="utf-8")
    by_module, tests, carried = carry_over(by_module, tests, previous_rows(document))
    print(table(by_module, tests, carried))
    args.out.write_text(with_section(document, section(by_module, args.seconds, tests, args.note, carried)), "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
