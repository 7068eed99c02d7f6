"""The function's Logger and Metrics, created once per execution environment (names come from POWERTOOLS_*)."""

from __future__ import annotations

from aws_lambda_powertools.logging import Logger
from aws_lambda_powertools.metrics import Metrics, MetricUnit

logger = Logger()
metrics = Metrics()


def count(metric: str) -> None:
    """One occurrence of an outcome; flushed as EMF by the handler's log_metrics."""
    metrics.add_metric(name=metric, unit=MetricUnit.Count, value=1)
