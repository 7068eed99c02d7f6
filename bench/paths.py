"""State transitions and cost of each workflow path, from real executions in the offline rehearsal."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

from demos.orders.carrier import Carrier
from demos.orders.demo import MIX, RESEND_SHARE, SQS_DUPLICATE_SHARE
from demos.orders.long_running import CARRIER_PLANS
from demos.orders.long_running import synthesize as synthesize_carrier_app
from demos.orders.samples import OrderKind, make_order, seed_inventory
from fire_and_forget.rehearsal import (
    Execution,
    Fault,
    FaultKind,
    Rehearsal,
    Usage,
    add,
    per_million,
    usage_of_execution,
)
from fire_and_forget.runtime.tail import DUPLICATE_ENDS

# Published figures of the anchor samples: billed state transitions of each sample's happy path.
ANCHORS = (
    ("cdk-patterns saga (happy path)", 4),
    ("AWS saga-pattern-cdk sample (happy path)", 7),
)


@dataclass(frozen=True)
class Scenario:
    """One path: the kind of order sent, and the fault injected on that order only."""

    name: str
    kind: OrderKind
    order_number: int  # the same number gives the same order (a resend reuses the happy path's)
    fault: tuple[str, FaultKind, int | None] | None = None  # (task, fault, times; None = every time)
    duplicate_delivery: bool = False  # the pipe hands the message over twice, as SQS at-least-once may


SCENARIOS = (
    Scenario("happy path", OrderKind.VALID, 1),
    Scenario("OutOfStock at ReserveInventory", OrderKind.OUT_OF_STOCK, 2),
    Scenario("PaymentDeclined at ChargePayment", OrderKind.DECLINED, 3),
    Scenario("ShippingUnavailable at ArrangeShipping", OrderKind.UNSERVED, 4),
    Scenario("bad input: InvalidOrder", OrderKind.MALFORMED, 5),
    Scenario("2 throttles on ChargePayment, retried", OrderKind.VALID, 6, ("ChargePayment", FaultKind.THROTTLE, 2)),
    Scenario("ArrangeShipping throttled until retries run out", OrderKind.VALID, 7,
             ("ArrangeShipping", FaultKind.THROTTLE, None)),
)
# Paths the demo's mix also contains: a producer resending an order, and SQS delivering a message twice.
RESEND = Scenario("producer resend of a completed order", OrderKind.VALID, 1)
DUPLICATE = Scenario("SQS duplicate delivery (both executions)", OrderKind.VALID, 8, duplicate_delivery=True)
# Which measured path each kind of the demo's MIX takes.
PATH_OF_KIND = {
    OrderKind.VALID: "happy path",
    OrderKind.OUT_OF_STOCK: "OutOfStock at ReserveInventory",
    OrderKind.DECLINED: "PaymentDeclined at ChargePayment",
    OrderKind.UNSERVED: "ShippingUnavailable at ArrangeShipping",
    OrderKind.MALFORMED: "bad input: InvalidOrder",
}


@dataclass
class PathResult:
    """What one message on one path cost: its executions (two for a duplicate delivery) and their usage."""

    scenario: Scenario
    executions: list[Execution]
    retries: list[int]
    usage: Usage = field(default_factory=Usage)
    duplicate_usage: Usage = field(default_factory=Usage)  # the executions a duplicate delivery adds

    @property
    def states_entered(self) -> int:
        return sum(execution.transitions for execution in self.executions)

    @property
    def cost_per_million(self) -> float:
        return per_million(self.usage, 1)


def run_paths(assembly: Path) -> dict[str, PathResult]:
    """Each scenario, one after another in one rehearsal, so no execution shares the machine with another."""
    results: dict[str, PathResult] = {}
    with Rehearsal.start(assembly) as aws:
        seed_inventory(aws.dynamodb, aws.outputs["InventoryTableName"])
        for scenario in (*SCENARIOS, RESEND, DUPLICATE):
            results[scenario.name] = _run_one(aws, scenario)
    # The meter counts per message, not per execution: what a duplicate delivery adds in DynamoDB is its path's
    # units beyond those of the same kind of order delivered once (the happy path).
    duplicate, once = results[DUPLICATE.name], results["happy path"]
    duplicate.duplicate_usage.dynamodb_writes = duplicate.usage.dynamodb_writes - once.usage.dynamodb_writes
    duplicate.duplicate_usage.dynamodb_reads = duplicate.usage.dynamodb_reads - once.usage.dynamodb_reads
    return results


def _run_one(aws: Rehearsal, scenario: Scenario) -> PathResult:
    sample = make_order(scenario.kind, scenario.order_number, random.Random(scenario.order_number))
    if scenario.fault is not None:
        task, kind, times = scenario.fault
        aws.faults.add(Fault(task, kind, times=times, key=sample.order_id))
    before = set(aws.pipe.stats.started)
    aws.pipe.duplicate_next = 1 if scenario.duplicate_delivery else 0
    units = aws.capacity.snapshot()
    aws.send(sample.body)
    executions = [e for e in aws.run() if e.arn not in before]
    units = aws.capacity.snapshot() - units  # the one message's DynamoDB work, every execution's and function's
    aws.faults.clear()
    result = PathResult(scenario, executions, [len(aws.clock.for_execution(e.arn)) for e in executions])
    for number, (execution, retries) in enumerate(zip(executions, result.retries, strict=True)):
        # The path's metered units go with its first execution (run_paths splits a duplicate's share off).
        usage = usage_of_execution(execution.history, retries, units if number == 0 else None)
        add(result.usage, usage)
        if execution.states and execution.states[-1] in DUPLICATE_ENDS:
            add(result.duplicate_usage, usage)
    return result


@dataclass(frozen=True)
class MixResult:
    """The demo's default mix, weighted from the measured paths."""

    transitions_per_message: float
    executions_per_message: float
    cost_per_million: float
    weights: dict[str, float]


