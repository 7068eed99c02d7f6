"""The healing explorer: every interleaving of the healers' steps with the actors a scenario names, depth first.

A step is one AWS call of one actor (tests/healing/gates.py). At each step the explorer may let any explored actor
that can move make its call, or, while the run's fault budget lasts, crash it after the call, lose the response,
or refuse the call. Alternatives restart from a snapshot of moto's tables, queues and topic and of the actors (each
resumed by replaying its log). After each run, tests/healing/books.py checks the books.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from moto.dynamodb.models import dynamodb_backends
from moto.sns.models import sns_backends
from moto.sqs.models import sqs_backends

from tests.healing.books import Finding, Leftovers, check, parse_bodies
from tests.healing.executions import Message
from tests.healing.gates import Decision
from tests.healing.services import ACCOUNT, EPOCH, REGION, Model, Services
from tests.healing.world import Config, RunWorld


@dataclass
class Scenario:
    """What runs, what is explored, and which faults. `stop`: where the original execution is stopped, and how."""

    name: str
    order: dict[str, Any]
    stop: tuple[str, Decision] | None = None
    script: dict[str, Decision] = field(default_factory=dict)  # set-up faults of the original execution
    explored: frozenset[str] = frozenset({"late", "reconciler"})
    arrivals: tuple[Message, ...] = ()  # a late duplicate, a resend: arrive once the original was stopped
    sweep_at_stop: bool = False
    operator: bool = False
    late_per_call: bool = False
    max_faults: int = 1
    reconciler_faults: tuple[Decision, ...] = (Decision.CRASH,)
    redrive_faults: tuple[Decision, ...] = (Decision.CRASH,)
    setup_reconciled: bool = False  # the stopped execution's event run belongs to the set-up
    redriver_runs: int = 2  # Redriver runs at most (each redrives what is due; 4 spend every automatic attempt)
    fault_calls: tuple[str, ...] = ()  # only these calls may be faulted ("sqs.send_message"); empty: every call
    arrival_steps: int | None = None  # a duplicate's or a resend's steps explored (None: all), the rest run after

    def phase_of(self, kind: str, label: str, spec: dict[str, Any]) -> int:
        if kind == "execution" and label == "first":
            return 0
        if kind == "reconciler" and self.setup_reconciled and "(first)" in label:
            return 0
        if kind == "reconciler" and "(first)" not in label:
            return 1 if "copy" in self.explored and "copy" in label else 2
        if kind == "sweep":
            return 1 if self.sweep_at_stop and label == "sweep#1" else 2
        if kind == "redriver":
            return 1 if "redriver" in self.explored and label == "redriver#1" else 2
        if kind == "execution":
            return 1 if ("copy" in self.explored and label.startswith("copy")) or label in self.explored else 2
        if kind == "operator":
            return 1
        if kind == "pipe":
            return 1 if "pipe" in self.explored else 2
        return 1 if kind in self.explored else 2

    def execution_faults(self, _actor: Any) -> tuple[Decision, ...]:
        return ()

    def on_stop(self, world: RunWorld, _actor: Any) -> None:
        for message in self.arrivals:  # arrives at any point: its first step is interleaved with the others'
            world.start_execution(message)
        if self.sweep_at_stop:
            world.add_sweep(world.services.model.clock + 60)


@dataclass
class Report:
    """What one exploration saw: runs, steps, time, and every finding with the shortest schedule showing it."""

    scenario: str
    runs: int = 0
    steps: int = 0
    seconds: float = 0.0
    # (rule, accepted window, known defect) -> the finding, its shortest schedule, how many runs showed it
    findings: dict[tuple[str, str | None, str | None], tuple[Finding, list[str], int]] = field(default_factory=dict)
    seen: dict[str, int] = field(default_factory=dict)

    def violations(self) -> list[tuple[Finding, list[str], int]]:
        return [entry for entry in self.findings.values() if entry[0].accepted is None]

    def unexplained(self) -> list[tuple[Finding, list[str], int]]:
        """Violations that are neither accepted nor one of the known defects, each judged on its own run."""
        return [entry for key, entry in self.findings.items() if key[1] is None and key[2] is None]

    def accepted(self) -> list[tuple[Finding, list[str], int]]:
        return [entry for entry in self.findings.values() if entry[0].accepted is not None]


class HealingExplorer:
    def __init__(self, services: Services, config: Config, stock: dict[str, int], first: Message,
                 set_stock: Callable[[str, int], None], tables: dict[str, str]) -> None:
        self.services = services
        self.config = config
        self.stock = stock
        self.first = first
        self.set_stock = set_stock
        self.tables = tables
        self.retried = {name: {e for r in state.get("Retry", []) for e in r["ErrorEquals"]} - {"States.ALL"}
                        for name, state in config.states.items()}

    def explore(self, scenario: Scenario, classify: Callable[[Finding, list[str]], str | None] = lambda _f, _s: None,
                observe: Callable[[RunWorld, list[Finding]], None] | None = None) -> Report:
        """Every schedule of `scenario`; `classify(finding, schedule)` names the known defect a run's finding shows."""
        self._classify = classify
        report = Report(scenario.name)
        started = time.perf_counter()
        self._reset()
        world = RunWorld(self.services, self.config, scenario)
        world.spawn("pipe", "pipe", {})
        first = Message(self.first.label, self.first.message_id, scenario.order)
        world.start_execution(first, script=self._script(scenario))
        world.start_new()
        self._visit(world, scenario, report, observe)
        report.seconds = time.perf_counter() - started
        self.services.runner.forget_all()
        return report

    def _script(self, scenario: Scenario) -> dict[str, Decision]:
        script = dict(scenario.script)
        if scenario.stop is not None:
            state, decision = scenario.stop
            script[state] = decision
        return script

    def _reset(self) -> None:
        for table in dynamodb_backends[ACCOUNT][REGION].tables.values():
            table.items.clear()
        for queue in sqs_backends[ACCOUNT][REGION].queues.values():
            queue._messages, queue._pending_messages, queue.deleted_messages = [], set(), set()
        sns_backends[ACCOUNT][REGION].topics[self.services.topic_arn].sent_notifications = []
        self.services.model = Model(clock=EPOCH)
        for sku, units in self.stock.items():
            self.set_stock(sku, units)

    def _choices(self, world: RunWorld, scenario: Scenario) -> list[tuple[int, Decision]]:
        while True:
            enabled = [a for a in world.actors.values() if a.state == "waiting" and world.enabled(a)]
            setup = [a for a in enabled if world.phase(a) == 0]
            if setup:
                actor = setup[0]
                scripted = actor.spec.get("script", {}).get(actor.pending.operation if actor.pending else "")
                return [(actor.key, scripted or Decision.GO)]
            explored = [a for a in enabled if world.phase(a) == 1]
            if explored:
                left = scenario.max_faults - len(world.counters.faults)
                return [(a.key, d) for a in explored for d in world.decisions(a, left)]
            rest = [a for a in enabled if world.phase(a) == 2]
            if rest:
                return [(rest[0].key, Decision.GO)]
            if world.quiet():
                return []

    def _visit(self, world: RunWorld, scenario: Scenario, report: Report,
               observe: Callable[[RunWorld, list[Finding]], None] | None) -> None:
        choices = self._choices(world, scenario)
        if not choices:
            report.runs += 1
            leftovers = self.leftovers(world)
            self._tally(world, leftovers, report)
            findings = check(leftovers)
            schedule = list(world.counters.schedule)
            for finding in findings:
                rule = (finding.rule, finding.accepted, None if finding.accepted else self._classify(finding, schedule))
                known = report.findings.get(rule)
                count = known[2] + 1 if known else 1
                if known is None or len(schedule) < len(known[1]):
                    report.findings[rule] = (finding, schedule, count)
                else:
                    report.findings[rule] = (known[0], known[1], count)
            if observe is not None:
                observe(world, findings)
            return
        snapshot = world.snapshot() if len(choices) > 1 else None
        for position, (key, decision) in enumerate(choices):
            if position and snapshot is not None:
                world.restore(snapshot)
            world.take(world.actors[key], decision)
            report.steps += 1
            self._visit(world, scenario, report, observe)

    def _tally(self, world: RunWorld, leftovers: Leftovers, report: Report) -> None:
        """What the bound reached: which actors acted, which faults struck, which outcomes were checked."""
        seen = report.seen
        for actor in world.actors.values():
            if actor.log:
                seen[actor.kind] = seen.get(actor.kind, 0) + 1
            for decision in actor.decisions:
                if decision is not Decision.GO:
                    seen[decision.value] = seen.get(decision.value, 0) + 1
        outcomes = {"succeeded": any(e["end"] == "ArrangeShipping" for e in leftovers.executions),
                    "recorded": bool(leftovers.recorded), "announced": bool(leftovers.alerts),
                    "redriven": any(e["label"].startswith("copy") for e in leftovers.executions)}
        for outcome, reached in outcomes.items():
            seen[outcome] = seen.get(outcome, 0) + int(reached)

    def leftovers(self, world: RunWorld) -> Leftovers:
        services, model = self.services, world.services.model
        executions = []
        for actor in world.actors.values():
            if actor.kind != "execution":
                continue
            view = model.executions[actor.spec["arn"]]
            stopped_in = view.pending["state"] if view.status in ("TIMED_OUT", "ABORTED") and view.pending else None
            executions.append({"arn": view.arn, "label": actor.label, "record": view.record, "status": view.status,
                               "end": actor.spec.get("result"), "stopped_in": stopped_in})
        backend = dynamodb_backends[ACCOUNT][REGION].tables  # raw: read without a call, as DynamoDB JSON
        tables = {role: [item.to_json()["Attributes"] for item in backend[name].all_items()]
                  for role, name in self.tables.items()}
        source = [{"messageId": m["id"], "messageAttributes": _attributes(m["attributes"])}
                  for m in services.queue_bodies(services.source_url)]
        return Leftovers(
            executions=executions, dlq=parse_bodies(services.queue_bodies(services.dlq_url)),
            recorded=list(model.recorded), lineage=dict(model.lineage),
            alerts=[n["message"] for n in services.published()],
            reconciler_dlq=list(model.reconciler_dlq), source_left=source, tables=tables,
            faults=list(world.counters.faults), stock=dict(self.stock), retried=self.retried)


def _attributes(stored: dict[str, Any]) -> dict[str, Any]:
    """moto's stored message attributes in the shape of the pipe's records."""
    return {name: {"stringValue": value.get("StringValue")} for name, value in stored.items()}
