"""The alarms' evaluator (tests/support/alarms.py) on an alarm of several periods, as CloudWatch evaluates one whose
DatapointsToAlarm equals its EvaluationPeriods: ALARM only when every one of the last periods breaches. The
throttling alarms are of that kind (three periods in a row: src/fire_and_forget/construct/monitoring.py), so that a
burst the queue absorbs leaves them OK and throttling that lasts trips them
(https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/AlarmThatSendsEmail.html, "Evaluating an alarm")."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import boto3
import pytest
from moto import mock_aws

from fire_and_forget.construct.monitoring import SUSTAINED_PERIODS
from tests.support.alarms import Alarm, evaluate

PERIOD = 300
NOW = datetime.now(UTC).replace(microsecond=0)


@pytest.fixture
def account() -> Iterator[Any]:
    with mock_aws():
        yield SimpleNamespace(cloudwatch=boto3.client("cloudwatch", region_name="us-east-1"))


def throttled(account: Any, periods_ago: list[int]) -> None:
    """One throttled event in each period that ended `n` periods before now."""
    account.cloudwatch.put_metric_data(Namespace="AWS/EventBridge/Pipes", MetricData=[
        {"MetricName": "ExecutionThrottled", "Dimensions": [{"Name": "PipeName", "Value": "orders"}], "Value": 1,
         "Timestamp": NOW - timedelta(seconds=PERIOD * n + PERIOD / 2)} for n in periods_ago])


def sustained_alarm() -> Alarm:
    query = {"Id": "m1", "MetricStat": {"Metric": {"Namespace": "AWS/EventBridge/Pipes",
                                                   "MetricName": "ExecutionThrottled",
                                                   "Dimensions": [{"Name": "PipeName", "Value": "orders"}]},
                                        "Period": PERIOD, "Stat": "Sum"}}
    return Alarm("PipeExecutionThrottled", [query], "m1", PERIOD, 1.0, "GreaterThanOrEqualToThreshold",
                 "notBreaching", SUSTAINED_PERIODS)


@pytest.mark.parametrize(("periods_ago", "state"), [
    ([0], "OK"),  # a burst in the last period only
    ([0, 1], "OK"),  # two periods
    ([1, 2, 3], "OK"),  # three, but over before the last period
    ([0, 1, 2], "ALARM"),  # throttled in each of the last three
    ([0, 1, 2, 3, 4], "ALARM"),
], ids=["burst", "two periods", "over", "three in a row", "lasting"])
def test_an_alarm_of_several_periods_fires_only_when_each_breaches(account: Any, periods_ago: list[int],
                                                                   state: str) -> None:
    throttled(account, periods_ago)
    assert evaluate(account, sustained_alarm(), at=NOW).state == state