def demo_mix(results: dict[str, PathResult]) -> MixResult:
    """Per message in: sum(w_k * path_k) + resend share * resend path + duplicate share * extra execution,
    over (1 + resend share) messages, as the demo counts a resend as a message and a duplicate as not one.
    w_k is MIX's weight of kind k normalized to sum to 1, as `random.choices` draws them."""
    total = Usage()
    executions = 0.0
    weights: dict[str, float] = {}
    kinds = sum(MIX.values())  # the demo draws kinds with these weights; they need not sum to 1
    parts = [(PATH_OF_KIND[kind], weight / kinds, results[PATH_OF_KIND[kind]].usage) for kind, weight in MIX.items()]
    parts.append((RESEND.name, RESEND_SHARE, results[RESEND.name].usage))
    extra = results[DUPLICATE.name].duplicate_usage
    parts.append((DUPLICATE.name.split(" (")[0] + ": the extra execution", SQS_DUPLICATE_SHARE, extra))
    scale = 1_000_000  # integer Usage fields: weight a million messages rather than one
    for name, share, usage in parts:
        weights[name] = share
        add(total, _scaled(usage, share * scale))
        executions += share * usage.pipe_requests  # one pipe request per execution
    messages = (1 + RESEND_SHARE) * scale
    return MixResult(
        transitions_per_message=total.transitions / messages,
        executions_per_message=executions * scale / messages,
        cost_per_million=per_million(total, round(messages)),
        weights=weights,
    )


def _scaled(usage: Usage, factor: float) -> Usage:
    return Usage(**{name: round(getattr(usage, name) * factor) for name in (
        "transitions", "lambda_invocations", "sns_publishes", "sqs_requests", "pipe_requests")},
        dynamodb_writes=usage.dynamodb_writes * factor, dynamodb_reads=usage.dynamodb_reads * factor)


# The callback step (the order saga's BookCarrier, `ff:carrierConfirmation`): what one order costs when the carrier
# confirms hours later, declines, or never answers, answered by the carrier simulator through the entry point: the
# demo's long-running orders (demos/orders/long_running.py), each run alone here for as many hours as it needs.
CARRIER_HOURS = (8.0, 4.0, 30.0)


@dataclass
class CarrierPathResult:
    """One order through BookCarrier: its executions, the carrier's answers, and what it took on the clock."""

    name: str
    executions: list[Execution]
    answers: int  # requests to the entry point's function URL (heartbeats and answers), each an invocation
    hand_overs: int  # requests BookCarrier sent the carrier (an SQS SendMessage each, inside the task)
    hours: float  # from the first execution's start to the last one's end
    outcome: str
    usage: Usage = field(default_factory=Usage)

    @property
    def cost_per_million(self) -> float:
        return per_million(self.usage, 1)


def carrier_assembly(outdir: Path) -> Path:
    """The app with the carrier's confirmation, synthesized as `cdk synth -c ff:carrierConfirmation=true ...`."""
    return synthesize_carrier_app(outdir)


def run_carrier_paths(assembly: Path) -> dict[str, CarrierPathResult]:
    """Each carrier behaviour on its own order, one after another, each run on the clock until it settled."""
    results: dict[str, CarrierPathResult] = {}
    with Rehearsal.start(assembly) as aws:
        seed_inventory(aws.dynamodb, aws.outputs["InventoryTableName"])
        for number, ((name, carrier_plan), hours) in enumerate(zip(CARRIER_PLANS, CARRIER_HOURS, strict=True),
                                                               start=20):
            sample = make_order(OrderKind.VALID, number, random.Random(number))
            assert sample.order_id is not None
            before = set(aws.pipe.stats.started)
            units = aws.capacity.snapshot()
            aws.send(sample.body)
            aws.run()
            carrier = Carrier(aws, plans={sample.order_id: carrier_plan})
            carrier.run_for(hours)
            units = aws.capacity.snapshot() - units
            executions = sorted((e for e in aws.executions() if e.arn not in before),
                                key=lambda e: e.history[0]["timestamp"])
            hand_overs = sum(1 for _, request in carrier.requests if request["key"] == sample.order_id)
            answers = len(carrier.replies(sample.order_id))
            result = CarrierPathResult(
                name, executions, answers, hand_overs,
                hours=(executions[-1].history[-1]["timestamp"] - executions[0].history[0]["timestamp"])
                .total_seconds() / 3600,
                outcome=f"{executions[-1].status} after {len(executions)} execution(s)")
            for index, execution in enumerate(executions):
                add(result.usage, usage_of_execution(execution.history, len(aws.clock.for_execution(execution.arn)),
                                                     units if index == 0 else None))
            # Outside the histories: each answer is an invocation of the entry point (a function URL request), and
            # each hand-over an SQS SendMessage made by the BookCarrier function.
            result.usage.lambda_invocations += answers
            result.usage.sqs_requests += hand_overs
            results[name] = result
    return results
