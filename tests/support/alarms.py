"""Evaluating CloudWatch alarms from the synthesized template against the metric data a rehearsal published.

moto stores alarms but does not evaluate them, so this does what CloudWatch would: bind an alarm's dimensions to
the rehearsal's physical resources, fetch its data with its own statistic and period, compute its metric math,
and compare with its threshold, treating missing data as the alarm says.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from fire_and_forget.rehearsal.rehearsal import Rehearsal
from tests.support.template import of_type


@dataclass(frozen=True)
class Alarm:
    """One AWS::CloudWatch::Alarm of the template, its dimensions bound to the rehearsal's resources."""

    name: str  # the construct id: ExecutionsFailed, ReserveInventoryThrottles, ...
    queries: list[dict[str, Any]]  # GetMetricData MetricStat queries
    expression: str  # the returned value: a query id or a metric-math expression
    period: int
    threshold: float
    comparison: str
    treat_missing: str
    periods: int = 1  # EvaluationPeriods, every one of which must breach (DatapointsToAlarm equals it)


def alarms(aws: Rehearsal) -> dict[str, Alarm]:
    """Every metric alarm of the deployed template (composite alarms evaluate alarms, not metrics)."""
    found = {}
    for logical_id, resource in of_type(aws.assembly.template, "AWS::CloudWatch::Alarm").items():
        props = resource["Properties"]
        # N periods, every one breaching (N of N): what lets N consecutive windows stand for the evaluation.
        periods = int(props["EvaluationPeriods"])
        assert int(props.get("DatapointsToAlarm", periods)) == periods, logical_id
        metrics = props.get("Metrics") or [{"Id": "m1", "ReturnData": True, "MetricStat": {
            "Metric": {key: props[key] for key in ("Namespace", "MetricName", "Dimensions")},
            "Stat": props["Statistic"], "Period": props["Period"]}}]
        (returned,) = [m for m in metrics if m.get("ReturnData", True)]
        stats = [m for m in metrics if "MetricStat" in m]
        queries = [{"Id": m["Id"], "MetricStat": _bound(aws, m["MetricStat"])} for m in stats]
        name = logical_id.removeprefix("PipelineMonitoring")[:-8]  # CDK appends an 8-character hash to the logical id
        found[name] = Alarm(name, queries, returned.get("Expression", returned["Id"]),
                            int(stats[0]["MetricStat"]["Period"]), float(props["Threshold"]),
                            props["ComparisonOperator"], props.get("TreatMissingData", "missing"), periods)
    return found


def create_in_moto(aws: Rehearsal, alarm: Alarm) -> None:
    """The alarm as PutMetricAlarm creates it: the deployment leaves alarms out (moto's CloudFormation has no
    AWS::CloudWatch::Alarm), and this module wants to show what moto then does with them."""
    metrics = [{**query, "ReturnData": query["Id"] == alarm.expression} for query in alarm.queries]
    if all(query["Id"] != alarm.expression for query in alarm.queries):
        metrics.append({"Id": "result", "Expression": alarm.expression, "ReturnData": True})
    aws.cloudwatch.put_metric_alarm(AlarmName=alarm.name, Metrics=metrics, EvaluationPeriods=alarm.periods,
                                    DatapointsToAlarm=alarm.periods,
                                    Threshold=alarm.threshold, ComparisonOperator=alarm.comparison,
                                    TreatMissingData=alarm.treat_missing)


def _bound(aws: Rehearsal, metric_stat: dict[str, Any]) -> dict[str, Any]:
    dimensions = [{"Name": d["Name"], "Value": _physical(aws, d["Value"])}
                  for d in metric_stat["Metric"].get("Dimensions", [])]
    return {**metric_stat, "Metric": {**metric_stat["Metric"], "Dimensions": dimensions}}


