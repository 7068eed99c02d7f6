"""Offline pipeline throughput: N valid orders sent at once into a fresh rehearsal, timed through `run()`."""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from demos.orders.samples import OrderKind, make_order, seed_inventory
from fire_and_forget.rehearsal import Rehearsal


@dataclass(frozen=True)
class Level:
    """One concurrency level: median wall and CPU time of `run()` over `runs` fresh rehearsals."""

    concurrent: int
    runs: int
    seconds: float
    cpu_seconds: float
    succeeded: int  # executions that succeeded in the last run (all N, or the figure is not a throughput)

    @property
    def orders_per_second(self) -> float:
        return self.concurrent / self.seconds


def _once(assembly: Path, orders: int) -> tuple[float, float, int]:
    with Rehearsal.start(assembly) as aws:
        seed_inventory(aws.dynamodb, aws.outputs["InventoryTableName"])
        rng = random.Random(orders)
        for number in range(1, orders + 1):
            aws.send(make_order(OrderKind.VALID, number, rng).body)
        wall, cpu = time.perf_counter(), time.process_time()
        executions = aws.run(timeout_seconds=600)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return wall, cpu, sum(1 for execution in executions if execution.status == "SUCCEEDED")


def measure(assembly: Path, levels: Sequence[int] = (1, 10, 100), budget: int = 100) -> list[Level]:
    """Each level in fresh rehearsals, repeated until about `budget` orders went through (at least once).

    One untimed order first, so importing the handlers and moto's interpreter is not counted.
    """
    _once(assembly, 1)
    rows = []
    for concurrent in levels:
        runs = max(1, min(5, budget // concurrent))
        samples = [_once(assembly, concurrent) for _ in range(runs)]
        rows.append(Level(
            concurrent=concurrent,
            runs=runs,
            seconds=statistics.median(wall for wall, _, _ in samples),
            cpu_seconds=statistics.median(cpu for _, cpu, _ in samples),
            succeeded=samples[-1][2],
        ))
    return rows
