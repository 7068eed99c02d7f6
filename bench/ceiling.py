"""The throughput ceiling in AWS, from the documented default quotas and the measured transitions per order."""

from __future__ import annotations

from dataclasses import dataclass

SFN_QUOTAS = "https://docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html"
PIPES_QUOTAS = "https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-quota.html"
LARGE_REGIONS = "us-east-1, us-west-2, eu-west-1"


@dataclass(frozen=True)
class RegionQuotas:
    """Default quotas of one class of region (token buckets: sustained refill rate, burst bucket size)."""

    regions: str
    start_execution_per_second: int
    start_execution_burst: int | None  # None: not quoted here; read it on the page
    transitions_per_second: int
    transitions_burst: int


# Standard workflows, per account and region, as the Step Functions quotas page (SFN_QUOTAS) gives them. The page
# also says new accounts start with reduced state-transition quotas that AWS raises with usage.
QUOTAS = (
    RegionQuotas(LARGE_REGIONS, 300, 1_300, 1_500, 5_000),
    RegionQuotas("other regions", 150, None, 1_500, 5_000),
)
PIPES_CONCURRENCY = 1_000  # concurrent pipe invocations per account


@dataclass(frozen=True)
class Ceiling:
    quotas: RegionQuotas
    transitions_per_order: float
    by_start: float
    by_transitions: float

    @property
    def orders_per_second(self) -> float:
        return min(self.by_start, self.by_transitions)

    @property
    def bound_by(self) -> str:
        return "StartExecution" if self.by_start <= self.by_transitions else "state transitions"


def ceiling(quotas: RegionQuotas, transitions_per_order: float, executions_per_order: float = 1.0) -> Ceiling:
    """ceiling = min(StartExecution rate / executions per order, transitions rate / transitions per order)."""
    return Ceiling(
        quotas,
        transitions_per_order,
        by_start=quotas.start_execution_per_second / executions_per_order,
        by_transitions=quotas.transitions_per_second / transitions_per_order,
    )
