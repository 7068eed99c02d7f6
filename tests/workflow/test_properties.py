"""Property: over random batches and random fault schedules, once the system is quiet (the rehearsal clock advanced
past every cool-off), nothing is lost, nothing announced twice, the saga's books balance, and only what needs a
person is left for one: a fault that strikes a bounded number of times always heals by the automatic redrive."""

from __future__ import annotations

import logging
import random
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from demos.orders.invariants import saga_violations
from demos.orders.samples import OrderKind, make_order, seed_inventory
from fire_and_forget.rehearsal.accounting import Place, account, advance_past_retries
from fire_and_forget.rehearsal.faults import Fault, FaultKind
from fire_and_forget.rehearsal.rehearsal import Rehearsal
from tests.support.wide import examples

logging.getLogger("moto.stepfunctions.parser").setLevel(logging.CRITICAL)

TARGETS = ("ReserveInventory", "ChargePayment", "ArrangeShipping", "RefundPayment", "ReleaseInventory")
# What the faults above produce that a retry can clear (the saga's retriers list them): with a bounded schedule,
# none of these may be left in the failure DLQ once the clock has passed every cool-off.
HEALABLE = {"TransientError", "Lambda.ServiceException", "Lambda.TooManyRequestsException", "Lambda.Unknown",
            "Sandbox.Timedout", "States.Timeout"}
LAMBDA_FAULTS = (FaultKind.SERVICE_ERROR, FaultKind.THROTTLE, FaultKind.TIMEOUT, FaultKind.CRASH)

faults = st.one_of(
    st.builds(Fault, st.sampled_from(TARGETS), st.sampled_from(LAMBDA_FAULTS), st.integers(1, 6) | st.none()),
    st.builds(Fault, st.just("FailureDlq"), st.just(FaultKind.UNAVAILABLE), st.integers(1, 7) | st.none()),
    st.builds(Fault, st.just("AlertsTopic"), st.just(FaultKind.UNAVAILABLE), st.integers(1, 4)),
    st.builds(Fault, st.just("StartExecution"), st.just(FaultKind.START_REFUSED), st.integers(1, 6) | st.none()),
)


@settings(max_examples=examples(6), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture],
          phases=[Phase.explicit, Phase.reuse, Phase.generate])  # shrinking re-deploys per step: too slow
@given(
    kinds=st.lists(st.sampled_from(list(OrderKind)), min_size=1, max_size=6),
    schedule=st.lists(faults, max_size=3),
    duplicates=st.integers(0, 2),
    seed=st.integers(0, 10_000),
)
def test_nothing_lost_nothing_announced_twice_books_balance(
    cloud_assembly: Path, kinds: list[OrderKind], schedule: list[Fault], duplicates: int, seed: int
) -> None:
    with Rehearsal.start(cloud_assembly) as aws:
        seed_inventory(aws.dynamodb, aws.outputs["InventoryTableName"])
        for fault in schedule:
            aws.faults.add(fault)
        aws.pipe.duplicate_next = duplicates
        rng = random.Random(seed)
        bodies = {}
        for number, kind in enumerate(kinds, start=1):
            sample = make_order(kind, number, rng)
            bodies[aws.send(sample.body)] = sample.body

        aws.run()
        advance_past_retries(aws)

        ledger = account(aws, list(bodies))
        assert ledger.lost == [] and ledger.in_two_places == []
        assert ledger.announced_twice == [] and ledger.unannounced_failures == []
        assert ledger.announced_successes == []
        assert saga_violations(aws, ledger, bodies) == []
        # Quiet: nothing waits for an automatic retry, and a transient failure outlasts the automatic attempts only
        # when a fault of the schedule never stops (times=None).
        left = {m: fate for m, fate in ledger.fates.items() if fate.place is Place.FAILURE_DLQ}
        assert not [m for m, fate in ledger.fates.items() if fate.place is Place.WAITING]
        endless = any(fault.times is None for fault in schedule)
        healable = [m for m, fate in left.items() if fate.error in HEALABLE and not fate.manual_repair]
        assert endless or healable == [], {m: (left[m].error, left[m].redrives) for m in healable}
