"""The demo entry point, small: it accounts for every message and fails when it cannot."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from demos.orders import demo, long_running
from demos.orders.outcomes import HEALED, RETRIES_SPENT
from fire_and_forget.rehearsal.accounting import Ledger, MessageFate, Place
from tests.support import transcripts

# README.md quotes the chaos run's output as this command prints it (the report where `make demo` writes it).
QUOTED_COMMAND = ".venv/bin/python -m demos.orders.demo --orders 40 --seed 3 --chaos"


@pytest.mark.parametrize(("orders", "chaos"), [(16, False), (40, True)])
def test_the_demo_accounts_for_every_message(cloud_assembly: Path, full_assembly: Path, tmp_path: Path, orders: int,
                                             chaos: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the report where the demo writes it by default, under its default name
    report = Path("demo-report.json")
    args = ["--orders", str(orders), "--seed", "3", "--assembly", str(cloud_assembly)]
    # The chaos run, which README.md quotes, also runs the long-running orders (in the app with every optional part,
    # the carrier's confirmation among them, already synthesized for the suite; tests/demo/test_long_running.py).
    carrier = ["--carrier-assembly", str(full_assembly)] if chaos else ["--no-carrier"]
    result = CliRunner().invoke(demo.app, [*args, "--chaos", *carrier] if chaos else [*args, *carrier])

    assert result.exit_code == 0, result.output
    if chaos:  # README.md's transcript of the demo is this run's output
        assert QUOTED_COMMAND.split()[3:] == [*args[:4], "--chaos"]
        transcripts.check("demo", transcripts.as_transcript([(QUOTED_COMMAND, result.output)]))
    data = json.loads(report.read_text(encoding="utf-8"))
    conservation = data["conservation"]
    assert conservation["balanced"] is True and conservation["saga_violations"] == []
    assert conservation["in"] == conservation["accounted"] == data["messages_in"] == sum(data["outcomes"].values())
    assert conservation["announced_twice"] == conservation["lost"] == 0
    # The demo advanced its clock past every cool-off: nothing is left waiting for an automatic retry.
    assert conservation["waiting_for_retry"] == conservation["overdue_retries"] == 0
    if not chaos:  # without faults, no retries: a success is exactly its three steps
        assert data["transitions_per_outcome"]["succeeded"] == {"mean": 3.0, "min": 3, "max": 3}
    assert data["cost_per_million_orders_usd"] > 0
    assert "Conservation:" in result.output and "BALANCED" in result.output
    assert "\x1b[" not in result.output  # no control codes when not on a terminal
    # The demo ends with next steps: the verdict explained, both reports, the runbook entry of each outcome
    text = " ".join(result.output.split())
    assert "Next steps" in text and "BALANCED means every message that went in is in exactly one place" in text
    assert report.with_suffix(".html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert f"{report.with_suffix('.html')} (failure trends" in text
    assert "docs/runbook.md#r1-failed-orders-in-the-failure-dlq" in text and "make practice" in text
    assert f"Notifications published to the alerts topic: {data['notifications']['count']}, " in text
    assert "distinct subjects" in text and "https://" not in text  # the price pages are in the JSON report
    assert data["price_sources"]
    succeeded_runs = [run for run in data["timeline"] if run["status"] == "SUCCEEDED"]
    assert len(succeeded_runs) >= data["outcomes"]["succeeded"]  # the trend page's data: every execution
    assert "(not JSON): the body is not JSON" in text
    if chaos:
        check_long_running(data["long_running"], text)
        assert "Orders the carrier confirms itself" in report.with_suffix(".html").read_text(encoding="utf-8")
        assert data["outcomes"]["needs manual repair"] >= 1
        # One outage outlasts the Retry and heals by one redrive; one never heals and spends all three: the outcome
        # table shows both, and "needs manual repair" only where a compensation failed.
        assert conservation["redriven_automatically"] >= 2
        assert data["outcomes"][HEALED] >= 1 and data["outcomes"][RETRIES_SPENT] >= 1
        assert "transient, automatic redrives spent, in failure DLQ: docs/runbook.md#failuresneedaperson" in text
        assert "never handed over, in source DLQ" in data["outcomes"]
        assert "needs manual repair: docs/runbook.md#r1-failed-orders-in-the-failure-dlq (step 2" in text
        assert "never handed over, in source DLQ: docs/runbook.md#r2-messages-in-the-source-dlq" in text


def check_long_running(result: dict[str, Any], text: str) -> None:
    """The long-running orders, as the demo's child process reported them (demos/orders/long_running.py): each
    carrier behaviour ended in its one place, hours after SQS had deleted its message, announced as it should be."""
    # The hand-over: three executions waiting for the carrier, nothing left in the source queue.
    assert result["after_hand_over"] == {"executions_waiting": 3, "messages_left_in_source_queue": 0}
    rows = {row["carrier"].split()[1]: row for row in result["orders"]}
    assert set(rows) == {"confirms", "declines", "silent:"}
    confirmed, declined, silent = rows["confirms"], rows["declines"], rows["silent:"]
    assert (confirmed["outcome"], confirmed["executions"], confirmed["announced"]) == ("succeeded", 1, 0)
    assert confirmed["carrierAnswers"] == ["heartbeat 200", "success 200"] and 5 <= confirmed["hours"] < 5.1
    assert (declined["outcome"], declined["error"], declined["announced"]) == (
        "failed, compensated, in failure DLQ", "CarrierDeclined", 1)
    assert declined["carrierAnswers"] == ["failure 200"] and 3 <= declined["hours"] < 3.1
    # Silent: four hand-overs, each given up at the 6-hour heartbeat timeout, then recorded and announced once.
    assert (silent["outcome"], silent["executions"], silent["carrierRequests"], silent["announced"]) == (
        RETRIES_SPENT, 4, 4, 1)
    assert silent["carrierAnswers"] == [] and 24 <= silent["hours"] <= result["clock_hours"] < 26
    assert result["still_running"] == 0 and result["conservation"]["balanced"] is True
    assert result["source_visibility_timeout_seconds"] * 200 < silent["hours"] * 3600  # far past it
    assert "Orders the carrier confirms itself: 3 orders" in text and "-> BALANCED" in text


def test_a_long_order_id_is_cut_and_says_so() -> None:
    from demos.orders.report import shown_order_id

    assert shown_order_id("ord-000001") == "ord-000001"
    assert shown_order_id("o" * 5000) == "oooooooooooo... (5000 chars)"


def test_the_same_seed_gives_the_same_orders() -> None:
    first, second = demo.plan(50, seed=11, chaos=True), demo.plan(50, seed=11, chaos=True)
    assert [s.body for s in first.samples] == [s.body for s in second.samples]
    assert first.aborted == second.aborted
    assert demo.plan(50, seed=12, chaos=True).samples != first.samples


@pytest.mark.parametrize("seed", range(12))
def test_chaos_leaves_resent_orders_alone(seed: int) -> None:
    """Two messages of one order race (absorbed while the first attempt runs, run again after it failed), so a fault
    or an abort on a resent order, or a fault on no order in particular, would make the outcome table depend on the
    machine's load, not on the seed."""
    the_plan = demo.plan(40, seed=seed, chaos=True)
    ids = [s.order_id for s in the_plan.samples if s.order_id]
    resent = {order_id for order_id in ids if ids.count(order_id) > 1}
    assert resent  # the plan does resend some orders, so the check below can fail
    targeted = {f.key for f in demo.chaos_faults(random.Random(seed + 1), the_plan.samples, the_plan.aborted)}
    # Every fault names its order: one left to whichever execution meets it first moves retries between outcomes
    assert None not in targeted
    assert not (targeted | set(the_plan.aborted)) & resent
    assert not targeted & set(the_plan.aborted)  # an abort would end its order before the fault shows


