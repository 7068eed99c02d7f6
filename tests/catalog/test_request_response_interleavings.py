"""REQUEST_RESPONSE's claims under every interleaving hypothesis finds within its bound: receives, SQS duplicates,
crashes, retries, hangs past the execution's timeout, late invocations and a failing deliveries table, on one
message, with the clock moved between them.

What runs is the real thing where it decides: the runtime's claim (DynamoDBDeliveryClaims with the takeover age the
construct puts on the claiming function) and the returning tail's three DynamoDB calls (DeliveryCompleted,
DuplicateDeliveryIgnored, ClaimFailure) executed from the synthesized definition's own Parameters, on moto's
DynamoDB. What is modelled is what AWS does around them, each rule from its page (docs/design.md, "What the
rehearsal emulates for REQUEST_RESPONSE"): SQS's receive count, visibility timeout, redrive to the source DLQ at the
receive after maxReceiveCount, DeleteMessage's stale-handle rule (both readings); the pipe deleting on SUCCEEDED and
leaving the message otherwise; an Express execution ending at its TimeoutSeconds and a Lambda invocation at its
function's timeout. The accounting is this module's: work done, by whom and when, and where the message is.

Checked after every step: at most one execution may still process the message (mutual exclusion, the claim's
purpose); a deleted message was processed and its processing completed before the deletion (nothing lost). Checked
once quiet, faults stopped and the clock moved past every timeout: the message is in exactly one place, deleted or
in the source DLQ, and deleted whenever no fault struck (duplicates alone, at most MAX_DUPLICATES of them, never
send a message to the source DLQ).

Bounds: Hypothesis, `stateful_step_count` steps per run and `examples(...)` runs (five times as many in `make wide`);
the explorer, every action sequence up to DEPTHS (6 and 5; 7 in `make wide`).
"""

from __future__ import annotations

import copy
import functools
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
import time_machine
from botocore.exceptions import ClientError
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule, run_state_machine_as_test
from moto import mock_aws
from moto.core.models import DEFAULT_ACCOUNT_ID
from moto.dynamodb.models import dynamodb_backends

from fire_and_forget.runtime.deliveries import STALE_AFTER_VARIABLE, DynamoDBDeliveryClaims
from tests.infra import request_response_app
from tests.support.wide import WIDE, examples

MESSAGE = "m-1"
TABLE = "deliveries"
START = 1_900_000_000  # epoch seconds of the model's first moment
MAX_RECEIVE_COUNT = 5
TTL = 15 * 24 * 3600
# SQS duplicates are rare: at most this many per message and run, besides one missed delete. Five in a row while
# the first execution runs would exhaust maxReceiveCount (hypothesis finds that at once): the message is then
# processed and in the source DLQ, where a redrive finds its delivery completed.
MAX_DUPLICATES = 2


@dataclass(frozen=True)
class Deployed:
    """What the synthesized REQUEST_RESPONSE stack says: the tail's Parameters and the timeouts around them."""

    tail: dict[str, dict[str, Any]]
    workflow_timeout: int
    function_timeout: int
    visibility_timeout: int
    stale_after: int


def deployed() -> Deployed:
    template = request_response_app.template()
    resources = template["Resources"].values()
    (machine,) = [r["Properties"] for r in resources if r["Type"] == "AWS::StepFunctions::StateMachine"]
    # A plain string: the definition's ARNs and names are DefinitionSubstitutions.
    definition: dict[str, Any] = json.loads(machine["DefinitionString"])
    (function,) = [r["Properties"] for r in resources if r["Type"] == "AWS::Lambda::Function"]
    (queue,) = [r["Properties"] for r in resources if r["Type"] == "AWS::SQS::Queue" and "RedrivePolicy" in
                r["Properties"]]
    assert queue["RedrivePolicy"]["maxReceiveCount"] == MAX_RECEIVE_COUNT
    return Deployed(
        tail={name: definition["States"][name]["Parameters"]
              for name in ("DeliveryCompleted", "DuplicateDeliveryIgnored", "ClaimFailure")},
        workflow_timeout=int(definition["TimeoutSeconds"]),
        function_timeout=int(function["Timeout"]),
        visibility_timeout=int(queue["VisibilityTimeout"]),
        stale_after=int(function["Environment"]["Variables"][STALE_AFTER_VARIABLE]),
    )


