"""The Redriver's return of the source DLQ (fire_and_forget.healing.source_return) against itself: two runs that
overlap, call by call, with a crash, a lost response or a refusal on any call, then whatever the runs left
handled by a clean run once the held messages are visible again, and the pipe draining the source queue.

A step is one SQS call of one run (tests/healing/gates.py runs each in a greenlet and replays its log on resume);
the explorer enumerates every interleaving depth first, restoring moto's SQS from a snapshot for each alternative.
The source DLQ holds two callers' messages: one with every automatic attempt left, one whose attempts are spent.

The books read moto's queues and the pipe's starts, sharing no code with the module they check: a message's attempt
and caller are read from its raw attributes. At quiet: the returnable caller started at least once and at most once
more than the faults that let a copy be sent twice (a crash or a lost response between the send and the delete), each
start a copy of attempt 1 naming its caller; nothing of it left in the source DLQ; the spent caller still there,
never sent; no message lost.

Bound (`make test`): both runs explored, at most one fault, of any kind, on any call. `make wide` (FF_WIDE): three
runs, and two faults.
"""

from __future__ import annotations

import copy
import json
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
import time_machine
from botocore.exceptions import ClientError
from moto import mock_aws
from moto.sqs.models import sqs_backends

from fire_and_forget.healing.source_return import return_to_source
from fire_and_forget.runtime.healing_policy import HealingPolicy
from tests.healing.gates import Actor, Call, Crash, Decision, Runner, lost_response, refusal
from tests.support.wide import WIDE

ACCOUNT, REGION = "123456789012", "us-east-1"
MAX_ATTEMPTS = 3
FAULTS = (Decision.CRASH, Decision.LOST, Decision.REFUSED)
RUNS = 3 if WIDE else 2
MAX_FAULTS = 2 if WIDE else 1
VISIBILITY = 30  # the queues' own; HeldMessages holds what it reads for its own shorter timeout


class GatedSqs:
    """An SQS client whose every call is a step of the running actor (or made at once outside the exploration)."""

    def __init__(self, runner: Runner, client: Any) -> None:
        self._runner = runner
        self._client = client

    def __getattr__(self, operation: str) -> Callable[..., Any]:
        method = getattr(self._client, operation)

        def call(**kwargs: Any) -> Any:
            queue = str(kwargs.get("QueueUrl", "")).rsplit("/", 1)[-1]

            def perform(decision: Decision) -> Any:
                if decision is Decision.REFUSED:
                    raise refusal(Call("sqs", operation, queue))
                answer = method(**kwargs)
                if decision is Decision.LOST:
                    raise lost_response(Call("sqs", operation, queue))
                return answer

            return self._runner.gate(Call("sqs", operation, queue), perform)

        return call


@dataclass
class Run:
    """One explored schedule's outcome: the pipe's starts and the queues at quiet, the decisions taken."""

    schedule: list[str] = field(default_factory=list)
    faults: list[tuple[str, Decision]] = field(default_factory=list)  # (the call, the fault)
    starts: list[dict[str, str]] = field(default_factory=list)  # each started message's raw attributes + id
    source_dlq: list[dict[str, str]] = field(default_factory=list)


def attributes(message: dict[str, Any]) -> dict[str, str]:
    raw = message.get("MessageAttributes") or {}
    return {"id": message["MessageId"], **{name: value.get("StringValue", "") for name, value in raw.items()}}


class World:
    def __init__(self, client: Any) -> None:
        self.client = client
        self.source = client.create_queue(QueueName="source", Attributes={"VisibilityTimeout": str(VISIBILITY)})[
            "QueueUrl"]
        self.dlq = client.create_queue(QueueName="source-dlq", Attributes={"VisibilityTimeout": str(VISIBILITY)})[
            "QueueUrl"]
        self.returnable = client.send_message(QueueUrl=self.dlq, MessageBody=json.dumps({"orderId": "o-1"}))[
            "MessageId"]
        self.spent = "caller-of-o-2"
        client.send_message(QueueUrl=self.dlq, MessageBody=json.dumps({"orderId": "o-2"}), MessageAttributes={
            "ffRedriveAttempt": {"DataType": "Number", "StringValue": str(MAX_ATTEMPTS)},
            "ffFirstMessageId": {"DataType": "String", "StringValue": self.spent}})
        self.policy = HealingPolicy(transient_errors={}, max_attempts=MAX_ATTEMPTS)
        self.runner = Runner()
        self.runner.register("return", self._return)

    def _return(self, actor: Actor) -> Any:
        try:
            return return_to_source(GatedSqs(self.runner, self.client), dlq_url=self.dlq,  # type: ignore[arg-type]
                                    source_url=self.source, policy=self.policy, per_second=1000, period_seconds=300)
        except ClientError as error:  # the Redriver's invocation fails; the next run goes on
            return error

    def snapshot(self) -> Any:
        return {name: copy.deepcopy((q._messages, q._pending_messages, q.deleted_messages))
                for name, q in sqs_backends[ACCOUNT][REGION].queues.items()}

    def restore(self, state: Any) -> None:
        for name, queue in sqs_backends[ACCOUNT][REGION].queues.items():
            queue._messages, queue._pending_messages, queue.deleted_messages = copy.deepcopy(state[name])

    def finish(self, travel: Any) -> Run:
        """After the explored runs: the held messages visible again, one clean run, the pipe drains the source."""
        travel.shift(VISIBILITY + 1)
        return_to_source(self.client, dlq_url=self.dlq, source_url=self.source, policy=self.policy, per_second=1000,
                         period_seconds=300)
        run = Run()
        while messages := self.client.receive_message(QueueUrl=self.source, MaxNumberOfMessages=10,
                                                      MessageAttributeNames=["All"]).get("Messages", []):
            for message in messages:
                run.starts.append(attributes(message))
                self.client.delete_message(QueueUrl=self.source, ReceiptHandle=message["ReceiptHandle"])
        travel.shift(VISIBILITY + 1)
        run.source_dlq = [attributes(m) for m in self.client.receive_message(
            QueueUrl=self.dlq, MaxNumberOfMessages=10, MessageAttributeNames=["All"]).get("Messages", [])]
        return run