def test_an_unbalanced_ledger_is_not_balanced() -> None:
    """The exit status rests on Ledger.balanced: each way of losing track must flip it."""
    ok = MessageFate("a", [Place.SUCCEEDED])
    assert Ledger({"a": ok}).balanced
    assert not Ledger({"a": MessageFate("a")}).balanced  # lost
    assert not Ledger({"a": MessageFate("a", [Place.SUCCEEDED, Place.FAILURE_DLQ])}).balanced
    assert not Ledger({"a": MessageFate("a", [Place.FAILURE_DLQ], announcements=2)}).balanced
    assert not Ledger({"a": MessageFate("a", [Place.FAILURE_DLQ], announcements=0)}).balanced
    assert not Ledger({"a": MessageFate("a", [Place.SUCCEEDED], announcements=1)}).balanced
    # Waiting for an automatic retry: quiet and unannounced while its cool-off runs, wrong once overdue or announced.
    assert Ledger({"a": MessageFate("a", [Place.WAITING])}).balanced
    assert not Ledger({"a": MessageFate("a", [Place.WAITING], overdue=True)}).balanced
    assert not Ledger({"a": MessageFate("a", [Place.WAITING], announcements=1)}).balanced


def test_missing_assembly_is_a_clear_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(demo.app, ["--assembly", str(tmp_path)])
    assert result.exit_code == 2
    assert "make synth" in " ".join(result.output.split())  # the message may wrap around a long path


