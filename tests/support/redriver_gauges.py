"""What the Redriver's gauges count, recomputed by its own rule (HealingPolicy.classify) from the failure DLQ, and a
rehearsal step that leaves one record overdue: for the alarms' tests (tests/workflow/test_alarm_metrics.py)."""

from __future__ import annotations

import json
import random
from datetime import timedelta

from demos.orders.samples import OrderKind, make_order
from fire_and_forget.cli.healing import waiting_for
from fire_and_forget.rehearsal.faults import Fault, FaultKind
from fire_and_forget.rehearsal.rehearsal import Rehearsal
from fire_and_forget.runtime.healing_policy import Disposition, HealingPolicy
from fire_and_forget.runtime.records import FailureRecord, parse

REDRIVE_PERIOD_SECONDS = 300  # ff:healing redriveEveryMinutes' default
CALLS_PER_EXECUTION = 5  # the transient retrier's 4 retries and the first call: that many faults exhaust them


def needing_a_person(aws: Rehearsal) -> int:
    """What the Redriver counts in the failure DLQ: records whose disposition needs a person
    (src/fire_and_forget/cli/healing.py's rule, the Redriver's own)."""
    policy = _policy(aws)
    return sum(1 for record in _records(aws) if waiting_for(record, policy).disposition is not Disposition.RETRY)


def overdue(aws: Rehearsal) -> int:
    """What the Redriver counts as overdue at the rehearsal's now: records waiting for a retry whose due time plus one
    Redriver period has passed."""
    policy, period = _policy(aws), timedelta(seconds=REDRIVE_PERIOD_SECONDS)
    return sum(1 for record in _records(aws) if policy.classify(record).overdue(aws.now(), period))


def keep_one_overdue(aws: Rehearsal) -> int:
    """A transient failure whose resend the source queue refuses (its key or policy changed, say): the Redriver tries
    on every run and the record stays, past its due time. Returns how many records the Redriver last saw overdue."""
    sample = make_order(OrderKind.VALID, 90, random.Random(90))
    aws.faults.add(Fault("ArrangeShipping", FaultKind.SERVICE_ERROR, times=CALLS_PER_EXECUTION,
                         key=sample.order_id))
    aws.send(sample.body)
    aws.run()
    aws.faults.add(Fault("SourceQueue", FaultKind.UNAVAILABLE, key=sample.order_id))
    for _ in range(4):  # bounded: the cool-off of a first attempt is at most one period, then one more period
        aws.advance(REDRIVE_PERIOD_SECONDS)
        if overdue(aws):
            break
    # The record may have become overdue after the Redriver's run in that period and before its end: one more
    # period, and the Redriver's run (later than the moment it was seen overdue) counts it too.
    aws.advance(REDRIVE_PERIOD_SECONDS)
    return overdue(aws)


def _policy(aws: Rehearsal) -> HealingPolicy:
    return HealingPolicy.from_environment(json.loads(aws.outputs["HealingPolicy"]))


def _records(aws: Rehearsal) -> list[FailureRecord]:
    parsed = [parse(message) for message in aws.messages("FailureDlqUrl")]  # type: ignore[arg-type]
    return [record for record in parsed if isinstance(record, FailureRecord)]