def explore(world: World, travel: Any) -> Iterator[Run]:
    """Every interleaving of the runs' calls, with at most MAX_FAULTS faults, depth first from snapshots."""
    actors = [Actor(i, "return", f"run#{i + 1}", {}, 0.0) for i in range(RUNS)]
    for actor in actors:
        world.runner.start(actor)

    def branch(actors: list[Actor], schedule: list[str], faults: list[tuple[str, Decision]]) -> Iterator[Run]:
        live = [a for a in actors if a.live]
        if not live:
            run = world.finish(travel)
            run.schedule, run.faults = schedule, faults
            yield run
            return
        state, saved, moment = world.snapshot(), copy.deepcopy(actors), travel_now(travel)
        for index, actor in enumerate(actors):
            if not actor.live:
                continue
            for decision in (Decision.GO, *(FAULTS if len(faults) < MAX_FAULTS else ())):
                world.restore(state)
                travel.move_to(moment)
                world.runner.forget_all()
                mine = copy.deepcopy(saved)
                moving = mine[index]
                call = str(moving.pending)
                try:
                    world.runner.step(moving, decision)
                except Crash:
                    moving.state = "dead"
                more = [*faults, (f"{moving.label} {call}", decision)] if decision is not Decision.GO else faults
                yield from branch(mine, [*schedule, f"{moving.label} {call} {decision.value}"], more)

    yield from branch(actors, [], [])


def travel_now(_travel: Any) -> datetime:
    """The traveller's now: moto's SQS reads the same clock."""
    return datetime.now(UTC)


@pytest.fixture(scope="module")
def runs() -> list[tuple[World, Run]]:
    with mock_aws(), time_machine.travel("2026-12-08T00:00:00Z", tick=False) as travel:
        world = World(boto3.client("sqs", region_name=REGION))
        return [(world, run) for run in explore(world, travel)]


def test_every_interleaving_returns_the_returnable_message_and_keeps_the_spent_one(
        runs: list[tuple[World, Run]]) -> None:
    assert len(runs) >= (146 if not WIDE else 1000)  # the bound is explored (146 schedules in make test)
    wrong = []
    for world, run in runs:
        mine = [start for start in run.starts if start.get("ffFirstMessageId") == world.returnable]
        strangers = [start for start in run.starts if start.get("ffFirstMessageId") != world.returnable]
        # A copy is sent twice only where a run sent it and could not delete the original: a crash or lost answer
        # between its send and its delete, or a refused or lost delete.
        twice = sum(1 for call, decision in run.faults
                    if (decision in (Decision.CRASH, Decision.LOST) and "send_message" in call)
                    or "delete_message" in call)
        problems = []
        if not 1 <= len(mine) <= 1 + twice:
            problems.append(f"{len(mine)} starts of the returnable caller with {twice} faults that may duplicate")
        if any(start.get("ffRedriveAttempt") != "1" for start in mine):
            problems.append(f"a copy's attempt is not 1: {mine}")
        if strangers:
            problems.append(f"started what is not a copy of the returnable caller: {strangers}")
        left = Counter(m.get("ffFirstMessageId", m["id"]) for m in run.source_dlq)
        if left != Counter({world.spent: 1}):
            problems.append(f"the source DLQ holds {dict(left)}, not only the spent caller")
        if problems:
            wrong.append(f"{' -> '.join(run.schedule)}: {'; '.join(problems)}")
    assert not wrong, "\n".join(wrong[:5])