def tail_call(parameters: dict[str, Any], values: dict[str, str]) -> dict[str, Any]:
    """A tail state's Parameters as the service integration sends them: each `.$` path resolved from `values`, which
    must know it (a path the definition gains and this module does not know fails the test, not the model)."""

    def resolve(node: Any) -> Any:
        if isinstance(node, dict):
            resolved = {}
            for key, item in node.items():
                if key.endswith(".$"):
                    assert item in values, f"the tail reads {item!r}, which this model does not provide"
                    resolved[key[:-2]] = values[item]
                else:
                    resolved[key] = resolve(item)
            return resolved
        return node

    call = dict(resolve(parameters))
    call["TableName"] = TABLE
    return call


@dataclass
class Execution:
    arn: str
    handle: int  # which receive started it (its receipt handle)
    started: int
    invoked_at: int  # its latest invocation's start: Lambda ends that invocation at invoked_at + the function timeout
    phase: str = "claim"  # its invocation's next step: claim, invoke (owns the claim), then complete, or read (a
    # duplicate's GetItem), or ended
    status: str | None = None  # once ended: SUCCEEDED, FAILED, TIMED_OUT


@dataclass
class Books:
    """This module's own accounting, sharing nothing with the code it checks."""

    work: list[tuple[str, int]] = field(default_factory=list)  # (execution, moment) of each processing
    deleted_at: int | None = None
    delivered_after: int | None = None  # how much work was done when a DeliveryCompleted update succeeded
    failed_receives: int = 0  # receives whose execution did not succeed


