"""The order example under load: StartExecution held to its quota, scaled down, in both readings of what a throttled
start is to the pipe (fire_and_forget.rehearsal.pipe.ThrottleReading).

Each scenario is a shape relative to the scaled quota's refill rate: a sustained overload at 10 times it, a burst at
100 times it, and a flash sale (every order on one SKU with less stock than orders). `python -m demos.orders.load`
runs them at the scale and length given and prints one row per scenario and reading: where every order ended, the
slowest, executions and billed transitions per order, and the price per 1M orders under that load.
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
    LoadResult,
    Phase,
    Quota,
    Rehearsal,
    ThrottleReading,
    send_at_rate,
    settle,
    start_execution_quota,
)
from fire_and_forget.runtime.healing_policy import SOURCE_RETURN_VARIABLE, HealingPolicy
from fire_and_forget.runtime.outputs import Output

FLASH_SKU = "SKU-FLASH-SALE"


@dataclass(frozen=True)
class Scenario:
    """`multiple` times the quota's refill rate for `seconds`, the quota `scale` times us-east-1's; `stock`: a flash
    sale, every order one unit of FLASH_SKU, of which there are `stock`."""

    name: str
    multiple: float
    seconds: float
    stock: int | None = None
    scale: float = 0.001


@dataclass
class Outcome:
    scenario: Scenario
    reading: ThrottleReading
    quota: Quota
    result: LoadResult
    sold: int | None = None  # flash sale: units of FLASH_SKU reserved, from the inventory table
    left: int | None = None  # flash sale: units still available
    charged: int | None = None  # flash sale: payments standing charged, from the payments table
    orders: dict[str, str] = field(default_factory=dict)  # message id -> order id


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
    quota = start_execution_quota(region).scaled(scenario.scale)
    with Rehearsal.start(assembly, start_quota=quota, throttle_reading=reading) as aws:
        scale_source_returns(aws, quota)
        table = aws.outputs["InventoryTableName"]
        seed_inventory(aws.dynamodb, table)
        if scenario.stock is not None:
            seed_inventory(aws.dynamodb, table, {FLASH_SKU: scenario.stock})
        rng = random.Random(seed)
        first = 100_000  # order numbers of their own, apart from the demo's

        def body(n: int) -> str:
            if scenario.stock is not None:
                return flash_order(first + n, rng)
            return make_order(OrderKind.VALID, first + n, rng).body

        sent = send_at_rate(aws, [Phase(quota.refill_per_second * scenario.multiple, scenario.seconds)], body)
        outcome = Outcome(scenario, reading, quota, settle(aws, sent))
        if scenario.stock is not None:
            (item,) = [i for i in aws.items("InventoryTableName") if i["sku"] == FLASH_SKU]
            outcome.left = int(item["available"])
            outcome.sold = scenario.stock - outcome.left
            outcome.charged = sum(1 for p in aws.items("PaymentsTableName") if p.get("status") == "CHARGED")
        return outcome


def row(outcome: Outcome) -> dict[str, Any]:
    r = outcome.result
    return {
        "scenario": outcome.scenario.name, "reading": outcome.reading.value, "quota": outcome.quota.name,
        "orders": r.messages, "where they ended": dict(sorted(r.places.items())), "quiet": r.quiet,
        "slowest_seconds": round(r.slowest_seconds), "throttled_starts": r.throttled,
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


def main(argv: list[str]) -> int:
    """`python -m demos.orders.load [small|full] [assembly]`: each scenario in both readings, a JSON row each."""
    quiet_logs()
    scenarios = FULL if argv[:1] == ["full"] else SMALL
    assembly = Path(argv[1]) if len(argv) > 1 else Path("cdk.out")
    for scenario in scenarios:
        for reading in ThrottleReading:
            print(json.dumps(row(run(assembly, scenario, reading))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