def _demo_figures(cloud_assembly: Path, report: Path, *extra: str) -> dict[str, object]:
    args = ["--orders", "16", "--seed", "5", "--chaos", "--assembly", str(cloud_assembly), "--report", str(report),
            "--no-carrier"]
    result = CliRunner().invoke(demo.app, [*args, *extra])
    assert result.exit_code == 0, result.output
    data = json.loads(report.read_text(encoding="utf-8"))
    # What the run did, not how long it took on this machine
    return {key: data[key] for key in ("outcomes", "errors", "transitions_per_outcome", "conservation",
                                       "cost_per_million_orders_usd", "notifications")}


def test_the_same_seed_gives_the_same_run_on_a_loaded_machine(cloud_assembly: Path, tmp_path: Path) -> None:
    # Given a small chaos run's figures (timeouts, holds, aborts and retries among them)
    quiet = _demo_figures(cloud_assembly, tmp_path / "quiet.json")
    # When the same seed runs again with every core kept busy by other processes
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 2)]
    try:
        loaded = _demo_figures(cloud_assembly, tmp_path / "loaded.json")
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    # Then every outcome, error, transition count, announcement and the price are the same: the rehearsal's
    # timeouts and retries run on its own clock, not on the machine's speed
    assert loaded == quiet


def test_off_a_terminal_the_demo_says_it_is_still_working(cloud_assembly: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    # Given no terminal (CliRunner's output is not one) and a progress line due at every check
    monkeypatch.setattr(demo, "PROGRESS_LINE_SECONDS", 0.0)
    args = ["--orders", "8", "--seed", "3", "--assembly", str(cloud_assembly), "--report", str(tmp_path / "r.json"),
            "--no-carrier"]
    # When the demo runs
    result = CliRunner().invoke(demo.app, args)
    # Then it printed how far the executions had got while they ran
    assert result.exit_code == 0, result.output
    assert re.search(r"executions: \d+ of \d+ finished \(\d+ s\)", result.output), result.output


def test_long_running_orders_that_could_not_run_say_why_and_where_the_log_is(tmp_path: Path) -> None:
    background = long_running.InBackground(tmp_path / "cdk.out.carrier", seed=3, assembly=tmp_path / "nothing")
    with pytest.raises(RuntimeError, match="the long-running orders did not run") as raised:
        background.result()
    assert str(background.log) in str(raised.value) and "nothing" in background.log.read_text(encoding="utf-8")
