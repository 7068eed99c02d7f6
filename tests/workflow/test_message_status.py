"""What a caller learns of its message agrees with where the books say it ended: the status it reads
(fire_and_forget.runtime.status) and the notices its completion webhook receives (fire_and_forget.healing.completion).

The books (fire_and_forget.rehearsal.accounting) read the queues, the executions and the failure records; the status
reads the deliveries table's rows, and the webhook's enrichment the table's stream. They share no code: a run of the
demo's mix with chaos (transient faults, timeouts, crashes, aborts, SQS duplicates, producer resends, malformed
bodies, automatic redrives) must leave every caller message with the status its place implies, and one notice exactly
when that place is final. Bound: the demo's 40-order chaos plan for one seed in the suite, four seeds in `make wide`;
at each quiet point of the run the stream's new records go through the pipe's filters (from the synthesized
template) and the enrichment, in the order DynamoDB recorded them (the pipe reads them in that order per item:
Streams.html).
"""

from __future__ import annotations

import io
import json
import random
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from moto.events.models import EventPattern
from rich.console import Console

from demos.orders.demo import plan, quiet_logs, run_demo
from demos.orders.samples import OrderKind, make_order, seed_inventory
from fire_and_forget.healing.completion import notices
from fire_and_forget.healing.tickets import Tickets, TicketSettings, act_on
from fire_and_forget.rehearsal.accounting import Ledger, Place, account
from fire_and_forget.rehearsal.faults import Fault, FaultKind
from fire_and_forget.rehearsal.ops_center import OpsCenter
from fire_and_forget.rehearsal.rehearsal import Rehearsal
from fire_and_forget.runtime.healing_policy import HealingPolicy
from fire_and_forget.runtime.outputs import Output
from fire_and_forget.runtime.status import MessageStatus, State, read_status
from tests.support.cdk import load_template
from tests.support.streams import stream_records
from tests.support.wide import WIDE

SEEDS = (3, 5, 11, 19) if WIDE else (3,)
# A place in the books -> the states a caller may read for a message that ended there.
EXPECTED = {
    Place.SUCCEEDED: {State.SUCCEEDED},
    Place.ABSORBED: {State.ABSORBED},
    Place.FAILURE_DLQ: {State.FAILED},
    Place.WAITING: {State.FAILED},
    Place.EXECUTION: {State.FAILED},
    # Never handed over: no execution ever owned it. Once the Redriver sent a copy back from the source DLQ, the
    # caller's row links that copy, which has no row of its own: "accepted", sent back and not started.
    Place.SOURCE_DLQ: {State.UNKNOWN, State.ACCEPTED},
}
# A place in the books -> the notice its caller's webhook receives: one with this state, or none.
NOTIFIED = {Place.SUCCEEDED: "succeeded", Place.ABSORBED: "absorbed", Place.FAILURE_DLQ: "failed",
            Place.WAITING: None, Place.SOURCE_DLQ: None}
