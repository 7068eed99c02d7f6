"""What the default quotas carry, run in the rehearsal rather than divided: section 7 of docs/performance.md.

For each class of Region (the three with StartExecution's larger bucket, and every other one), the order example
runs a sustained overload at 1/100 of that Region's quota, the pipe retrying throttled starts; the rates are read
back from the executions' start times and scaled up again: how many started at once (the bucket a burst gets
through) and how many a second after that (the refill). The transitions per order come from the same run, and with
them what the state-transition quota would need at that rate; Lambda's concurrency at that rate is the invocations
per order times their duration (FUNCTION_SECONDS). Then every load scenario of `make test` (demos/orders/load.py,
SMALL and LIMITS_SMALL) with its outcome, as the tests assert it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.ceiling import QUOTAS
from demos.orders.load import LIMITS_SMALL, SMALL, Scenario, row, run
from fire_and_forget.rehearsal import ThrottleReading, lambda_concurrency_quota, start_execution_quota

SCALE = 0.01  # 1/100: a bucket of 13 (8 elsewhere), refilled at 3 a second (1.5)
OVERLOAD = Scenario("capacity: sustained 10x", 10, 5, scale=SCALE, readings=(ThrottleReading.RETRIED,))
REGIONS = (("us-east-1, us-west-2, eu-west-1", "us-east-1"), ("every other Region", "ap-northeast-1"))
# State transitions a second, sustained (the same in every Region class: bench/ceiling.py).
TRANSITIONS_PER_SECOND = QUOTAS[0].transitions_per_second
LAMBDA_DEFAULT = lambda_concurrency_quota().limit  # the account's concurrency, against what the rate needs
FUNCTION_SECONDS = 0.1  # a typical invocation of the order example's handlers, for the concurrency it needs
INVOCATIONS_PER_ORDER = 3  # a healthy order: ReserveInventory, ChargePayment, ArrangeShipping


@dataclass(frozen=True)
class Carried:
    """What one Region class's default StartExecution quota carried in the rehearsal, scaled back up."""

    regions: str
    at_once: float  # executions started at the first moment of the overload
    per_second: float  # executions started a second after that
    transitions_per_order: float
    orders: int
    succeeded: int

    @property
    def transitions_per_second(self) -> float:
        return self.per_second * self.transitions_per_order

    @property
    def lambda_concurrency(self) -> float:
        return self.per_second * INVOCATIONS_PER_ORDER * FUNCTION_SECONDS


def carried(assembly: Path, regions: str, region: str) -> Carried:
    outcome = run(assembly, OVERLOAD, ThrottleReading.RETRIED, region=region)
    result = outcome.result
    starts = result.started_at
    first = starts[0]
    at_once = sum(1 for start in starts if start == first)
    span = (starts[-1] - first).total_seconds()
    per_second = (len(starts) - at_once) / span if span else 0.0
    return Carried(regions, at_once / SCALE, per_second / SCALE, result.usage.transitions / result.messages,
                   result.messages, result.places["succeeded"])


@dataclass
class Capacity:
    carried: list[Carried]
    scenarios: list[dict[str, Any]]  # demos.orders.load.row of each scenario and reading


def measure(assembly: Path) -> Capacity:
    regions = [carried(assembly, name, region) for name, region in REGIONS]
    rows = [row(run(assembly, scenario, reading)) for scenario in (*SMALL, *LIMITS_SMALL)
            for reading in scenario.readings]
    return Capacity(regions, rows)


def quoted(region: str) -> tuple[float, float]:
    """The documented bucket and refill of StartExecution in `region`, to print beside what was measured."""
    quota = start_execution_quota(region)
    return quota.bucket, quota.refill_per_second
