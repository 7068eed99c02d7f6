"""The order example under a sustained overload and a burst, StartExecution held to its quota, in both readings of
what a throttled start is to the pipe: 10 s of 10 times the quota's rate and 1 s of 100 times it at 1/1000 of
us-east-1's quota (a bucket of 1.3 refilled at 0.3 a second) here, 10 minutes and 30 s at 1/10000 under `make wide`
(demos/orders/load.py, SMALL and FULL).

The checks keep their own books: the quota is checked against the executions' start times with a sliding window, not
with the bucket's code; where the messages ended is read from the executions and the queues by the accounting.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from demos.orders.load import FULL, SMALL, Outcome, Scenario, run
from fire_and_forget.rehearsal.pipe import ThrottleReading
from fire_and_forget.rehearsal.quotas import Quota, TokenBucket, start_execution_quota
from tests.support.wide import WIDE

SUSTAINED, BURST, _ = FULL if WIDE else SMALL


@pytest.fixture(scope="module")
def outcomes(cloud_assembly: Path) -> dict[tuple[str, ThrottleReading], Outcome]:
    return {(scenario.name, reading): run(cloud_assembly, scenario, reading)
            for scenario in (SUSTAINED, BURST) for reading in ThrottleReading}


def starts_within_quota(started: list[datetime], quota: Quota) -> bool:
    """No window of the clock holds more starts than the bucket's size plus what it refilled meanwhile (a history's
    timestamps are whole milliseconds, cut: a window may look up to 1 ms shorter than it was)."""
    for i, first in enumerate(started):
        for j in range(i, len(started)):
            window = (started[j] - first).total_seconds() + 0.001
            if j - i + 1 > quota.bucket + quota.refill_per_second * window:
                return False
    return True


def test_a_bucket_starts_full_then_lets_through_its_refill_rate() -> None:
    quota = start_execution_quota("us-east-1").scaled(0.01)
    assert (quota.bucket, quota.refill_per_second) == (13, 3)  # the us-east-1 shape at 1/100
    start = datetime(2026, 12, 7)
    bucket = TokenBucket(quota, start)
    assert [bucket.take(start) for _ in range(14)] == [True] * 13 + [False]
    assert bucket.next_token(start) > start
    later = bucket.next_token(start)
    assert bucket.take(later) and not bucket.take(later)  # one token, a third of a second later
    assert (later - start).total_seconds() == pytest.approx(1 / 3, abs=1e-6)
    assert start_execution_quota("ap-northeast-1").bucket == 800  # the other Regions' smaller bucket
    assert start_execution_quota("us-east-1").scaled(0.0001).bucket == 1  # a bucket holds at least one call


@pytest.mark.parametrize("scenario", [SUSTAINED, BURST], ids=lambda s: s.name)
@pytest.mark.parametrize("reading", list(ThrottleReading), ids=lambda r: r.name)
def test_every_order_ends_in_one_place_and_the_starts_keep_to_the_quota(
        outcomes: dict[tuple[str, ThrottleReading], Outcome], scenario: Scenario, reading: ThrottleReading) -> None:
    outcome = outcomes[scenario.name, reading]
    result = outcome.result
    assert result.messages == round(scenario.scale * 300 * scenario.multiple * scenario.seconds)
    assert result.quiet and result.ledger.balanced  # none lost, none in two places, every failure announced once
    assert starts_within_quota(result.started_at, outcome.quota)
    assert result.executions == result.places["succeeded"]  # no duplicate start: one execution per started order


@pytest.mark.parametrize("scenario", [SUSTAINED, BURST], ids=lambda s: s.name)
def test_when_the_pipe_retries_throttled_starts_every_order_succeeds_once_the_backlog_drains(
        outcomes: dict[tuple[str, ThrottleReading], Outcome], scenario: Scenario) -> None:
    result = outcomes[scenario.name, ThrottleReading.RETRIED].result
    assert result.places == {"succeeded": result.messages}
    assert result.usage.transitions == 3 * result.messages  # throttling costs no transition
    # The backlog drains at the refill rate: the last order starts about (orders - bucket) / rate after the first.
    quota = outcomes[scenario.name, ThrottleReading.RETRIED].quota
    span = (result.started_at[-1] - result.started_at[0]).total_seconds()
    assert span == pytest.approx((result.messages - quota.bucket) / quota.refill_per_second, abs=2)


@pytest.mark.parametrize("scenario", [SUSTAINED, BURST], ids=lambda s: s.name)
def test_when_throttles_count_as_receives_the_redriver_brings_back_what_reached_the_source_dlq(
        outcomes: dict[tuple[str, ThrottleReading], Outcome], scenario: Scenario) -> None:
    result = outcomes[scenario.name, ThrottleReading.COUNTED].result
    # Each throttled receive keeps the message in flight for the visibility timeout (300 s); after five receives SQS
    # moves it to the source DLQ, and the Redriver's next run sends it back, paced, as a copy that then starts.
    returned = [fate for fate in result.ledger.fates.values() if fate.redrives]
    assert result.throttled > 0 and returned
    assert all(fate.place.value == "succeeded" and len(fate.copies) == fate.redrives for fate in returned)
    assert max(fate.redrives for fate in returned) <= 3  # HealingPolicy.max_attempts, the budget they share
    assert result.slowest_seconds >= 5 * 300  # at least the five receives it took to reach the source DLQ
    # The pipe retrying instead: nothing reaches the source DLQ, nothing is sent back.
    assert not any(fate.redrives for fate in outcomes[scenario.name, ThrottleReading.RETRIED]
                   .result.ledger.fates.values())


@pytest.mark.parametrize("scenario", [SUSTAINED, BURST], ids=lambda s: s.name)
@pytest.mark.parametrize("reading", list(ThrottleReading), ids=lambda r: r.name)
def test_no_order_waits_for_a_person_because_of_load_alone(
        outcomes: dict[tuple[str, ThrottleReading], Outcome], scenario: Scenario, reading: ThrottleReading) -> None:
    result = outcomes[scenario.name, reading].result
    assert result.places == {"succeeded": result.messages}
    assert sum(fate.announcements for fate in result.ledger.fates.values()) == 0
