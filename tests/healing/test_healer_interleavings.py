"""Proof by exploration: the healers' steps interleaved with late commits, second runs, crashes, redrives,
duplicates and resends, through the real handlers, the real Reconciler and Redriver code and moto's services.

The suite's bound (tests/healing/scenarios.py, SUITE) is explored once per module; each scenario's test asserts that
every violation the books found is one of the defects the explorer found (scenarios.DEFECTS); each defect has its
own test, a strict xfail while the code has it, a guard against its return once it is fixed. The windows the design
accepts are listed, not hidden.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.healing.books import (
    HANDLE_FAILURE_WINDOW,
    NOTIFY_WINDOW,
    PUBLISH_WINDOW,
    RECORD_WINDOW,
    Finding,
    Leftovers,
    check,
)
from tests.healing.explorer import Report
from tests.healing.harness import TASK_HANDLERS, healing_explorer
from tests.healing.scenarios import DEFECTS, SUITE, Defect, known_defect

SCENARIOS = {scenario.name: scenario for scenario in SUITE}


@pytest.fixture(scope="module")
def reports(template: dict[str, Any]) -> Iterator[dict[str, Report]]:
    """Every suite scenario explored once (about 12 s on one core): the tests below read what they found."""
    found: dict[str, Report] = {}
    cpu = time.process_time()
    with pytest.MonkeyPatch.context() as monkeypatch, healing_explorer(template, monkeypatch) as explorer:
        for scenario in SUITE:
            found[scenario.name] = explorer.explore(scenario, known_defect)
    total = sum(r.runs for r in found.values()), sum(r.steps for r in found.values())
    print(f"\nhealing explorer, suite bound: {total[0]} interleavings, {total[1]} steps, "
          f"{sum(r.seconds for r in found.values()):.1f} s ({time.process_time() - cpu:.1f} s of CPU)",
          file=sys.stderr)
    yield found


def describe(report: Report) -> str:
    lines = [f"{report.scenario}: {report.runs} interleavings ({report.steps} steps) in {report.seconds:.1f} s"]
    for (_rule, _accepted, defect), (finding, schedule, count) in report.findings.items():
        kind = "accepted" if finding.accepted else defect or "VIOLATION"
        lines.append(f"  [{kind}] {finding.rule}: {finding.detail} ({count} runs); shortest schedule:")
        lines += [f"      {step}" for step in schedule]
    return "\n".join(lines)


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_every_interleaving_keeps_the_books_but_for_the_known_defects(reports: dict[str, Report], name: str) -> None:
    report = reports[name]
    print("\n" + describe(report), file=sys.stderr)
    assert report.runs > 0 and report.steps > report.runs
    unexplained = [(f, s) for f, s, _n in report.unexplained()]
    assert not unexplained, "\n".join(f"{f.rule}: {f.detail}\n    " + "\n    ".join(s) for f, s in unexplained)


def _xfail(defect: Defect) -> Any:
    """An open defect's test fails until it is fixed (then the strict xfail fails: set `open=False`); a fixed
    one's test keeps it from coming back."""
    marks = [pytest.mark.xfail(strict=True, reason=defect.reason)] if defect.open else []
    return pytest.param(defect, marks=marks, id=defect.key)


# Where each defect shows in the suite's bound (the shortest schedule is printed by the scenario's test).
SHOWN_BY = {
    "late-charge": "late ChargePayment (abort+late)",
    "copy-adopts-charge": "late ChargePayment (timeout+late)",
    "late-claim": "late ReserveInventory (timeout+late)",
    "late-shipment": "late ArrangeShipping (timeout+late)",
    "late-tail-claim": "abort in ClaimFailure",
}


@pytest.mark.parametrize("defect", [_xfail(d) for d in DEFECTS])
def test_no_schedule_shows_the_defect(reports: dict[str, Report], defect: Defect) -> None:
    report = reports[SHOWN_BY[defect.key]]
    shown = [(f, s) for (_r, _a, key), (f, s, _n) in report.findings.items() if key == defect.key]
    assert not shown, f"{defect.reason}:\n" + "\n".join(f"{f.rule}: {f.detail}" for f, _s in shown)


def test_the_accepted_windows_are_reached_and_listed(reports: dict[str, Report]) -> None:
    accepted = {f.accepted for r in reports.values() for f, _s, _n in r.accepted()}
    for report in reports.values():
        for finding, schedule, count in report.accepted():
            print(f"\naccepted in {report.scenario} ({count} runs): {finding.accepted}\n  "
                  + "\n  ".join(schedule), file=sys.stderr)
    assert accepted == {HANDLE_FAILURE_WINDOW, PUBLISH_WINDOW, RECORD_WINDOW, NOTIFY_WINDOW}


