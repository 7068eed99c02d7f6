"""The quotas that decide what a burst does, as token buckets on the rehearsal's clock.

Step Functions throttles its API actions with token buckets
(https://docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html, "Quotas related to API action
throttling"): a bucket holds at most its size in tokens, each call takes one, a call that finds none is refused with
ThrottlingException, and tokens come back at the refill rate. StartExecution for Standard workflows has a bucket of
1,300 refilled at 300 per second in US East (N. Virginia), US West (Oregon) and Europe (Ireland), and of 800
refilled at 150 per second in the other Regions. The bucket starts full: an idle account absorbs a burst of its size
at once, then sustains the refill rate.

`scaled` divides the size and the rate by one factor so a laptop runs the same shape in fewer messages: 1/100 of
us-east-1 is a bucket of 13 refilled at 3 per second. The refill runs on the rehearsal's virtual clock
(fire_and_forget/rehearsal/clock.py), so an hour of overload runs in the time its work takes, and a loaded machine
throttles exactly what a quiet one does.

The pipe's StartExecution is held to a bucket (fire_and_forget/rehearsal/pipe.py). Lambda holds an account's
invocations in a Region to a number running at once, not to a bucket
(https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html: 1,000 concurrent executions by default;
https://docs.aws.amazon.com/lambda/latest/dg/lambda-concurrency.html): `Concurrency` and `Slots` model it, each
invocation holding a slot for its duration on the clock (fire_and_forget/rehearsal/lambda_runtime.py). A DynamoDB
partition serves a bucket of write units (`partition_write_quota`), which an invocation's transactions draw from per
item (fire_and_forget/rehearsal/transactions.py). SNS Publish and Lambda's scaling rate (1,000 execution environments
every 10 seconds per function) are not modelled.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from datetime import datetime, timedelta

SERVICE_QUOTAS_PAGE = "https://docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html"
LAMBDA_QUOTAS_PAGE = "https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html"
PARTITION_PAGE = "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/warm-throughput-scenarios.html"
# Where StartExecution (Standard) has the larger bucket; everywhere else has the smaller.
LARGE_BUCKET_REGIONS = frozenset({"us-east-1", "us-west-2", "eu-west-1"})
# A token is whole: floating-point refill must not leave 0.9999999 where the clock says 1.
_WHOLE = 1 - 1e-9


@dataclass(frozen=True)
class Quota:
    """A token bucket's shape: at most `bucket` calls at once, `refill_per_second` sustained."""

    name: str
    bucket: float
    refill_per_second: float
    source: str

    def scaled(self, factor: float) -> Quota:
        """The same shape `factor` times as large (0.01: a hundredth); a bucket holds at least one call."""
        return Quota(_scaled_name(self.name, factor), max(1.0, self.bucket * factor), self.refill_per_second * factor,
                     self.source)


def start_execution_quota(region: str | None = None) -> Quota:
    """StartExecution's default bucket for Standard workflows in `region` (None: the smaller bucket of the Regions
    without the larger one, the least any Region has)."""
    if region in LARGE_BUCKET_REGIONS:
        return Quota(f"StartExecution (Standard), {region}", 1300, 300, SERVICE_QUOTAS_PAGE)
    return Quota(f"StartExecution (Standard), {region or 'other Regions'}", 800, 150, SERVICE_QUOTAS_PAGE)


class TokenBucket:
    """A quota's bucket, full at `start`, refilled continuously as the clock moves."""

    def __init__(self, quota: Quota, start: datetime) -> None:
        self.quota = quota
        self._tokens = quota.bucket
        self._at = start
        self.taken = 0
        self.refused = 0

    def tokens(self, now: datetime) -> float:
        elapsed = max(0.0, (now - self._at).total_seconds())
        return min(self.quota.bucket, self._tokens + elapsed * self.quota.refill_per_second)

    def has(self, now: datetime, tokens: float = 1) -> bool:
        """Whether a call that costs `tokens` would be let through at `now` (nothing is taken)."""
        return self.tokens(now) >= tokens * _WHOLE

    def take(self, now: datetime, tokens: float = 1) -> bool:
        """One call at `now` that costs `tokens`: True, and that many tokens less, if the bucket has them; False
        (throttled) otherwise."""
        held = self.tokens(now)
        self._at = max(self._at, now)
        if held < tokens * _WHOLE:
            self._tokens = held
            self.refused += 1
            return False
        self._tokens = max(0.0, held - tokens)
        self.taken += 1
        return True

    def next_token(self, now: datetime) -> datetime:
        """The first moment at or after `now` when a call would be let through, to the next microsecond up."""
        missing = 1 - self.tokens(now)
        if missing <= 1 - _WHOLE:
            return now
        return now + timedelta(microseconds=math.ceil(missing / self.quota.refill_per_second * 1e6))


@dataclass(frozen=True)
class Concurrency:
    """At most `limit` invocations running at once, account-wide in a Region."""

    name: str
    limit: int
    source: str

    def scaled(self, factor: float) -> Concurrency:
        """The same limit `factor` times as large, rounded down; at least one invocation runs."""
        return Concurrency(_scaled_name(self.name, factor), max(1, math.floor(self.limit * factor + 1e-9)),
                           self.source)


def _scaled_name(name: str, factor: float) -> str:
    if factor <= 0:
        raise ValueError(f"a quota's scale is positive, not {factor}")
    return f"{name} x{factor:g}"


def partition_write_quota() -> Quota:
    """What one DynamoDB partition serves: 1,000 write units a second, on-demand or provisioned alike
    (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/warm-throughput-scenarios.html, "each partition
    is limited to 1,000 write units per second and 3,000 read units per second"; a hot key's writes all go to one).
    The bucket holds one second of it."""
    return Quota("DynamoDB partition writes", 1000, 1000, PARTITION_PAGE)


def lambda_concurrency_quota() -> Concurrency:
    """Lambda's default concurrent executions of an account in a Region (the same in every Region)."""
    return Concurrency("Lambda concurrent executions", 1000, LAMBDA_QUOTAS_PAGE)


class Slots:
    """A concurrency limit on the clock: an invocation takes a slot at its start and holds it for `seconds`; one that
    finds every slot held is refused (Lambda's 429 TooManyRequestsException). Thread-safe: executions invoke from
    their own threads."""

    def __init__(self, concurrency: Concurrency, seconds: float) -> None:
        if seconds <= 0:
            raise ValueError("an invocation that takes no time holds no slot: give it a duration")
        self.concurrency = concurrency
        self.seconds = seconds
        self._ends: list[datetime] = []
        self._lock = threading.Lock()
        self.taken = 0
        self.refused = 0
        self.peak = 0

    def take(self, now: datetime) -> bool:
        """One invocation starting at `now`: True if a slot was free (it is held until now + seconds)."""
        with self._lock:
            self._ends = [end for end in self._ends if end > now]
            if len(self._ends) >= self.concurrency.limit:
                self.refused += 1
                return False
            self._ends.append(now + timedelta(seconds=self.seconds))
            self.taken += 1
            self.peak = max(self.peak, len(self._ends))
            return True
