"""One run of the healing explorer: the actors' bodies (real code on gated clients), when each actor starts, and
the clock that orders them.

Actors: executions of the order saga (the original, a late SQS duplicate, a producer's resend, redriven copies), a
late invocation of a stopped execution's in-flight task, Reconciler runs (the event, its redeliveries, the sweep),
Redriver runs, an operator's `ff-ops failures redrive`, and the pipe. A run is in three phases: the set-up (the
original execution up to where it is stopped, in one fixed order), the explored actors (every interleaving, faults
allowed), and the rest run to quiet in one fixed order, without faults.

Time is virtual. Each actor has the time it starts at (an event's redelivery 720 s after the receive it failed, the
next sweep 900 s later, the Redriver once every cool-off has passed); the clock moves there when it takes its first
step, and it may not move past the deadline of an actor still running (a Reconciler or Redriver run ends within its
function timeout, 120 s) except a late invocation's, which then simply dies.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from moto.sqs.models import sqs_backends

from fire_and_forget.healing.auto_redrive import redrive_due
from fire_and_forget.healing.reconciliation import Reconciler, ReconcilerSettings
from fire_and_forget.runtime.healing_policy import HealingPolicy
from fire_and_forget.runtime.records import Selection
from fire_and_forget.runtime.redrive import RedriveRequest, redrive_failures
from tests.healing.executions import EXECUTION_PREFIX, HANDLED_ERROR, Message, SagaWorld, late_call, run_execution
from tests.healing.gates import LATE, STOPS, Actor, Call, Decision
from tests.healing.services import ACCOUNT, REGION, ExecutionView, Services, at, short_queue

RECONCILER_TIMEOUT = 120  # the Reconciler's and the Redriver's function timeout
TASK_FUNCTION_TIMEOUT = 25  # a task function's timeout (its Task's TimeoutSeconds less 5)
EVENTS_VISIBILITY = 720  # the failure-events queue's visibility timeout: a failed event is received again after it
EVENTS_MAX_RECEIVES = 5  # then SQS moves it to the ReconcilerDlq
SWEEP_EVERY = 900
REDRIVER_DELAY = 3600  # the Redriver's run is placed once every cool-off has passed (maxCoolOffMinutes)
MAX_SWEEPS = 3
KEY_FIELD = "orderId"


@dataclass
class Config:
    """What stays fixed for a whole exploration: the ASL, the handlers, the healers' settings."""

    states: dict[str, Any]
    substitutions: dict[str, str]
    handlers: dict[str, str]  # Task state -> Handler path
    settings: ReconcilerSettings
    policy: HealingPolicy
    lookback: timedelta
    longest_run: timedelta
    order_id: str


@dataclass
class Counters:
    """Explorer-side state that is snapshotted with the actors."""

    next_key: int = 0
    redriver_runs: int = 0
    redriver_seen: tuple[str, ...] | None = None  # the DLQ's message ids when the last Redriver run ended
    sweeps: int = 0
    final_sweep: bool = False
    operator: bool = False
    copies: int = 0
    schedule: list[str] = field(default_factory=list)
    faults: list[str] = field(default_factory=list)


