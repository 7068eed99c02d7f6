"""The order example under load: StartExecution held to its quota, scaled down, in both readings of what a throttled
start is to the pipe (fire_and_forget.rehearsal.pipe.ThrottleReading); where a scenario says so, Lambda's concurrency
held to its quota at the same scale, each invocation taking time, and transactions on one item conflicting.

Each scenario is a shape relative to the scaled quota's refill rate: a sustained overload at 10 times it, a burst at
100 times it, a flash sale (every order on one SKU with less stock than orders), a burst that exhausts Lambda's
concurrency, and a flash sale whose reservations meet on the SKU's item. `python -m demos.orders.load` runs them at
the scale and length given and prints one row per scenario and reading: where every order ended, the slowest,
executions and billed transitions per order, the throttles, and the price per 1M orders under that load.
"""

from __future__ import annotations

import json
import random
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from demos.orders.quiet import quiet_logs
from demos.orders.samples import OrderKind, make_order, seed_inventory
from fire_and_forget.rehearsal import (
    Concurrency,
    Invocation,
    LoadResult,
    Phase,
    Quota,
    Rehearsal,
    ThrottleReading,
    lambda_concurrency_quota,
    partition_write_quota,
    send_at_rate,
    settle,
    start_execution_quota,
)
from fire_and_forget.runtime.healing_policy import SOURCE_RETURN_VARIABLE, HealingPolicy
from fire_and_forget.runtime.outputs import Output

FLASH_SKU = "SKU-FLASH-SALE"
# The tables whose items an outcome keeps, for books kept apart from the accounting.
BOOKS = ("InventoryTableName", "ReservationsTableName", "PaymentsTableName", "ShipmentsTableName")


@dataclass(frozen=True)
class Scenario:
    """`multiple` times the quota's refill rate for `seconds`, the quota `scale` times us-east-1's; `stock`: a flash
    sale, every order one unit of FLASH_SKU, of which there are `stock`. With `invocation_seconds`, Lambda's default
    concurrency at the same scale holds the invocations, each taking that long on the clock; with
    `transaction_seconds`, an invocation's transaction holds its items that long; with `partition_writes`, each
    item's transactional writes draw from a partition's write units at the same scale. `start_refill`: the
    StartExecution refill per second after a quota increase (None: the default). `readings`: what a throttled start
    is to the pipe, each run apart."""

    name: str
    multiple: float
    seconds: float
    stock: int | None = None
    scale: float = 0.001
    invocation_seconds: float = 0.0
    transaction_seconds: float = 0.0
    partition_writes: bool = False
    start_refill: float | None = None
    readings: tuple[ThrottleReading, ...] = tuple(ThrottleReading)

    def start_quota(self, region: str) -> Quota:
        default = start_execution_quota(region)
        if self.start_refill is not None:
            default = Quota(f"{default.name}, raised to {self.start_refill:g} a second", default.bucket,
                            self.start_refill, default.source)
        return default.scaled(self.scale)

    @property
    def concurrency(self) -> Concurrency | None:
        return lambda_concurrency_quota().scaled(self.scale) if self.invocation_seconds else None


@dataclass
class Outcome:
    scenario: Scenario
    reading: ThrottleReading
    quota: Quota
    result: LoadResult
    sold: int | None = None  # flash sale: units of FLASH_SKU reserved, from the inventory table
    left: int | None = None  # flash sale: units still available
    charged: int | None = None  # flash sale: payments standing charged, from the payments table
    lambda_throttles: int = 0  # invocations refused because every concurrency slot was held
    conflicts: int = 0  # transactions cancelled for TransactionConflict
    partition_throttles: int = 0  # transactions cancelled because an item's partition had no write units left
    invocations: list[Invocation] = field(default_factory=list)  # every invocation, with its start on the clock
    bodies: dict[str, str] = field(default_factory=dict)  # message id -> the body sent
    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # output name -> its items at the end


