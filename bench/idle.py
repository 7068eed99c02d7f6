"""What the pipeline costs a month when no message comes: its schedules' work, measured, and its fixed resources.

Measured in the offline rehearsal: nothing is sent, the virtual clock is advanced one day, and every schedule fires
when its period elapses (the Redriver every 5 minutes, the Reconciler's sweep every 15, as the template says). Counted:
the schedules' invocations and each function's invocations, the DynamoDB request units they consumed (the meter,
`fire_and_forget.rehearsal.capacity`), the SQS requests and SNS publishes the functions themselves made
(`LambdaRuntime.invoking` tells them from the emulators' own polling). A month is 730 hours.

Not measured, from the template at list prices: the alarms (per metric each alarm evaluates), the composite alarm,
the dashboard, the customer managed KMS keys. The Lambda event source mapping's idle polling of its SQS queue is left
out: AWS documents that it long-polls, not how often an idle mapping asks, and bills those requests to SQS.

    uv run python bench/idle.py
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from fire_and_forget.rehearsal import LAMBDA_BILLED_MS, PRICES, Rehearsal, cost  # noqa: E402

HOURS_PER_MONTH = 730
DAY = 24 * 3600
# Monthly list prices of what idles (us-east-1, read with the cost model's prices).
SCHEDULER_INVOCATION = (1.00 / 1e6, "https://aws.amazon.com/eventbridge/pricing/")  # after the free tier
ALARM_METRIC_MONTH = (0.10, "https://aws.amazon.com/cloudwatch/pricing/")  # standard resolution, per metric
COMPOSITE_ALARM_MONTH = (0.50, "https://aws.amazon.com/cloudwatch/pricing/")
DASHBOARD_MONTH = (3.00, "https://aws.amazon.com/cloudwatch/pricing/")  # beyond the account's free three
KMS_KEY_MONTH = (1.00, "https://aws.amazon.com/kms/pricing/")


@dataclass
class Idle:
    """One idle virtual day, and the template's fixed resources."""

    hours: float
    firings: Counter[str] = field(default_factory=Counter)  # schedule -> times fired
    invocations: Counter[str] = field(default_factory=Counter)  # function (task) -> invocations
    sqs_requests: int = 0
    sns_publishes: int = 0
    dynamodb_write_units: float = 0.0
    dynamodb_read_units: float = 0.0
    alarm_metrics: int = 0
    composite_alarms: int = 0
    dashboards: int = 0
    kms_keys: int = 0

    @property
    def per_month(self) -> float:
        return HOURS_PER_MONTH / self.hours

    def schedules_usd(self) -> float:
        """The schedules' work a month: scheduler invocations, Lambda, and what the functions asked of SQS, SNS and
        DynamoDB."""
        invocations = sum(self.invocations.values())
        usd = (sum(self.firings.values()) * SCHEDULER_INVOCATION[0]
               + invocations * PRICES["lambda_request"].usd
               + invocations * cost.LAMBDA_MEMORY_GB * LAMBDA_BILLED_MS / 1000 * PRICES["lambda_gb_second"].usd
               + self.sqs_requests * PRICES["sqs_request"].usd
               + self.sns_publishes * PRICES["sns_publish"].usd
               + self.dynamodb_write_units * PRICES["dynamodb_write"].usd
               + self.dynamodb_read_units * PRICES["dynamodb_read"].usd)
        return usd * self.per_month

    def resources_usd(self) -> float:
        return (self.alarm_metrics * ALARM_METRIC_MONTH[0] + self.composite_alarms * COMPOSITE_ALARM_MONTH[0]
                + self.dashboards * DASHBOARD_MONTH[0] + self.kms_keys * KMS_KEY_MONTH[0])


def _alarm_metrics(properties: dict[str, Any]) -> int:
    """CloudWatch bills an alarm per metric it evaluates: one, or each MetricStat of a metric-math alarm."""
    metrics = properties.get("Metrics")
    return sum(1 for query in metrics if "MetricStat" in query) if metrics else 1


def fixed_resources(template: dict[str, Any], idle: Idle) -> None:
    for resource in template.get("Resources", {}).values():
        kind, properties = resource.get("Type"), resource.get("Properties", {})
        if kind == "AWS::CloudWatch::Alarm":
            idle.alarm_metrics += _alarm_metrics(properties)
        elif kind == "AWS::CloudWatch::CompositeAlarm":
            idle.composite_alarms += 1
        elif kind == "AWS::CloudWatch::Dashboard":
            idle.dashboards += 1
        elif kind == "AWS::KMS::Key":
            idle.kms_keys += 1


def measure(assembly: Path, hours: float = 24.0) -> Idle:
    from moto.sns.models import SNSBackend
    from moto.sqs.models import SQSBackend

    idle = Idle(hours=hours)
    with Rehearsal.start(assembly) as aws:
        aws.run_until_quiet()  # whatever the deployment itself set off, before the day starts
        counted = {"sqs": 0, "sns": 0}
        patched: list[tuple[type, str, Any]] = []

        def count(backend: type, name: str, service: str) -> None:
            original = getattr(backend, name)

            def counting(self: Any, *args: Any, **kwargs: Any) -> Any:
                if aws.runtime.invoking() is not None:
                    counted[service] += 1
                return original(self, *args, **kwargs)

            patched.append((backend, name, original))
            setattr(backend, name, counting)

        for name in ("receive_message", "send_message", "delete_message", "change_message_visibility",
                     "get_queue_attributes", "send_message_batch", "delete_message_batch"):
            count(SQSBackend, name, "sqs")
        count(SNSBackend, "publish", "sns")
        units, first = aws.capacity.snapshot(), len(aws.runtime.invocations)
        try:
            firings = aws.advance(hours * 3600)
        finally:
            for backend, name, original in patched:
                setattr(backend, name, original)
        spent = aws.capacity.snapshot() - units
        idle.firings.update(firing.schedule for firing in firings)
        idle.invocations.update(invocation.task for invocation in aws.runtime.invocations[first:])
        idle.sqs_requests, idle.sns_publishes = counted["sqs"], counted["sns"]
        idle.dynamodb_write_units, idle.dynamodb_read_units = spent.write, spent.read
        template = aws.assembly.template
    fixed_resources(template, idle)
    return idle


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--assembly", type=Path, default=ROOT / "cdk.out")
    parser.add_argument("--hours", type=float, default=24.0)
    args = parser.parse_args(argv)
    idle = measure(args.assembly, args.hours)
    print(json.dumps({"firings": idle.firings, "invocations": idle.invocations, "sqs_requests": idle.sqs_requests,
                      "sns_publishes": idle.sns_publishes, "dynamodb": [idle.dynamodb_write_units,
                                                                        idle.dynamodb_read_units],
                      "schedules_usd_per_month": round(idle.schedules_usd(), 4),
                      "resources_usd_per_month": round(idle.resources_usd(), 2)}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