class RequestResponseClaims(RuleBasedStateMachine):
    stale_handle_deletes = False  # DeleteMessage with an older receive's handle: both readings (the parametrization)

    def __init__(self) -> None:
        super().__init__()
        self.client = CLIENT
        for item in self.client.scan(TableName=TABLE)["Items"]:
            self.client.delete_item(TableName=TABLE, Key={"messageId": item["messageId"]})
        self.now = START
        self.executions: list[Execution] = []
        self.books = Books()
        self.place = "visible"  # visible, in flight, deleted, source DLQ
        self.visible_at = START
        self.receives = 0
        self.latest_handle = 0
        self.missed_deletes = 0
        self.duplicates = 0
        self.table_down = False
        self.faulted = False  # a crash, a timeout, the table refusing: what may legitimately end in the source DLQ
        self.holder: Execution | None = None  # whose claim the table holds, by this module's reckoning

    # -- what AWS does --------------------------------------------------------------------------------------------

    def _end(self, execution: Execution, status: str) -> None:
        execution.status = status
        if status != "SUCCEEDED":
            self.books.failed_receives += 1
            return
        # The pipe deletes the message with the receipt handle of the receive that started this execution.
        if self.place in ("in flight", "visible") and (execution.handle == self.latest_handle
                                                        or self.stale_handle_deletes):
            self.place, self.books.deleted_at = "deleted", self.now

    def _live(self, execution: Execution) -> bool:
        """Its invocation still runs: Lambda ends an invocation at its function's timeout, whatever became of the
        execution that started it (an invocation started before its execution timed out can still claim)."""
        return (execution.phase in ("claim", "invoke")
                and self.now <= execution.invoked_at + DEPLOYED.function_timeout)

    def _open(self, execution: Execution) -> bool:
        """It may process the message: its invocation owns the claim and still runs."""
        return execution.phase == "invoke" and self._live(execution)

    @rule(data=st.data())
    def wait(self, data: st.DataObject) -> None:
        """The clock moves to one of the moments where something changes, or just after it (_moments)."""
        self.advance(data.draw(st.sampled_from(_moments(self))))

    def advance(self, seconds: int) -> None:
        self.now += seconds
        for execution in self.executions:
            if execution.status is None and self.now >= execution.started + DEPLOYED.workflow_timeout:
                self.faulted = True
                self._end(execution, "TIMED_OUT")  # no Catch sees it; an invocation it started may still run
        if self.place == "in flight" and self.now >= self.visible_at:
            self.place = "visible"

    @precondition(lambda self: self.place == "visible" and self.now >= self.visible_at)
    @rule()
    def receive(self) -> None:
        """The pipe receives the message and starts an execution (SQS moves it to the source DLQ instead at the
        receive after maxReceiveCount)."""
        self.receives += 1
        if self.receives > MAX_RECEIVE_COUNT:
            self.place = "source DLQ"
            return
        self.latest_handle += 1
        self.place, self.visible_at = "in flight", self.now + DEPLOYED.visibility_timeout
        self.executions.append(Execution(f"arn:aws:states:us-east-1:123456789012:express:wf:e{self.latest_handle}",
                                         self.latest_handle, self.now, invoked_at=self.now))

    @precondition(lambda self: self.place == "in flight" and self.duplicates < MAX_DUPLICATES)
    @rule()
    def duplicate(self) -> None:
        """SQS makes the message receivable again while its execution runs (a copy, or a server that lost the
        visibility change)."""
        self.duplicates += 1
        self.visible_at, self.place = self.now, "visible"

    @precondition(lambda self: self.place == "deleted" and self.missed_deletes < 1)
    @rule()
    def missed_delete(self) -> None:
        """A server holding a copy missed the deletion: the message is back, same messageId."""
        self.missed_deletes += 1
        self.place, self.visible_at = "visible", self.now

    @rule(down=st.booleans())
    def deliveries_table(self, down: bool) -> None:
        """The deliveries table refusing the tail's calls (each then ends through its Catch)."""
        self.table_down = down
        self.faulted |= down

    # -- what each execution does, step by step ---------------------------------------------------------------------

    def _steppable(self) -> list[Execution]:
        """Executions with a next step: running ones, and timed-out ones whose invocation still runs."""
        return [e for e in self.executions if e.status is None or (e.status == "TIMED_OUT" and self._live(e))]

    @precondition(lambda self: bool(self._steppable()))
    @rule(data=st.data(), outcome=st.sampled_from(["works", "works", "crashes", "retries"]))
    def step(self, data: st.DataObject, outcome: str) -> None:
        """One execution's next step. For the claiming invocation: it processes the message, or fails (a crash
        caught into ClaimFailure, or a transient error the Task retries, whose retry claims again)."""
        self._step(data.draw(st.sampled_from(self._steppable())), outcome)

    def step_by_index(self, index: int, outcome: str) -> None:
        self._step(self.executions[index], outcome)

    def _fail_invocation(self, execution: Execution, outcome: str) -> None:
        """The invocation fails: a crash, a transient error, or Lambda ending it at its timeout (Sandbox.Timedout)."""
        if execution.status is not None:
            execution.phase = "ended"  # a late invocation: nobody waits for it any more
        elif outcome == "retries" and self.now < execution.started + DEPLOYED.workflow_timeout:
            execution.phase, execution.invoked_at = "claim", self.now  # the Task's Retry invokes again
        else:  # caught into the failure path
            self.faulted = True
            execution.phase = "ended"
            if self._tail(execution, "ClaimFailure") is not None:
                self.holder = None  # its row deleted: the next receive claims afresh
            self._end(execution, "FAILED")

    def _step(self, execution: Execution, outcome: str = "works") -> None:
        if execution.phase in ("claim", "invoke") and (outcome != "works" or not self._live(execution)):
            self._fail_invocation(execution, outcome)
        elif execution.phase == "claim":
            with time_machine.travel(datetime.fromtimestamp(self.now, UTC), tick=False):
                owned = DynamoDBDeliveryClaims(self.client, TABLE, TTL, DEPLOYED.stale_after).claim(
                    MESSAGE, execution.arn)
            if owned and self.holder not in (None, execution):
                taken = self.holder
                assert taken is not None
                assert taken.status is not None and not self._live(taken), (
                    f"{execution.arn} took the claim of {taken.arn}, which could still act")
                assert self.books.delivered_after is None, "a completed delivery's claim was taken over"
            if owned:
                self.holder = execution
            execution.phase = "invoke" if owned else "read"
        elif execution.phase == "invoke":
            self.books.work.append((execution.arn, self.now))
            execution.phase = "complete" if execution.status is None else "ended"
        elif execution.phase == "complete":
            if self._tail(execution, "DeliveryCompleted") is not None and self.books.delivered_after is None:
                self.books.delivered_after = len(self.books.work)
            self._end(execution, "SUCCEEDED")  # a failed record is caught: the execution still succeeds
            execution.phase = "ended"
        else:  # read: another execution holds the claim
            read = self._tail(execution, "DuplicateDeliveryIgnored")
            done = isinstance(read, dict) and "deliveredAt" in read.get("Item", {})
            self._end(execution, "SUCCEEDED" if done else "FAILED")
            execution.phase = "ended"

    def _tail(self, execution: Execution, state: str) -> Any:
        """One tail state's DynamoDB call from the definition; None when it failed (refused, or its condition)."""
        if self.table_down:
            return None
        call = tail_call(DEPLOYED.tail[state], {
            "States.ArrayGetItem($$.Execution.Input[*].messageId, 0)": MESSAGE,
            "$$.Execution.Id": execution.arn,
            "$$.State.EnteredTime": datetime.fromtimestamp(self.now, UTC).isoformat(),
        })
        operation = {"DeliveryCompleted": self.client.update_item, "ClaimFailure": self.client.delete_item,
                     "DuplicateDeliveryIgnored": self.client.get_item}[state]
        try:
            return operation(**call)
        except ClientError as error:
            assert error.response["Error"]["Code"] == "ConditionalCheckFailedException", error
            return None

    # -- the properties ---------------------------------------------------------------------------------------------

    @invariant()
    def at_most_one_execution_may_process_the_message(self) -> None:
        may = [e.arn for e in self.executions if self._open(e)]
        assert len(may) <= 1, (self.now - START, may)

    @invariant()
    def nothing_is_processed_after_its_delivery_completed(self) -> None:
        if self.books.delivered_after is not None:
            assert len(self.books.work) == self.books.delivered_after, self.books

    @invariant()
    def a_deleted_message_was_processed_first(self) -> None:
        if self.place == "deleted":
            assert self.books.deleted_at is not None
            assert any(moment <= self.books.deleted_at for _, moment in self.books.work), self.books

    def teardown(self) -> None:
        """Faults stop; every execution runs to its end and the clock moves past every timeout, until nothing
        moves: the message is then in exactly one place, and deleted if two receives were left (a stale claim may
        cost one receive that finds it still too young to take over)."""
        self.table_down = False
        receives_left = MAX_RECEIVE_COUNT - self.receives
        quiet_before = self.place in ("deleted", "source DLQ")
        for _ in range(8 * MAX_RECEIVE_COUNT):
            while steppable := self._steppable():
                self._step(steppable[0])
            if self.place in ("deleted", "source DLQ"):
                break
            if self.place == "visible" and self.now >= self.visible_at:
                self.receive()
            else:
                self.advance(DEPLOYED.visibility_timeout)
        assert self.place in ("deleted", "source DLQ"), (self.place, self.receives)
        if not self.faulted:  # duplicates alone (within SQS's few) never exhaust the receives
            assert self.place == "deleted", (self.books.failed_receives, self.receives)
        if not quiet_before and receives_left >= 2:  # once faults stop, a stale claim is taken over
            assert self.place == "deleted", (receives_left, self.receives, self.books)