def flash_order(number: int, rng: random.Random) -> str:
    """A valid order for one unit of the flash-sale SKU."""
    order = json.loads(make_order(OrderKind.VALID, number, rng).body)
    order["items"] = [{"sku": FLASH_SKU, "quantity": 1}]
    return json.dumps(order)


def scale_source_returns(aws: Rehearsal, quota: Quota) -> None:
    """The Redriver's pace for the source DLQ, scaled with the quota: the deployed pace's share of the least refill
    any Region has (the default: 50 of 150 a second), of this quota's."""
    deployed = HealingPolicy.from_environment(json.loads(aws.outputs[Output.HEALING_POLICY]))
    share = deployed.source_return_per_second / start_execution_quota().refill_per_second
    function = aws.outputs[Output.REDRIVER_FUNCTION_NAME]
    environment = aws.lambda_.get_function_configuration(FunctionName=function)["Environment"]["Variables"]
    environment[SOURCE_RETURN_VARIABLE] = f"{quota.refill_per_second * share:g}"
    aws.lambda_.update_function_configuration(FunctionName=function, Environment={"Variables": environment})


def run(assembly: Path, scenario: Scenario, reading: ThrottleReading, *, region: str = "us-east-1",
        seed: int = 1) -> Outcome:
    """One scenario in one reading, from a fresh deployment to the quiet end."""
    quota = scenario.start_quota(region)
    partition = partition_write_quota().scaled(scenario.scale) if scenario.partition_writes else None
    with Rehearsal.start(assembly, start_quota=quota, throttle_reading=reading,
                         lambda_concurrency=scenario.concurrency, invocation_seconds=scenario.invocation_seconds,
                         transaction_seconds=scenario.transaction_seconds, partition_writes=partition) as aws:
        scale_source_returns(aws, quota)
        table = aws.outputs["InventoryTableName"]
        seed_inventory(aws.dynamodb, table)
        if scenario.stock is not None:
            seed_inventory(aws.dynamodb, table, {FLASH_SKU: scenario.stock})
        rng = random.Random(seed)
        first = 100_000  # order numbers of their own, apart from the demo's

        made: list[str] = []

        def body(n: int) -> str:
            made.append(flash_order(first + n, rng) if scenario.stock is not None
                        else make_order(OrderKind.VALID, first + n, rng).body)
            return made[-1]

        sent = send_at_rate(aws, [Phase(quota.refill_per_second * scenario.multiple, scenario.seconds)], body)
        outcome = Outcome(scenario, reading, quota, settle(aws, sent))
        outcome.bodies = dict(zip(sent, made, strict=True))
        outcome.tables = {name: aws.items(name) for name in BOOKS}
        if scenario.stock is not None:
            (item,) = [i for i in outcome.tables["InventoryTableName"] if i["sku"] == FLASH_SKU]
            outcome.left = int(item["available"])
            outcome.sold = scenario.stock - outcome.left
            outcome.charged = sum(1 for p in outcome.tables["PaymentsTableName"] if p.get("status") == "CHARGED")
        outcome.lambda_throttles = aws.runtime.slots.refused if aws.runtime.slots is not None else 0
        outcome.conflicts = aws.contention.conflicts if aws.contention is not None else 0
        outcome.partition_throttles = aws.contention.throttled if aws.contention is not None else 0
        outcome.invocations = list(aws.runtime.invocations)
        return outcome


