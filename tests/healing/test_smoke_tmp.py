from __future__ import annotations
import os, sys
from typing import Any
import pytest
from tests.healing.harness import healing_explorer
from tests.healing.scenarios import SUITE, WIDE, defect_of

def test_smoke(template: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    chosen = WIDE if os.environ.get("W") else SUITE
    only = os.environ.get("ONLY")
    with healing_explorer(template, monkeypatch) as explorer:
        for scenario in chosen:
            if only and only not in scenario.name:
                continue
            report = explorer.explore(scenario)
            print(f"\n{report.scenario}: {report.runs} runs {report.steps} steps {report.seconds:.1f}s", file=sys.stderr)
            for finding, schedule, count in report.findings.values():
                d = defect_of(finding, schedule)
                print(f"  [{d.key if d else ('ACCEPTED' if finding.accepted else 'UNEXPECTED')}] {finding.rule}: {finding.detail} x{count}", file=sys.stderr)
                if not d and (os.environ.get("V") or not finding.accepted):
                    for line in schedule:
                        print("     ", line, file=sys.stderr)
