"""`status`'s self-healing part: the failure DLQ split by what each record waits for, and what healed by itself.

"Healed automatically" is the sum, over the window, of the two counts the healing functions publish with Powertools
(fire_and_forget/healing/telemetry.py): ExecutionsReconciled and FailuresAutoRedriven, dimension `service` =
`<PipelineName>-healing`, in the workflow's metrics namespace. No output names that namespace, so ff-ops finds the
metrics by name and dimension with ListMetrics, then sums them with GetMetricData.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from fire_and_forget.cli.failures import list_failures
from fire_and_forget.cli.healing import waiting_for
from fire_and_forget.cli.stack import PIPELINE_NAME_OUTPUT, DeployedStack
from fire_and_forget.runtime.healing_policy import Disposition, HealingPolicy
from fire_and_forget.runtime.outputs import Output

if TYPE_CHECKING:
    from mypy_boto3_cloudwatch.type_defs import MetricDataQueryTypeDef, MetricTypeDef

    from fire_and_forget.cli.aws import Clients

# The counts of fire_and_forget/healing/telemetry.py, and the dimension value the construct gives them (healing.py).
RECONCILED = "ExecutionsReconciled"
AUTO_REDRIVEN = "FailuresAutoRedriven"
HEALING_SERVICE_SUFFIX = "-healing"
# status reads at most this many failure records to classify them (and says when there were more).
READ_LIMIT = 1000
_PERIOD = 300
PERSON_DISPOSITIONS = tuple(d for d in Disposition if d.needs_a_person)


@dataclass(frozen=True)
class Healed:
    """The healing functions' counts summed over the window; None when the stack names no pipeline."""

    service: str | None
    executions_reconciled: int | None
    failures_auto_redriven: int | None


@dataclass
class HealingStatus:
    """The failure DLQ's records by what they wait for (the Redriver's own classification), and what healed."""

    read: int
    truncated: bool
    unrecognized: int
    dispositions: Counter[Disposition] = field(default_factory=Counter)
    next_due: datetime | None = None  # the earliest due time among the records waiting for a retry
    healed: Healed = field(default_factory=lambda: Healed(None, None, None))

    @property
    def waiting_for_retry(self) -> int:
        return self.dispositions[Disposition.RETRY]

    @property
    def needing_a_person(self) -> int:
        return sum(self.dispositions[d] for d in PERSON_DISPOSITIONS)


def collect_healing(
    clients: Clients, stack: DeployedStack, policy: HealingPolicy, now: datetime, window: timedelta
) -> HealingStatus:
    listing = list_failures(clients.sqs, stack.output(Output.FAILURE_DLQ_URL), limit=READ_LIMIT,
                            key_field=stack.key_field)
    status = HealingStatus(listing.read, listing.truncated, len(listing.unrecognized))
    for record in listing.records:
        waiting = waiting_for(record, policy)
        assert waiting.disposition is not None  # a policy was given
        status.dispositions[waiting.disposition] += 1
        if waiting.disposition is Disposition.RETRY:
            due = waiting.due_at or now  # no failure time: the Redriver takes it at its next run
            status.next_due = due if status.next_due is None else min(status.next_due, due)
    pipeline = stack.optional(PIPELINE_NAME_OUTPUT)
    if pipeline is not None:
        status.healed = healed(clients, f"{pipeline}{HEALING_SERVICE_SUFFIX}", now, window)
    return status


def healed(clients: Clients, service: str, now: datetime, window: timedelta) -> Healed:
    """The two counts over the window; a metric never published (ListMetrics knows none) counts 0."""
    found = _metrics(clients, service)
    sums = _sums(clients, found, now, window) if found else {}
    return Healed(service, sums.get(RECONCILED, 0), sums.get(AUTO_REDRIVEN, 0))


def _metrics(clients: Clients, service: str) -> list[MetricTypeDef]:
    """Each namespace's ExecutionsReconciled / FailuresAutoRedriven with exactly the dimension Powertools adds."""
    found: list[MetricTypeDef] = []
    for page in clients.cloudwatch.get_paginator("list_metrics").paginate(
        Dimensions=[{"Name": "service", "Value": service}]
    ):
        for metric in page.get("Metrics", []):
            dimensions = [(d.get("Name"), d.get("Value")) for d in metric.get("Dimensions", [])]
            name, namespace = metric.get("MetricName"), metric.get("Namespace")
            if name in (RECONCILED, AUTO_REDRIVEN) and namespace and dimensions == [("service", service)]:
                found.append(
                    {"Namespace": namespace, "MetricName": name, "Dimensions": [{"Name": "service", "Value": service}]}
                )
    return found


def _sums(clients: Clients, metrics: list[MetricTypeDef], now: datetime, window: timedelta) -> dict[str, int]:
    queries: list[MetricDataQueryTypeDef] = [
        {"Id": f"h{index}", "MetricStat": {"Metric": metric, "Period": _PERIOD, "Stat": "Sum"}, "ReturnData": True}
        for index, metric in enumerate(metrics)
    ]
    sums: Counter[str] = Counter()
    for page in clients.cloudwatch.get_paginator("get_metric_data").paginate(
        MetricDataQueries=queries, StartTime=now - window, EndTime=now
    ):
        for result in page["MetricDataResults"]:
            name = metrics[int(result["Id"][1:])].get("MetricName", "")
            sums[name] += int(sum(result.get("Values", [])))
    return dict(sums)