def row(outcome: Outcome) -> dict[str, Any]:
    r = outcome.result
    return {
        "scenario": outcome.scenario.name, "reading": outcome.reading.value, "quota": outcome.quota.name,
        "orders": r.messages, "where they ended": dict(sorted(r.places.items())), "quiet": r.quiet,
        "slowest_seconds": round(r.slowest_seconds), "throttled_starts": r.throttled,
        **({"lambda_concurrency": outcome.scenario.concurrency.limit, "invocation_seconds":
            outcome.scenario.invocation_seconds, "throttled_invocations": outcome.lambda_throttles}
           if outcome.scenario.concurrency is not None else {}),
        **({"transaction_conflicts": outcome.conflicts} if outcome.scenario.transaction_seconds else {}),
        **({"partition_throttles": outcome.partition_throttles} if outcome.scenario.partition_writes else {}),
        "executions_per_order": round(r.executions / r.messages, 2),
        "transitions_per_order": round(r.usage.transitions / r.messages, 2),
        "usd_per_1m_orders": round(r.cost_per_million, 2),
        **({"sold": outcome.sold, "left": outcome.left, "charged": outcome.charged} if outcome.sold is not None
           else {}),
    }


# `make test`: short runs at 1/1000 of us-east-1's quota (a bucket of 1.3 refilled at 0.3 a second). `make wide`: the
# issue's lengths (10 minutes, 30 s) at 1/10000 (a bucket of one, refilled at 0.03 a second), which keeps their
# messages to a few hundred: a throttled start runs alone at its own moment of the clock, so the rehearsal runs
# these at about two orders a second of machine time.
SMALL = (Scenario("sustained 10x", 10, 10), Scenario("burst 100x", 100, 1),
         Scenario("flash sale 10x, 20 in stock", 10, 10, stock=20))
FULL = (Scenario("sustained 10x, 10 min", 10, 600, scale=0.0001), Scenario("burst 100x, 30 s", 100, 30, scale=0.0001),
        Scenario("flash sale 10x, 30 in stock", 10, 300, stock=30, scale=0.0001))

# Lambda's concurrency and the SKU's item, the pipe retrying throttled starts (the reading changes only how the starts
# are spread, which the scenarios above cover). The burst at 1/100 starts 13 orders at once (the bucket), then 3 a
# second, each invocation taking 2 s against a concurrency of 10 (the default 1,000 at 1/100): 3 x 3 x 2 = 18 would
# run at once, and the burst's first reservations alone need 13. The flash sale at 1/100 runs with StartExecution
# raised to 1,000 a second (10 a second here): its reservations meet on the SKU's item (a transaction holds it for
# 0.05 s, an invocation takes 0.1 s, so Lambda's 10 slots carry 100 invocations a second), and 10 reservations a
# second write 20 units a second to the item's partition, which serves 10 (1,000 at 1/100).
LIMITS_SMALL = (Scenario("Lambda exhausted: burst 10x, 2-s invocations", 10, 1, scale=0.01, invocation_seconds=2,
                         readings=(ThrottleReading.RETRIED,)),
                Scenario("flash sale, 20 in stock, one hot item", 3, 1, stock=20, scale=0.01, invocation_seconds=0.1,
                         transaction_seconds=0.05, partition_writes=True, start_refill=1000,
                         readings=(ThrottleReading.RETRIED,)))
LIMITS_FULL = (Scenario("Lambda exhausted: burst 10x for 3 s, 2-s invocations", 10, 3, scale=0.01,
                        invocation_seconds=2, readings=(ThrottleReading.RETRIED,)),
               Scenario("flash sale, 60 in stock, one hot item", 3, 6, stock=60, scale=0.01, invocation_seconds=0.1,
                        transaction_seconds=0.05, partition_writes=True, start_refill=1000,
                        readings=(ThrottleReading.RETRIED,)))

def main(argv: list[str]) -> int:
    """`python -m demos.orders.load [small|full] [assembly]`: each scenario in both readings, a JSON row each."""
    quiet_logs()
    scenarios = FULL + LIMITS_FULL if argv[:1] == ["full"] else SMALL + LIMITS_SMALL
    assembly = Path(argv[1]) if len(argv) > 1 else Path("cdk.out")
    for scenario in scenarios:
        for reading in scenario.readings:
            print(json.dumps(row(run(assembly, scenario, reading))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