DEPLOYED: Deployed
CLIENT: Any


@pytest.fixture(scope="module", autouse=True)
def deliveries() -> Iterator[None]:
    global DEPLOYED, CLIENT
    DEPLOYED = deployed()
    with mock_aws():
        CLIENT = boto3.client("dynamodb", region_name="us-east-1")
        CLIENT.create_table(TableName=TABLE, KeySchema=[{"AttributeName": "messageId", "KeyType": "HASH"}],
                            AttributeDefinitions=[{"AttributeName": "messageId", "AttributeType": "S"}],
                            BillingMode="PAY_PER_REQUEST")
        yield


def test_the_model_reads_the_deployed_timeouts() -> None:
    # The takeover is safe only if a claim that old belongs to no running work, and useful only if the receive after
    # a visibility timeout finds it that old.
    assert DEPLOYED.stale_after >= DEPLOYED.workflow_timeout + DEPLOYED.function_timeout
    assert DEPLOYED.visibility_timeout > DEPLOYED.stale_after
    assert re.fullmatch(r"executionArn = :execution.*", DEPLOYED.tail["ClaimFailure"]["ConditionExpression"])


@pytest.mark.parametrize("stale_handle_deletes", [False, True], ids=["stale-handle-keeps", "stale-handle-deletes"])
def test_every_interleaving_within_the_bound_keeps_the_claims_promises(stale_handle_deletes: bool) -> None:
    machine = type("Machine", (RequestResponseClaims,), {"stale_handle_deletes": stale_handle_deletes})
    run_state_machine_as_test(machine, settings=settings(
        max_examples=examples(40), stateful_step_count=30, deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]))


