"""One deployment per template per process (fire_and_forget/rehearsal/snapshot.py): a rehearsal restored from the
state the first deploy left is that deployment. It holds the same account, runs the same orders and faults to the
same end as a fresh deploy, and keeps nothing of the rehearsal before it."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import time_machine

import fire_and_forget.rehearsal.rehearsal as rehearsal_module
from demos.orders.samples import OrderKind, make_order, seed_inventory
from fire_and_forget.rehearsal import snapshot
from fire_and_forget.rehearsal.accounting import account, advance_past_retries
from fire_and_forget.rehearsal.assembly import STACK_NAME, CloudAssembly
from fire_and_forget.rehearsal.deployment import OfflineStack
from fire_and_forget.rehearsal.faults import Fault, FaultKind
from fire_and_forget.rehearsal.rehearsal import Rehearsal
from tests.support.account_state import account_state
from tests.support.cdk import CATALOG_STACK_NAME

# Where two deployments of one template may differ however each was made: the ids AWS (moto) draws at random.
_DRAWN_IDS = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{32}|[0-9a-f]{16}"
                        r"|[a-z]{100,}")  # uuids, hex ids, SQS receipt handles
START = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)  # both runs of a comparison start their clocks here


@pytest.fixture
def deploys(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The stacks really deployed (CreateStack and the rest) from here on."""
    made: list[str] = []
    original = rehearsal_module.deploy

    def counted(assembly: Any, region: str) -> OfflineStack:
        made.append(assembly.stack_name)
        return original(assembly, region)

    monkeypatch.setattr(rehearsal_module, "deploy", counted)
    return made


@pytest.mark.parametrize("stack_name", [None, CATALOG_STACK_NAME], ids=["orders", "catalog"])
def test_a_restored_rehearsal_holds_exactly_the_account_its_deployment_left(
        cloud_assembly: Path, deploys: list[str], stack_name: str | None) -> None:
    # Given a fresh deployment and its account as the deploy left it, every resource read through the APIs
    kwargs = {"stack_name": stack_name} if stack_name else {}
    snapshot.forget(CloudAssembly.load(cloud_assembly, stack_name or STACK_NAME))
    with Rehearsal.start(cloud_assembly, **kwargs) as fresh:
        deployed, stack = account_state(fresh), fresh.stack
    # When the next rehearsal of the same template is opened
    with Rehearsal.start(cloud_assembly, **kwargs) as restored:
        # Then it was not deployed again, and its account is that one: every resource, id and date
        assert len(deploys) == 1
        assert account_state(restored) == deployed
        assert (restored.outputs, restored.stack.physical_ids, restored.stack.definitions) == (
            stack.outputs, stack.physical_ids, stack.definitions)
        # and its stack's references resolve against the restored stack, not the one it was copied from
        assert restored.stack.resource_map is not stack.resource_map
        (queue_id,) = [lid for lid in restored.stack.physical_ids if lid.endswith("SourceQueue41FD4286")] or [None]
        if queue_id is not None:
            assert restored.stack.resolve({"Ref": queue_id}) == stack.physical_ids[queue_id]


def test_nothing_of_one_rehearsal_is_left_in_the_next(cloud_assembly: Path, deploys: list[str]) -> None:
    # Given a rehearsal that leaves messages in queues, items in tables, executions, alerts, metrics, a published
    # pipe and a moved clock, opened once the template's first deployment was copied
    with Rehearsal.start(cloud_assembly):
        deploys.clear()
    with Rehearsal.start(cloud_assembly) as first:
        opened = account_state(first)
        seed_inventory(first.dynamodb, first.outputs["InventoryTableName"])
        for number, kind in enumerate(OrderKind, start=1):
            first.send(make_order(kind, number, random.Random(number)).body)
        first.run()
        first.advance(300)  # the Redriver's schedule fires once
        first.publish_pipe()
        first.send("left in the source queue")
        assert first.messages("FailureDlqUrl") and first.notifications() and first.items("OrdersTableName")
        assert first.scheduler.firings and first.runtime.invocations
    # When the next rehearsal of the same template is opened
    with Rehearsal.start(cloud_assembly) as second:
        # Then its account is the one the deploy left: no message, item, execution, alert, metric or pipe
        assert account_state(second) == opened
        assert second.executions() == [] and second.notifications() == []
        assert all(second.messages(key) == [] for key in second.outputs if key.endswith("QueueUrl"))
        assert second.runtime.invocations == [] and second.scheduler.firings == []
    assert deploys == []  # both were restored