def test_the_bound_reaches_every_healer_every_fault_and_every_outcome(reports: dict[str, Report]) -> None:
    assert all(SHOWN_BY[d.key] in SCENARIOS for d in DEFECTS)
    seen: dict[str, int] = {}
    for report in reports.values():
        for key, count in report.seen.items():
            seen[key] = seen.get(key, 0) + count
    print(f"\nreached (runs): {dict(sorted(seen.items()))}", file=sys.stderr)
    for reached in ("execution", "late", "reconciler", "sweep", "redriver", "operator", "pipe", "crash",
                    "succeeded", "recorded", "announced", "redriven"):
        assert seen.get(reached, 0) > 0, f"the bound never reached {reached}"
    assert reports["event and sweep"].seen["sweep"] >= reports["event and sweep"].runs
    assert sum(r.runs for r in reports.values()) > 150


def test_the_explorer_runs_the_asl_s_own_tasks(template: dict[str, Any]) -> None:
    from tests.handlers.explorer import order_states

    states = order_states()
    lambda_tasks = {n for n, s in states.items() if s.get("Resource", "").endswith(":lambda:invoke")}
    assert set(TASK_HANDLERS) == lambda_tasks
    handlers = {r["Properties"]["Handler"] for r in template["Resources"].values()
                if r["Type"] == "AWS::Lambda::Function"}
    assert set(TASK_HANDLERS.values()) <= handlers


def _leftovers(**changes: Any) -> Leftovers:
    arn = "arn:aws:states:us-east-1:123456789012:execution:OrderSaga:first"
    record = {"messageId": "m-1", "body": "{}", "messageAttributes": {}}
    base: dict[str, Any] = {
        "executions": [{"arn": arn, "label": "first", "record": record, "status": "SUCCEEDED",
                        "end": "ArrangeShipping"}],
        "dlq": [], "recorded": [], "lineage": {}, "alerts": [], "reconciler_dlq": [], "source_left": [], "faults": [],
        "stock": {"S": 5},
        "tables": {"deliveries": [], "shipments": [], "reservations": [], "orders": [],
                   "payments": [{"pk": {"S": "ORDER#o"}, "attemptId": {"S": "m-1"}, "status": {"S": "CHARGED"}}],
                   "inventory": [{"sku": {"S": "S"}, "available": {"N": "5"}}]}}
    return Leftovers(**(base | changes))


def _rules(findings: list[Finding]) -> set[str]:
    return {f.rule for f in findings}


def test_the_books_catch_a_charge_without_a_shipment_and_a_shipment_without_its_charge() -> None:
    assert "charged without a shipment or a refund" in _rules(check(_leftovers()))
    shipped = _leftovers().tables | {"shipments": [{"orderId": {"S": "o"}, "attemptId": {"S": "c-1"},
                                                    "status": {"S": "ARRANGED"}}]}
    assert "shipped without its own charge" in _rules(check(_leftovers(tables=shipped)))


def test_the_books_catch_a_lost_message_a_double_record_and_a_double_alert() -> None:
    arn = "arn:aws:states:us-east-1:123456789012:execution:OrderSaga:first"
    record = {"messageId": "m-1", "body": "{}", "messageAttributes": {}}
    stopped = [{"arn": arn, "label": "first", "record": record, "status": "TIMED_OUT", "end": "timeout"}]
    paid = _leftovers().tables | {"payments": []}
    assert "lost" in _rules(check(_leftovers(executions=stopped, tables=paid)))
    failure = {"record": record, "failure": {"state": "ChargePayment", "error": "PaymentDeclined"},
               "manualRepair": False, "executionArn": arn}
    findings = check(_leftovers(executions=stopped, tables=paid, dlq=[failure, failure], recorded=[failure, failure],
                                alerts=[f"about {arn}", f"again {arn}"]))
    # Two records of one execution are one place, but a second record the design did not accept is still caught
    assert {"recorded twice", "announced twice"} <= _rules(findings) and "in two places" not in _rules(findings)
    succeeded = [{**stopped[0], "status": "SUCCEEDED", "end": "ArrangeShipping"}]
    assert "in two places" in _rules(check(_leftovers(executions=succeeded, dlq=[failure], recorded=[failure])))
    assert "unannounced" in _rules(check(_leftovers(executions=stopped, tables=paid, dlq=[failure],
                                                    recorded=[failure])))
