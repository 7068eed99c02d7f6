"""Cross-check of the weighted mix: the demo's own plan (default mix, no chaos) run through one rehearsal."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from demos.orders.demo import plan, summarize
from demos.orders.samples import seed_inventory
from fire_and_forget.rehearsal import Rehearsal, account

SEED = 7  # the demo's default seed


@dataclass(frozen=True)
class DemoRun:
    orders: int
    seed: int
    messages: int  # orders plus the producer's resends
    executions: int
    kinds: dict[str, int]
    transitions: int
    cost_per_million: float
    balanced: bool
    seconds: float

    @property
    def transitions_per_message(self) -> float:
        return self.transitions / self.messages


def run_demo(assembly: Path, orders: int) -> DemoRun:
    """What `make demo` does for `orders` orders, all sent at once; usage priced by `demos.orders.demo.summarize`."""
    the_plan = plan(orders, SEED, chaos=False)
    started = time.perf_counter()
    with Rehearsal.start(assembly) as aws:
        seed_inventory(aws.dynamodb, aws.outputs["InventoryTableName"])
        units = aws.capacity.snapshot()
        bodies = {aws.send(sample.body): sample.body for sample in the_plan.samples}
        aws.pipe.duplicate_next = the_plan.sqs_duplicates
        aws.run(timeout_seconds=900)
        units = aws.capacity.snapshot() - units
        ledger = account(aws, list(bodies))
        elapsed = time.perf_counter() - started
        result = summarize(aws, ledger, bodies, the_plan, elapsed, units, orders=orders, chaos=False, seed=SEED)
        executions = len(aws.pipe.stats.started)
    return DemoRun(
        orders=orders,
        seed=SEED,
        messages=result["messages_in"],
        executions=executions,
        kinds=dict(Counter(str(sample.kind) for sample in the_plan.samples)),
        transitions=result["usage"]["transitions"],
        cost_per_million=result["cost_per_million_orders_usd"],
        balanced=result["conservation"]["balanced"],
        seconds=elapsed,
    )