def test_a_restored_rehearsal_runs_orders_and_faults_to_the_same_end_as_a_fresh_deployment(
        cloud_assembly: Path, deploys: list[str]) -> None:
    # Given the same orders and faults, run to quiet once on a fresh deployment and once on a restored one, both
    # clocks started at the same moment
    fresh = _run_to_quiet(cloud_assembly, reuse_deployment=False)
    restored = _run_to_quiet(cloud_assembly, reuse_deployment=True)
    # Then every execution, record, alert, item and where each message ended are the same
    assert deploys == ["FireAndForget"]  # the fresh one; the other was restored
    assert restored == fresh
    assert {status for _order, status, *_ in fresh["executions"]} >= {"SUCCEEDED", "FAILED"}
    assert fresh["failure_dlq"] and fresh["notifications"]


def _run_to_quiet(cloud_assembly: Path, reuse_deployment: bool) -> dict[str, Any]:
    with _clock_starting_at(START), Rehearsal.start(cloud_assembly, reuse_deployment=reuse_deployment) as aws:
        seed_inventory(aws.dynamodb, aws.outputs["InventoryTableName"])
        orders = {kind: make_order(kind, number, random.Random(number)) for number, kind in
                  enumerate(OrderKind, start=1)}
        aws.faults.add(Fault("ChargePayment", FaultKind.SERVICE_ERROR, times=2, key=orders[OrderKind.VALID].order_id))
        aws.faults.add(Fault("AlertsTopic", FaultKind.UNAVAILABLE, times=1))
        aws.pipe.duplicate_next = 1
        ids = {aws.send(order.body): kind for kind, order in orders.items()}
        aws.run()
        advance_past_retries(aws)
        ledger = account(aws, list(ids))
        seen = _scrubbed(aws.stack, {
            "executions": [(_order_of(e.input), e.status, e.states, e.error) for e in aws.executions()],
            "failure_dlq": [json.loads(m["Body"]) for m in aws.messages("FailureDlqUrl")],
            "notifications": aws.notifications(),
            "items": {key: [_without_remaining_time(item) for item in aws.items(key)]
                      for key in aws.outputs if key.endswith("TableName")},
            "fates": [(ids[m].value, [p.value for p in f.places], f.announcements, f.error)
                      for m, f in ledger.fates.items()],
        })
        # Executions run on threads side by side: what they did is compared, not in which order they did it
        return {key: _in_any_order(value) for key, value in seen.items()} | {"now": aws.now()}


@contextmanager
def _clock_starting_at(moment: datetime) -> Iterator[None]:
    """The rehearsal's clock starts at the real time it is opened: here, that moment."""
    with time_machine.travel(moment, tick=False):
        yield


def _order_of(execution_input: Any) -> str | None:
    record = execution_input[0] if isinstance(execution_input, list) and execution_input else {}
    try:
        return str(json.loads(record.get("body", ""))["orderId"])
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def _without_remaining_time(item: dict[str, Any]) -> dict[str, Any]:
    """An item without the idempotency store's in-progress expiry: the handler's remaining time in milliseconds at
    the moment it wrote, measured on the machine's monotonic clock like Lambda's, so no two runs give the same."""
    return {key: value for key, value in item.items() if key != "in_progress_expiration"}


def _in_any_order(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _in_any_order(item) for key, item in value.items()}
    if isinstance(value, list):
        return sorted(value, key=repr)
    return value


def _scrubbed(stack: OfflineStack, value: Any) -> Any:
    """The value with what each deploy draws anew made the same: every physical name (CloudFormation adds a random
    suffix) as its logical id, and every randomly drawn id (message ids, execution names, request ids) as `<id>`."""
    names = {}
    for logical_id, physical_id in stack.physical_ids.items():
        names[physical_id] = f"<{logical_id}>"
        short = re.split(r"[:/]", physical_id)[-1]
        if len(short) >= 12:  # the name inside an ARN or URL, e.g. a state machine's in its executions' ARNs
            names.setdefault(short, f"<{logical_id}>")
    pattern = re.compile("|".join(re.escape(name) for name in sorted(names, key=len, reverse=True)))

    def scrub(item: Any) -> Any:
        if isinstance(item, dict):
            return {scrub(k): scrub(v) for k, v in item.items()}
        if isinstance(item, list | tuple):
            return [scrub(v) for v in item]
        if isinstance(item, str):
            return _DRAWN_IDS.sub("<id>", pattern.sub(lambda match: names[match.group(0)], item))
        return item

    return scrub(value)
