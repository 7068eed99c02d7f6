"""The throughput ceiling in AWS, from the documented default quotas and the measured transitions per order."""

from __future__ import annotations

from dataclasses import dataclass

from fire_and_forget.rehearsal import start_execution_quota

SFN_QUOTAS = "https://docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html"
PIPES_QUOTAS = "https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-quota.html"
LARGE_REGIONS = "us-east-1, us-west-2, eu-west-1"


@dataclass(frozen=True)
class RegionQuotas:
    """Default quotas of one class of region (token buckets: sustained refill rate, burst bucket size)."""

    regions: str
    start_execution_per_second: int
    start_execution_burst: int
    transitions_per_second: int
    transitions_burst: int


def _region_class(regions: str, region: str) -> RegionQuotas:
    start = start_execution_quota(region)
    return RegionQuotas(regions, int(start.refill_per_second), int(start.bucket), 1_500, 5_000)


# Standard workflows, per account and region, as the Step Functions quotas page (SFN_QUOTAS) gives them: StartExecution
# from the rehearsal's own model of it (fire_and_forget.rehearsal.quotas), state transitions here. The page also says
# new accounts start with reduced state-transition quotas that AWS raises with usage.
QUOTAS = (_region_class(LARGE_REGIONS, "us-east-1"), _region_class("other regions", "ap-northeast-1"))
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