STREAM = {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"}


def policy_of(aws: Rehearsal) -> HealingPolicy:
    """The policy the stack publishes (as ff-ops reads it, and as the webhook's enrichment gets it)."""
    return HealingPolicy.from_environment(json.loads(aws.outputs[Output.HEALING_POLICY]))


def status_of(aws: Rehearsal, message_id: str) -> MessageStatus:
    """What a caller reads."""
    return read_status(aws.dynamodb, aws.outputs[Output.DELIVERIES_TABLE_NAME], message_id, policy_of(aws))


def webhook_filters(full_assembly: Path) -> list[EventPattern]:
    """The completion webhook pipe's filters, as the synthesized template writes them."""
    pipes = [r["Properties"] for r in load_template(full_assembly)["Resources"].values()
             if r["Type"] == "AWS::Pipes::Pipe" and "DynamoDBStreamParameters" in r["Properties"]["SourceParameters"]]
    (pipe,) = pipes
    return [EventPattern.load(f["Pattern"]) for f in pipe["SourceParameters"]["FilterCriteria"]["Filters"]]


@dataclass(frozen=True)
class ChaosRun:
    ledger: Ledger
    statuses: dict[str, MessageStatus]
    notices: list[dict[str, Any]]
    stream_records: int
    passed_filter: int
    center: OpsCenter  # the tickets the same records opened


@pytest.fixture(scope="module", params=SEEDS, ids=[f"seed {seed}" for seed in SEEDS])
def chaos_run(request: pytest.FixtureRequest, cloud_assembly: Path, full_assembly: Path) -> ChaosRun:
    quiet_logs()
    filters = webhook_filters(full_assembly)
    with Rehearsal.start(cloud_assembly) as aws:
        table = aws.outputs[Output.DELIVERIES_TABLE_NAME]
        aws.dynamodb.update_table(TableName=table, StreamSpecification=STREAM)  # as the full template creates it
        records: list[dict[str, Any]] = []
        passed: list[dict[str, Any]] = []
        found: list[dict[str, Any]] = []
        center = OpsCenter()
        tickets = Tickets(center, aws.dynamodb, TicketSettings(
            pipeline="orders", environment="dev", title="Order saga", stack=aws.stack.name,
            runbook_url="https://example.com/runbook.md", key_field="orderId", table=table))
        run_until_quiet = aws.run_until_quiet

        def run_then_enrich(timeout_seconds: float = 300.0) -> None:
            """Each quiet point of the run hands the stream's new records to the enrichment, one at a time (batch
            size 1), as the pipe would within seconds: before a cool-off ends and its redrive follows."""
            run_until_quiet(timeout_seconds)
            new = stream_records(table, aws.region, since=len(records))
            records.extend(new)
            for record in new:
                if any(f.matches_event(record) for f in filters):
                    passed.append(record)
                    found.extend(notices([record], dynamodb=aws.dynamodb, stepfunctions=aws.sfn, table=table,
                                         policy=policy_of(aws)))
                    # The tickets' mapping reads the same records through the same filters (its own batches:
                    # one record at a time here, as a bisected batch ends)
                    act_on([record], tickets, dynamodb=aws.dynamodb, stepfunctions=aws.sfn, policy=policy_of(aws),
                           table=table)

        aws.run_until_quiet = run_then_enrich  # type: ignore[method-assign]
        run_demo(aws, Console(file=io.StringIO()), orders=40, chaos=True, seed=request.param)
        ledger = account(aws, aws.sent)
        statuses = {message_id: status_of(aws, message_id) for message_id in ledger.fates}
    return ChaosRun(ledger, statuses, found, len(records), len(passed), center)


def test_every_callers_message_reads_as_the_books_say_it_ended(chaos_run: ChaosRun) -> None:
    ledger, statuses = chaos_run.ledger, chaos_run.statuses
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


def test_the_webhook_tells_each_caller_once_exactly_when_its_message_ended_for_good(chaos_run: ChaosRun) -> None:
    # Given the run's stream, filtered as the pipe filters it and enriched record by record
    by_caller = Counter(notice["messageId"] for notice in chaos_run.notices)
    assert chaos_run.passed_filter < chaos_run.stream_records  # the filter drops the claims and the stage reports
    wrong = []
    for message_id, fate in chaos_run.ledger.fates.items():
        told = [notice["state"] for notice in chaos_run.notices if notice["messageId"] == message_id]
        status = chaos_run.statuses[message_id]
        # Then a caller is told once when the books put its message in a final place, never while a retry follows
        expected = NOTIFIED.get(fate.place, "unset")
        if expected != "unset" and told != ([expected] if expected else []):
            wrong.append(f"{message_id} ({fate.place.value}) told {told}, expected {expected or 'nothing'}")
        # And the notice is the status the caller reads (a failed execution whose input is kept: told if final)
        if told != ([status.state.value] if status.final else []):
            wrong.append(f"{message_id} reads {status.state.value} (final {status.final}) and was told {told}")
    for notice in chaos_run.notices:  # each about the attempt that carries its caller's work now
        status = chaos_run.statuses[notice["messageId"]]
        assert notice["final"] and notice["attemptMessageId"] == status.attempt_message_id, notice
        assert notice["notificationId"] == f"{status.attempt_message_id}:{status.state.value}"
    assert not wrong, "\n".join(wrong)
    # And no notice names a message the caller never sent, none is repeated, and the mix reached every kind
    assert set(by_caller) <= set(chaos_run.ledger.fates) and max(by_caller.values()) == 1
    assert {notice["state"] for notice in chaos_run.notices} == {"succeeded", "failed", "absorbed"}
    assert any(notice["redrives"] for notice in chaos_run.notices)  # a copy's outcome reached its caller's id


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


def test_each_message_that_failed_for_good_has_one_open_ticket_and_no_other_has_any(chaos_run: ChaosRun) -> None:
    # Given the same records handed to the tickets function, against OpsCenter's documented deduplication
    opened = {json.loads(item.data["/aws/dedup"]["Value"])["dedupString"].rsplit("/", 1)[-1]: item
              for item in chaos_run.center.items.values()}
    # Then every message the books put in the failure DLQ for a person has exactly one OpsItem, open, named on its
    # status; and no message that succeeded, was absorbed or waits for an automatic retry has one
    for_a_person = {m for m, fate in chaos_run.ledger.fates.items() if fate.place is Place.FAILURE_DLQ}
    final_failures = {m for m, status in chaos_run.statuses.items() if status.state is State.FAILED and status.final}
    assert for_a_person and for_a_person <= set(opened) == final_failures
    assert len(chaos_run.center.items) == len(opened)  # one per message, whatever the retries and redeliveries
    for message_id, item in opened.items():
        status = chaos_run.statuses[message_id]
        data = {name: value["Value"] for name, value in item.data.items()}
        assert item.status == "Open" and status.ticket == item.id, message_id
        assert (data["messageId"], data["error"], data["failedState"]) == (message_id, status.error,
                                                                            status.failed_state)
    # And none was created for a failure the Redriver retried (each OpsItem is a message failed for good)
    retried = {m for m, fate in chaos_run.ledger.fates.items() if fate.redrives and fate.place is Place.SUCCEEDED}
    assert retried and not retried & set(opened)
