"""Reading CloudWatch alarms out of a synthesized template (both forms CloudFormation has)."""

from __future__ import annotations

from typing import Any

from tests.support.template import one

ALARM = "AWS::CloudWatch::Alarm"


def alarm(template: dict[str, Any], alarm_id: str) -> tuple[str, dict[str, Any]]:
    logical_id, resource = one(template, ALARM, f"PipelineMonitoring{alarm_id}")
    props: dict[str, Any] = resource["Properties"]
    return logical_id, props


def metric_stats(props: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Metric id -> MetricStat, for both forms CloudFormation has (CDK writes Metrics once a metric has a label)."""
    if "Metrics" not in props:
        metric = {key: props[key] for key in ("Namespace", "MetricName", "Dimensions")}
        return {"m1": {"Metric": metric, "Stat": props["Statistic"], "Period": props["Period"]}}
    return {m["Id"]: m["MetricStat"] for m in props["Metrics"] if "MetricStat" in m}


def dimensions(metric_stat: dict[str, Any]) -> dict[str, Any]:
    return {d["Name"]: d["Value"] for d in metric_stat["Metric"].get("Dimensions", [])}