# -- every interleaving up to a depth --------------------------------------------------------------------------------
# Hypothesis draws long runs at random and rarely hits a short, precise one (a duplicate received exactly when a
# claim turns stale). The explorer walks every sequence of actions up to its depth from a fresh message: receives, SQS
# duplicates, a missed delete, each execution's next step working, crashing or retrying, and the clock moved only to
# the moments where something changes (_moments). The deliveries table stays up: its faults are Hypothesis's. States
# already seen are merged (their moments taken relative to now), and at every state the invariants hold and so do
# the teardown's promises, checked on a copy. Depth 5 is 591 distinct states (about 8 s here), depth 6 1,895
# (26 s), depth 7 (make wide) 6,184 (90 s).

# Depth 6 is the shortest that finds a takeover age below the workflow's timeout (receive, duplicate, claim, wait,
# receive, claim); the second reading of DeleteMessage changes only deletions, which depth 5 already reaches.
DEPTHS = {False: 7, True: 7} if WIDE else {False: 6, True: 5}


def _actions(machine: RequestResponseClaims) -> list[tuple[str, Callable[[], None]]]:
    actions: list[tuple[str, Callable[[], None]]] = []
    if machine.place == "visible" and machine.now >= machine.visible_at:
        actions.append(("receive", machine.receive))
    if machine.place == "in flight" and machine.duplicates < MAX_DUPLICATES:
        actions.append(("duplicate", machine.duplicate))
    if machine.place == "deleted" and machine.missed_deletes < 1:
        actions.append(("missed delete", machine.missed_delete))
    for execution in machine._steppable():
        for outcome in ("works", "crashes", "retries"):
            if outcome != "works" and execution.phase not in ("claim", "invoke"):
                continue
            # By index: each action runs on a restored copy of the state, with Execution objects of its own.
            index = machine.executions.index(execution)
            actions.append((f"{execution.arn[-2:]} {execution.phase} {outcome}",
                            functools.partial(machine.step_by_index, index, outcome)))
    for seconds in _moments(machine):
        actions.append((f"+{seconds}s", functools.partial(machine.advance, seconds)))
    return actions


def _moments(machine: RequestResponseClaims) -> list[int]:
    deadlines = {machine.visible_at}
    for execution in machine.executions:
        deadlines.add(execution.invoked_at + DEPLOYED.function_timeout)
        if execution.status is None:
            deadlines.add(execution.started + DEPLOYED.workflow_timeout)
    item = _row()
    if item and "claimedAt" in item:
        deadlines.add(int(item["claimedAt"]["N"]) + DEPLOYED.stale_after)
    moments = {1}
    for deadline in deadlines:
        moments |= {deadline - machine.now, deadline + 1 - machine.now}
    return sorted(moment for moment in moments if moment > 0)


MODEL_STATE = ("now", "executions", "books", "place", "visible_at", "receives", "latest_handle", "missed_deletes",
               "duplicates", "table_down", "faulted", "holder")