def _physical(aws: Rehearsal, value: Any) -> str:
    referenced = value.get("Ref") if isinstance(value, dict) else None
    if aws.assembly.template["Resources"].get(referenced, {}).get("Type") == "AWS::Pipes::Pipe":
        return aws.outputs["PipeName"]  # the pipe is the rehearsal's own (fire_and_forget.rehearsal.pipe), not moto's
    return str(aws.stack.resolve(value))


COMPARE: dict[str, Callable[[float, float], bool]] = {
    "GreaterThanOrEqualToThreshold": operator.ge, "GreaterThanThreshold": operator.gt,
    "LessThanThreshold": operator.lt, "LessThanOrEqualToThreshold": operator.le,
}


@dataclass(frozen=True)
class Evaluation:
    state: str  # ALARM, OK or INSUFFICIENT_DATA
    value: float | None  # what the alarm compares with its threshold
    series: dict[str, float | None]  # each metric's statistic over the period, by the alarm's metric id


def evaluate(aws: Rehearsal, alarm: Alarm, at: datetime | None = None) -> Evaluation:
    """What the alarm would say at `at` (now by default): each of its periods, the last one ending then, evaluated;
    ALARM when every one breaches, and the value and series of the last."""
    end = (at or datetime.now(UTC)) + timedelta(seconds=1)
    earlier = [_one_period(aws, alarm, end - timedelta(seconds=alarm.period * n)) for n in range(1, alarm.periods)]
    last = _one_period(aws, alarm, end)
    if last.state == "ALARM" and any(e.state != "ALARM" for e in earlier):
        return Evaluation("OK", last.value, last.series)
    return last


def _one_period(aws: Rehearsal, alarm: Alarm, end: datetime) -> Evaluation:
    """The alarm's verdict on its period that ends at `end`."""
    response = aws.cloudwatch.get_metric_data(MetricDataQueries=alarm.queries, StartTime=end - timedelta(
        seconds=alarm.period), EndTime=end)
    series = {result["Id"]: (result["Values"][0] if result["Values"] else None)
              for result in response["MetricDataResults"]}
    value = metric_math(alarm.expression, series)
    if value is None:
        return Evaluation({"breaching": "ALARM", "notBreaching": "OK"}.get(alarm.treat_missing, "INSUFFICIENT_DATA"),
                          None, series)
    return Evaluation("ALARM" if COMPARE[alarm.comparison](value, alarm.threshold) else "OK", value, series)


_ARITHMETIC: dict[type, Callable[[float, float], float]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}
_COMPARISONS: dict[type, Callable[[float, float], bool]] = {
    ast.GtE: operator.ge, ast.Gt: operator.gt, ast.LtE: operator.le, ast.Lt: operator.lt, ast.Eq: operator.eq}


def metric_math(expression: str, series: dict[str, float | None]) -> float | None:
    """The CloudWatch metric-math subset the alarms use, on one period's values (None: no data)."""

    def value(node: ast.expr) -> float | None:
        match node:
            case ast.Constant(value=float() | int() as number):
                return float(number)
            case ast.Name(id=name):
                return series[name]
            case ast.Call(func=ast.Name(id="FILL"), args=[metric, ast.Constant(value=float() | int() as fill)]):
                found = value(metric)
                return float(fill) if found is None else found
            case ast.Call(func=ast.Name(id="IF"), args=[condition, then, otherwise]):
                return value(then) if value(condition) else value(otherwise)
            case ast.BinOp(left=left, op=op, right=right) if type(op) in _ARITHMETIC:
                a, b = value(left), value(right)
                if a is None or b is None or (isinstance(op, ast.Div) and b == 0):
                    return None
                return _ARITHMETIC[type(op)](a, b)
            case ast.Compare(left=left, ops=[op], comparators=[right]) if type(op) in _COMPARISONS:
                a, b = value(left), value(right)
                return None if a is None or b is None else float(_COMPARISONS[type(op)](a, b))
        raise ValueError(f"not metric math the alarms use: {ast.dump(node)}")

    return value(ast.parse(expression, mode="eval").body)
