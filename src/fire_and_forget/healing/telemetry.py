"""The healing functions' Logger and Metrics (names from POWERTOOLS_*: the workflow's namespace, service
`<pipeline>-healing`); the dashboard and the alarms read these metric names (fire_and_forget/construct/healing.py)."""

from __future__ import annotations

from aws_lambda_powertools.logging import Logger
from aws_lambda_powertools.metrics import Metrics, MetricUnit

logger = Logger()
metrics = Metrics()

RECONCILED = "ExecutionsReconciled"  # compensated and recorded by the reconciler
RECONCILED_MANUAL_REPAIR = "ReconciledNeedingManualRepair"  # ... of which a compensation failed
AUTO_REDRIVEN = "FailuresAutoRedriven"  # sent back to the source queue by the redriver
WAITING_FOR_RETRY = "FailuresWaitingForRetry"  # gauge: transient records with attempts left
# gauge: business errors, manual repairs, aborts, exhausted retries, records the redrive cannot resend
NEEDING_A_PERSON = "FailuresNeedingAPerson"
RETRIES_EXHAUSTED = "FailuresRetriesExhausted"  # gauge: transient records whose automatic attempts are spent
OVERDUE = "FailuresOverdue"  # gauge: waiting past due time plus one Redriver period, still in the failure DLQ
SOURCE_DLQ_RETURNED = "SourceDlqReturned"  # sent back from the source DLQ to the source queue by the redriver
SOURCE_DLQ_NEEDING_A_PERSON = "SourceDlqNeedingAPerson"  # gauge: seen there with automatic attempts spent


def count(metric: str, value: float = 1) -> None:
    metrics.add_metric(name=metric, unit=MetricUnit.Count, value=value)