def _table() -> Any:
    """moto's own table: the explorer saves and restores its storage directly, not through calls (through boto3,
    its snapshots and restores would be three quarters of its calls); the code under test still makes every call it
    makes."""
    return dynamodb_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].get_table(TABLE)


def _row(items: Any = None) -> dict[str, Any] | None:
    """The message's row as DynamoDB JSON, from moto's storage: the table's, or a snapshot's `items`."""
    stored = _table().items if items is None else items
    return next((item.to_json()["Attributes"] for item in stored.values()), None)


class _Snapshot:
    """A model state with the deliveries table's storage, to come back to."""

    def __init__(self, machine: RequestResponseClaims) -> None:
        self.state = copy.deepcopy({name: vars(machine)[name] for name in MODEL_STATE})
        self.items = copy.deepcopy(_table().items)

    def restore(self, machine: RequestResponseClaims) -> None:
        vars(machine).update(copy.deepcopy(self.state))
        _table().items = copy.deepcopy(self.items)

    def key(self) -> str:
        """What decides the future, with every moment relative to now and clamped once its deadline has passed (a
        state an hour later with the same pending deadlines is the same state)."""
        state, now = self.state, int(self.state["now"])

        def ago(moment: int, bound: int) -> int:
            return max(moment - now, -bound - 1)

        executions = tuple((e.arn, e.handle, ago(e.started, DEPLOYED.workflow_timeout),
                            ago(e.invoked_at, DEPLOYED.function_timeout), e.phase, e.status)
                           for e in state["executions"])
        books = state["books"]
        item = dict(_row(self.items) or {})
        if "claimedAt" in item:
            item["claimedAt"] = ago(int(item["claimedAt"]["N"]), DEPLOYED.stale_after)
        item.pop("expiresAt", None)  # days away: the model never reaches it
        item["deliveredAt"] = "deliveredAt" in item  # when does not matter, whether does
        return repr((executions, state["place"], ago(state["visible_at"], 0), state["receives"],
                     state["latest_handle"], state["missed_deletes"], state["duplicates"], state["table_down"],
                     state["faulted"], state["holder"].arn if state["holder"] else None, len(books.work),
                     books.delivered_after, books.deleted_at is not None, books.failed_receives,
                     sorted(item.items())))


def explore(machine_class: type[RequestResponseClaims], depth: int) -> int:
    """Every action sequence up to `depth`; returns the distinct states checked. An assertion names its path."""
    machine = machine_class()
    seen: set[str] = set()
    frontier: list[tuple[_Snapshot, tuple[str, ...]]] = [(_Snapshot(machine), ())]
    for _ in range(depth + 1):
        following: list[tuple[_Snapshot, tuple[str, ...]]] = []
        for snapshot, path in frontier:
            if (key := snapshot.key()) in seen:
                continue
            seen.add(key)
            snapshot.restore(machine)
            try:
                machine.teardown()
            except AssertionError as error:
                raise AssertionError(f"after {' / '.join(path)}, then quiet: {error}") from error
            if len(path) == depth:
                continue
            snapshot.restore(machine)
            for name, action in _actions(machine):
                try:
                    action()
                    for check in (machine.at_most_one_execution_may_process_the_message,
                                  machine.nothing_is_processed_after_its_delivery_completed,
                                  machine.a_deleted_message_was_processed_first):
                        check()
                except AssertionError as error:
                    raise AssertionError(f"after {' / '.join((*path, name))}: {error}") from error
                following.append((_Snapshot(machine), (*path, name)))
                snapshot.restore(machine)
        frontier = following
    return len(seen)


@pytest.mark.parametrize("stale_handle_deletes", [False, True], ids=["stale-handle-keeps", "stale-handle-deletes"])
def test_every_interleaving_up_to_the_depth_keeps_the_claims_promises(stale_handle_deletes: bool) -> None:
    machine = type("Machine", (RequestResponseClaims,), {"stale_handle_deletes": stale_handle_deletes})
    assert explore(machine, DEPTHS[stale_handle_deletes]) > 500  # the bound explored is not a trivial one
