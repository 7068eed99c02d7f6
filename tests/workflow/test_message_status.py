"""What a caller reads of its message (fire_and_forget.runtime.status) agrees with where the books say it ended.

The books (fire_and_forget.rehearsal.accounting) read the queues, the executions and the failure records; the status
reads the deliveries table's rows. They share no code: a run of the demo's mix with chaos (transient faults,
timeouts, crashes, aborts, SQS duplicates, producer resends, malformed bodies, automatic redrives) must leave every
caller message with the status its place implies. Bound: the demo's 40-order chaos plan for one seed in the suite,
four seeds in `make wide`.
"""

from __future__ import annotations

import io
import json
import random
from collections import Counter
from pathlib import Path

import pytest
from rich.console import Console

from demos.orders.demo import plan, quiet_logs, run_demo
from demos.orders.samples import OrderKind, make_order, seed_inventory
from fire_and_forget.rehearsal.accounting import Place, account
from fire_and_forget.rehearsal.faults import Fault, FaultKind
from fire_and_forget.rehearsal.rehearsal import Rehearsal
from fire_and_forget.runtime.healing_policy import HealingPolicy
from fire_and_forget.runtime.outputs import Output
from fire_and_forget.runtime.status import MessageStatus, State, read_status
from tests.support.wide import WIDE

SEEDS = (3, 5, 11, 19) if WIDE else (3,)
# A place in the books -> the states a caller may read for a message that ended there.
EXPECTED = {
    Place.SUCCEEDED: {State.SUCCEEDED},
    Place.ABSORBED: {State.ABSORBED},
    Place.FAILURE_DLQ: {State.FAILED},
    Place.WAITING: {State.FAILED},
    Place.EXECUTION: {State.FAILED},
    Place.SOURCE_DLQ: {State.UNKNOWN},  # never handed over: no execution ever owned it
}


def status_of(aws: Rehearsal, message_id: str) -> MessageStatus:
    """What a caller reads, with the policy the stack publishes (as ff-ops reads it)."""
    policy = HealingPolicy.from_environment(json.loads(aws.outputs[Output.HEALING_POLICY]))
    return read_status(aws.dynamodb, aws.outputs[Output.DELIVERIES_TABLE_NAME], message_id, policy)


@pytest.mark.parametrize("seed", SEEDS)
def test_every_callers_message_reads_as_the_books_say_it_ended(cloud_assembly: Path, seed: int) -> None:
    quiet_logs()
    with Rehearsal.start(cloud_assembly) as aws:
        run_demo(aws, Console(file=io.StringIO()), orders=40, chaos=True, seed=seed)
        ledger = account(aws, aws.sent)
        statuses = {message_id: status_of(aws, message_id) for message_id in ledger.fates}

    wrong = {message_id: (fate.place.value, statuses[message_id].state.value)
             for message_id, fate in ledger.fates.items() if statuses[message_id].state not in EXPECTED[fate.place]}
    assert not wrong
    seen = Counter(fate.place for fate in ledger.fates.values())

    assert seen[Place.SUCCEEDED] and seen[Place.FAILURE_DLQ] and seen[Place.ABSORBED]  # the mix reached each
    for message_id, fate in ledger.fates.items():
        status = statuses[message_id]
        if fate.place is Place.SUCCEEDED:
            assert status.stage == "shipped" and status.final
        if fate.place is Place.FAILURE_DLQ:  # recorded for a person: the status says so, and why
            assert status.final and status.retry is False and status.error == fate.error, message_id
        if fate.redrives:  # healed or spent by automatic redrives: read through the copies to the last one
            assert status.attempts == fate.redrives and status.attempt_message_id == fate.copies[-1], message_id


def test_a_healthy_order_reports_each_stage_then_succeeds(cloud_assembly: Path) -> None:
    with Rehearsal.start(cloud_assembly) as aws:
        seed_inventory(aws.dynamodb, aws.outputs["InventoryTableName"])
        order = make_order(OrderKind.VALID, 1, random.Random(1))
        aws.faults.add(Fault("ArrangeShipping", FaultKind.HANG, times=1, key=order.order_id))
        message_id = aws.send(order.body)
        aws.wait_for_hang()
        # While ArrangeShipping runs, the order is charged: in progress, not final
        during = status_of(aws, message_id)
        aws.release_held()
        aws.run()
        after = status_of(aws, message_id)

    assert (during.state, during.stage, during.final) == (State.IN_PROGRESS, "charged", False)
    assert (after.state, after.stage, after.final) == (State.SUCCEEDED, "shipped", True)
    assert after.execution_arn == during.execution_arn


def test_the_demo_plan_has_every_kind_the_status_check_needs() -> None:
    the_plan = plan(40, 3, chaos=True)
    kinds = {sample.kind for sample in the_plan.samples}
    assert {OrderKind.VALID, OrderKind.DECLINED, OrderKind.MALFORMED} <= kinds
    assert the_plan.resends and the_plan.sqs_duplicates and the_plan.aborted