class RunWorld:
    """The actors of one run, their bodies, and the rules for starting new ones. `scenario` decides the phases."""

    def __init__(self, services: Services, config: Config, scenario: Any) -> None:
        self.services = services
        self.runner = services.runner
        self.config = config
        self.scenario = scenario
        self.actors: dict[int, Actor] = {}
        self.counters = Counters()
        runner = self.runner
        runner.finished = self._finished
        runner.register("execution", self._execution)
        runner.register("late", self._late)
        runner.register("reconciler", self._reconcile)
        runner.register("sweep", self._sweep)
        runner.register("redriver", self._redrive)
        runner.register("operator", self._operator)
        runner.register("pipe", self._pipe)

    # -- snapshots (moto's state is snapshotted by Services) --------------------------------------------------------

    def snapshot(self) -> Any:
        actors = {key: dataclasses.replace(a, log=list(a.log), decisions=list(a.decisions), spec=copy.deepcopy(a.spec))
                  for key, a in self.actors.items()}
        return actors, copy.deepcopy(self.counters), copy.deepcopy(self.services.model), self.services.snapshot()

    def restore(self, snapshot: Any) -> None:
        actors, counters, model, services = snapshot
        self.runner.forget_all()
        self.actors = {key: dataclasses.replace(a, log=list(a.log), decisions=list(a.decisions),
                                                spec=copy.deepcopy(a.spec)) for key, a in actors.items()}
        self.counters = copy.deepcopy(counters)
        self.services.model = copy.deepcopy(model)
        self.services.restore(services)

    # -- actors ----------------------------------------------------------------------------------------------------

    def spawn(self, kind: str, label: str, spec: dict[str, Any], *, now: float | None = None,
              deadline: float | None = None, dies_at_deadline: bool = False) -> Actor:
        key = self.counters.next_key
        self.counters.next_key += 1
        clock = self.services.model.clock
        when = clock if now is None else max(now, clock)
        if deadline is not None and not dies_at_deadline:
            deadline += when - (clock if now is None else now)
        actor = Actor(key, kind, label, spec, when, deadline, dies_at_deadline)
        actor.spec.setdefault("phase", self.scenario.phase_of(kind, label, spec))
        self.actors[key] = actor
        return actor

    def start_execution(self, message: Message, *, script: dict[str, Decision] | None = None) -> Actor:
        arn = EXECUTION_PREFIX + message.label
        self.services.model.executions[arn] = ExecutionView(arn, message.record, self.services.model.clock)
        return self.spawn("execution", message.label, {"message": dataclasses.asdict(message), "arn": arn,
                                                         "script": dict(script or {})})

    def phase(self, actor: Actor) -> int:
        limit = self.scenario.arrival_steps
        arrivals = {message.label for message in self.scenario.arrivals}
        if actor.kind == "execution" and limit is not None and actor.label in arrivals and len(actor.log) >= limit:
            return 2
        return int(actor.spec["phase"])

    # -- bodies ----------------------------------------------------------------------------------------------------

    def _execution(self, actor: Actor) -> Any:
        spec = actor.spec["message"]
        message = Message(spec["label"], spec["message_id"], spec["body"],
                          tuple((name, kind, value) for name, kind, value in spec["attributes"]))
        world = SagaWorld(self.services, self.config.states, self.config.substitutions, self.config.handlers,
                          message, actor.spec["arn"])
        return run_execution(self.runner, self.services, world, actor.now)

    def _late(self, actor: Actor) -> Any:
        pending = actor.spec["pending"]

        def perform(_decision: Decision) -> Any:
            return late_call(self.services, pending, pending.get("handler"), self.services.lambda_context)

        if actor.spec.get("per_call"):
            return late_call(self.services, pending, pending.get("handler"), self.services.lambda_context)
        return self.runner.gate(Call("late", pending["state"], actor.label), perform)

    def reconciler(self) -> Reconciler:
        services = self.services
        return Reconciler(sfn=services.sfn, dynamodb=services.gated_dynamodb(), sqs=services.gated_sqs(),
                          sns=services.gated_sns(), lambda_client=services.gated_lambda(),
                          settings=self.config.settings, policy=self.config.policy, sleep=lambda _s: None)

    def _reconcile(self, actor: Actor) -> Any:
        try:
            result = self.reconciler().reconcile(actor.spec["arn"], via="event", now=at(actor.now))
        except Exception as error:  # reconciler.from_queue: reported in batchItemFailures, redelivered
            return {"failed": type(error).__name__}
        return {"verdict": result.verdict.value}

    def _sweep(self, actor: Actor) -> Any:
        reconciler, now, left = self.reconciler(), at(actor.now), []
        for arn in reconciler.sweep(now, self.config.lookback, self.config.longest_run):
            try:
                reconciler.reconcile(arn, via="sweep", now=now)
            except Exception as error:  # reconciler.sweep: left to the next sweep
                left.append(f"{arn.rsplit(':', 1)[-1]}: {type(error).__name__}")
        return {"failed": left} if left else {}

    def _redrive(self, actor: Actor) -> Any:
        services = self.services
        try:
            report = redrive_due(services.gated_sqs(), dlq_url=services.dlq_url,  # type: ignore[arg-type]
                                 source_url=services.source_url, policy=self.config.policy, now=at(actor.now),
                                 key_field=KEY_FIELD)
        except Exception as error:
            return {"failed": type(error).__name__}
        left = sum(1 for o in (report.redrive.outcomes if report.redrive else []) if o.action.value != "redriven")
        return {"redriven": report.redriven, "left": left}

    def _operator(self, actor: Actor) -> Any:
        # ff-ops failures redrive --key <orderId>: the request cli_failures.failures_redrive builds.
        services = self.services
        request = RedriveRequest(Selection(keys=frozenset({self.config.order_id})), key_field=KEY_FIELD)
        try:
            report = redrive_failures(services.gated_sqs(), services.dlq_url,  # type: ignore[arg-type]
                                      services.source_url, request)
        except Exception as error:
            return {"failed": type(error).__name__}
        return {"outcomes": [o.action.value for o in report.outcomes]}

    def _pipe(self, actor: Actor) -> Any:
        while True:
            self.runner.gate(Call("pipe", "start-execution", "source"), lambda _d: self._deliver())

    def _deliver(self) -> None:
        """The pipe: receive one message, start an execution with it as the pipe's record, delete it."""
        sqs = self.services.sqs
        (message,) = sqs.receive_message(QueueUrl=self.services.source_url, MaxNumberOfMessages=1,
                                         MessageAttributeNames=["All"], WaitTimeSeconds=0)["Messages"]
        self.counters.copies += 1
        attributes = tuple((name, value["DataType"], value["StringValue"])
                           for name, value in sorted(message.get("MessageAttributes", {}).items()))
        body = json.loads(message["Body"])
        label = f"copy-{self.counters.copies}"
        self.start_execution(Message(label, message["MessageId"], body, attributes))
        sqs.delete_message(QueueUrl=self.services.source_url, ReceiptHandle=message["ReceiptHandle"])

    # -- what an actor's end sets off ------------------------------------------------------------------------------

    def _finished(self, actor: Actor, result: Any) -> None:
        actor.spec["result"] = result
        if actor.kind == "execution" and result is not None:
            view = self.services.model.executions[actor.spec["arn"]]
            if view.status == "FAILED" and view.error != HANDLED_ERROR:  # the rule ignores FailureRecorded
                self.spawn("reconciler", f"R({actor.label})#1", {"arn": view.arn, "receive": 1},
                           deadline=self.services.model.clock + RECONCILER_TIMEOUT)
        elif actor.kind == "reconciler" and (result is None or "failed" in result):
            receive = int(actor.spec["receive"]) + 1
            if receive > EVENTS_MAX_RECEIVES:
                self.services.model.reconciler_dlq.append(actor.spec["arn"])
            else:
                now = actor.now + EVENTS_VISIBILITY
                self.spawn("reconciler", actor.label.rsplit("#", 1)[0] + f"#{receive}",
                           {"arn": actor.spec["arn"], "receive": receive}, now=now, deadline=now + RECONCILER_TIMEOUT)
        elif actor.kind == "sweep" and (result is None or "failed" in result) \
                and self.counters.sweeps < MAX_SWEEPS:
            self.add_sweep(actor.now + SWEEP_EVERY)
        elif actor.kind == "redriver":
            # The Redriver runs every few minutes: another run comes if the DLQ changed, or this one left a due
            # record behind (a send or delete that failed) or died.
            seen = tuple(sorted(m["id"] for m in self.services.queue_bodies(self.services.dlq_url)))
            complete = result is not None and "failed" not in result and not result.get("left")
            self.counters.redriver_seen = seen if complete else None

    def add_sweep(self, now: float) -> Actor:
        self.counters.sweeps += 1
        return self.spawn("sweep", f"sweep#{self.counters.sweeps}", {}, now=now, deadline=now + RECONCILER_TIMEOUT)

    def stop(self, actor: Actor, decision: Decision) -> None:
        """Time out or abort an execution while its pending task is in flight; LATE: that task lands later."""
        view = self.services.model.executions[actor.spec["arn"]]
        pending = copy.deepcopy(view.pending)
        self.runner.kill(actor)
        actor.spec["result"] = decision.value
        clock = self.services.model.clock
        view.status = "TIMED_OUT" if decision in (Decision.TIMEOUT, Decision.TIMEOUT_LATE) else "ABORTED"
        view.stopped = clock
        kind = "ExecutionTimedOut" if view.status == "TIMED_OUT" else "ExecutionAborted"
        view.history = [*view.history, {"id": len(view.history) + 1, "type": kind, "timestamp": at(clock)}]
        if decision in LATE and pending is not None:
            self.spawn("late", f"late {pending['state']}({actor.label})",
                       {"pending": pending, "per_call": self.scenario.late_per_call},
                       deadline=pending["started"] + TASK_FUNCTION_TIMEOUT, dies_at_deadline=True)
        self.spawn("reconciler", f"R({actor.label})#1", {"arn": view.arn, "receive": 1},
                   deadline=clock + RECONCILER_TIMEOUT)
        self.scenario.on_stop(self, actor)

    # -- the spawning rules of the schedules, checked after every step ----------------------------------------------

    def start_new(self) -> None:
        """Start every new actor up to its first call (from the explorer, never inside another actor's call)."""
        while new := [a for a in self.actors.values() if a.state == "new"]:
            for actor in new:
                self.runner.start(actor)

    def after_step(self) -> None:
        self.start_new()
        live = [a for a in self.actors.values() if a.live and a.kind != "pipe"]
        dlq = self.services.queue_bodies(self.services.dlq_url)
        if dlq and not any(a.kind == "redriver" and a.live for a in live) \
                and self.counters.redriver_runs < self.scenario.redriver_runs \
                and tuple(sorted(m["id"] for m in dlq)) != self.counters.redriver_seen \
                and not any(self.phase(a) == 0 for a in live):
            self.counters.redriver_runs += 1
            now = self.services.model.clock + REDRIVER_DELAY
            self.spawn("redriver", f"redriver#{self.counters.redriver_runs}", {}, now=now,
                       deadline=now + RECONCILER_TIMEOUT)
        if dlq and self.scenario.operator and not self.counters.operator and not any(self.phase(a) == 0 for a in live):
            self.counters.operator = True
            self.spawn("operator", "ff-ops", {})
        self.start_new()

    def quiet(self) -> bool:
        """Nothing can move: the final sweep runs once (every status-change event may have been lost)."""
        if not self.counters.final_sweep:
            self.counters.final_sweep = True
            self.add_sweep(self.services.model.clock + SWEEP_EVERY)
            self.start_new()
            return False
        return True

    # -- choices ---------------------------------------------------------------------------------------------------

    def enabled(self, actor: Actor) -> bool:
        if not actor.live:
            return False
        if actor.kind == "pipe":
            queue = self.services.queue_bodies(self.services.source_url)
            if not queue or not self._source_visible():
                return False
        target = max(self.services.model.clock, actor.now)
        return all(other.key == actor.key or not other.live or other.dies_at_deadline or other.deadline is None
                   or other.deadline >= target for other in self.actors.values())

    def _source_visible(self) -> bool:
        queue = sqs_backends[ACCOUNT][REGION].queues[short_queue(self.services.source_url)]
        return any(m.visible and not m.delayed for m in queue._messages)

    def decisions(self, actor: Actor, faults_left: int) -> list[Decision]:
        if faults_left <= 0 or self.phase(actor) != 1:
            return [Decision.GO]
        calls = self.scenario.fault_calls
        if calls and not any(str(actor.pending).startswith(call) for call in calls):
            return [Decision.GO]
        if actor.kind in ("reconciler", "sweep"):
            return [Decision.GO, *self.scenario.reconciler_faults]
        if actor.kind in ("redriver", "operator"):
            return [Decision.GO, *self.scenario.redrive_faults]
        if actor.kind == "execution":
            return [Decision.GO, *self.scenario.execution_faults(actor)]
        return [Decision.GO]

    def take(self, actor: Actor, decision: Decision) -> None:
        """One step: the clock moves to the actor's time, late invocations past their deadline die, it acts."""
        model = self.services.model
        model.clock = max(model.clock, actor.now)
        for other in self.actors.values():
            if other.live and other.dies_at_deadline and other.deadline is not None and other.deadline < model.clock:
                self.runner.kill(other)
        call = actor.pending
        if decision in STOPS:
            self.stop(actor, decision)
        else:
            self.runner.step(actor, decision)
        entry = f"{actor.label}: {call or 'start'}" + ("" if decision is Decision.GO else f" [{decision.value}]")
        self.counters.schedule.append(entry)
        if decision is not Decision.GO and self.phase(actor) == 1:
            self.counters.faults.append(entry)
        self.after_step()


