"""The healing explorer's scenarios, its two bounds, and the defects of today's code it finds.

Every scenario has one order (tests/healing/harness.py) and its original execution `first`, run in one fixed order
up to where it is stopped (timed out or aborted while a task is in flight, the task landing late or never). Then
the scenario's explored actors interleave in every order, with at most `max_faults` faults of the listed kinds;
everything after them (the Redriver, the pipe, redriven copies and their Reconciler runs, a last sweep) runs to
quiet in one fixed order. `SUITE` runs in `make test`; `wide()` (`make wide`) adds faults of every kind on every
healer call (one per run, HEALING_FAULTS=2 for two), aborts beside timeouts, late invocations interleaved call by
call, the tail stopped in a compensation, and the redriven copies among the explored actors.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from tests.healing.books import Finding
from tests.healing.executions import Message
from tests.healing.explorer import Scenario
from tests.healing.gates import Decision
from tests.healing.harness import ORDER

UNSERVED = {**ORDER, "shippingAddress": {**ORDER["shippingAddress"], "country": "ZZ"}}
TWIN = Message("twin", "m-1", ORDER)
RESEND = Message("resend", "m-2", ORDER)
ALL_FAULTS = (Decision.CRASH, Decision.LOST, Decision.REFUSED)
STEPS = ("ReserveInventory", "ChargePayment", "ArrangeShipping")


def _late(step: str, stop: Decision) -> Scenario:
    return Scenario(f"late {step} ({stop.value})", ORDER, stop=(step, stop), max_faults=0)


SUITE: list[Scenario] = [
    # A task's late commit at every point of the Reconciler's claim, compensations, record, announce and release.
    *[_late(step, Decision.TIMEOUT_LATE) for step in STEPS],
    _late("ChargePayment", Decision.ABORT_LATE),
    # The Reconciler crashes after any of its calls, and the event is delivered again.
    Scenario("crash and redelivery", ORDER, stop=("ChargePayment", Decision.ABORT), explored=frozenset({"reconciler"})),
    # The event and the sweep reconcile the same execution.
    Scenario("event and sweep", ORDER, stop=("ChargePayment", Decision.ABORT), explored=frozenset({"reconciler"}),
             sweep_at_stop=True, max_faults=0),
    # The Redriver and an operator's `ff-ops failures redrive` send the same record back; either may crash between
    # its send and its delete.
    Scenario("redriver and operator", ORDER, stop=("ChargePayment", Decision.TIMEOUT), setup_reconciled=True,
             explored=frozenset({"redriver", "operator"}), operator=True,
             fault_calls=("sqs.send_message",)),
    # A late SQS duplicate of the original message, and a producer's resend, arriving at any point of the
    # Reconciler's work (their first step interleaved; what follows it runs after).
    Scenario("late duplicate", ORDER, stop=("ReserveInventory", Decision.TIMEOUT), arrivals=(TWIN,),
             explored=frozenset({"reconciler", "twin"}), max_faults=0, arrival_steps=1),
    Scenario("producer resend", ORDER, stop=("ChargePayment", Decision.TIMEOUT), arrivals=(RESEND,),
             explored=frozenset({"reconciler", "resend"}), max_faults=0, arrival_steps=1),
    # The failure tail stopped while its record or its alert is in flight (an order nobody can ship).
    Scenario("abort in HandleFailure", UNSERVED, stop=("HandleFailure", Decision.ABORT_LATE), max_faults=0),
    Scenario("abort in NotifyFailure", UNSERVED, stop=("NotifyFailure", Decision.ABORT_LATE), max_faults=0),
    Scenario("abort in ClaimFailure", UNSERVED, stop=("ClaimFailure", Decision.ABORT_LATE), max_faults=0),
]


def _wide(scenario: Scenario, faults: int) -> Scenario:
    return dataclasses.replace(scenario, max_faults=faults, reconciler_faults=ALL_FAULTS, redrive_faults=ALL_FAULTS,
                               fault_calls=(), arrival_steps=None, redriver_runs=4)


def wide(faults: int = 1) -> list[Scenario]:
    """`make wide`: every suite scenario with `faults` faults of every kind on any healer call, and more."""
    return [
        *[_wide(s, faults) for s in SUITE],
        *[_wide(_late(step, Decision.ABORT_LATE), faults) for step in ("ReserveInventory", "ArrangeShipping")],
        *[dataclasses.replace(_late(step, Decision.TIMEOUT_LATE), name=f"late {step} call by call",
                              late_per_call=True) for step in STEPS],
        _wide(Scenario("late charge, event and sweep", ORDER, stop=("ChargePayment", Decision.TIMEOUT_LATE),
                       explored=frozenset({"reconciler", "late"}), sweep_at_stop=True), faults),
        _wide(Scenario("abort in RefundPayment", UNSERVED, stop=("RefundPayment", Decision.ABORT_LATE)), faults),
        _wide(Scenario("redriver, operator and the copies", ORDER, stop=("ChargePayment", Decision.TIMEOUT),
                       setup_reconciled=True, explored=frozenset({"redriver", "operator", "pipe", "copy"}),
                       operator=True), min(faults, 1)),
    ]


@dataclass(frozen=True)
class Defect:
    """A violation the explorer found: the books' rule it breaks, what its schedules share, and whether the code
    still has it (open: its test is a strict xfail; fixed: its test guards against its return)."""

    key: str
    reason: str
    rules: frozenset[str]
    markers: tuple[str, ...]  # a step every schedule showing it has one of (the late task, or the fault)
    open: bool = False

    def explains(self, finding: Finding, schedule: list[str]) -> bool:
        return finding.rule in self.rules and any(m in step for step in schedule for m in self.markers)


DEFECTS = [
    Defect("late-charge", "a ChargePayment invocation that outlives its execution's timeout or abort commits after "
           "the Reconciler's RefundPayment: a charge without a shipment or a refund",
           frozenset({"charged without a shipment or a refund"}), ("late ChargePayment(",)),
    Defect("copy-adopts-charge", "the redriven copy succeeds on the dead attempt's late charge: charge() adopts an "
           "existing CHARGED row without comparing its attempt", frozenset({"shipped without its own charge"}),
           ("late ChargePayment(",)),
    Defect("late-claim", "a late ReserveInventory's delivery claim (a PutItem) replaces the row the Reconciler "
           "wrote, and the dead execution then claims the order: stock held, the ledger ACTIVE, the redriven copy "
           "absorbed as a duplicate, the message lost",
           frozenset({"lost", "stock held for an order that did not ship", "order held by an attempt nobody runs",
                      "stock does not add up", "recorded twice", "in two places", "announced twice"}),
           ("late ReserveInventory(",)),
    Defect("late-shipment", "an ArrangeShipping invocation that outlives its execution commits after the "
           "Reconciler's CancelShipment: a shipment stands whose charge was refunded and whose order is handed over",
           frozenset({"shipped without its own charge", "ledger disagrees with the shipment"}),
           ("late ArrangeShipping(",)),
    Defect("late-tail-claim", "an abort while ClaimFailure's write is in flight: landing after the Reconciler "
           "finished, a put would replace the row (its stage gone), so the next run (the sweep, a redelivery) would "
           "reconcile the execution again: a second record and a second announcement",
           frozenset({"recorded twice", "in two places", "announced twice"}), ("late ClaimFailure(",)),
]


def defect_of(finding: Finding, schedule: list[str]) -> Defect | None:
    return next((d for d in DEFECTS if d.explains(finding, schedule)), None)


def known_defect(finding: Finding, schedule: list[str]) -> str | None:
    """The key of the known defect a run's finding shows (HealingExplorer.explore's `classify`)."""
    defect = defect_of(finding, schedule)
    return defect.key if defect else None
