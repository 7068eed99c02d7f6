"""`failures list`/`show` and `status` on the offline deployment: what self-healing will do, and what it did."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import boto3
from typer.testing import CliRunner

from fire_and_forget.cli.app import app
from fire_and_forget.rehearsal.rehearsal import Rehearsal
from fire_and_forget.runtime.healing_policy import HealingPolicy
from tests.ops.healing_records import reconciliation, record_body
from tests.ops.helpers import failed_orders, ff_ops

WIDE = {"COLUMNS": "200"}  # a terminal wide enough that no line of ff-ops wraps


def _policy(aws: Rehearsal) -> HealingPolicy:
    return HealingPolicy.from_environment(json.loads(aws.outputs["HealingPolicy"]))


def _put_records(aws: Rehearsal, max_attempts: int) -> None:
    """A timed-out execution the Reconciler recorded (one automatic redrive so far), one whose automatic attempts are
    spent, and one whose compensation failed."""
    failed_at = datetime.now(UTC) - timedelta(seconds=30)
    for order_id, attempt, manual in (
        ("ord-timed-out", 1, False),
        ("ord-spent", max_attempts, False),
        ("ord-repair", None, True),
    ):
        aws.sqs.send_message(
            QueueUrl=aws.outputs["FailureDlqUrl"],
            MessageBody=record_body(
                order_id,
                error="States.Timeout",
                state="ChargePayment",
                failed_at=failed_at,
                attempt=attempt,
                manual_repair=manual,
                reconciliation=reconciliation("TIMED_OUT"),
            ),
        )


def test_failures_list_and_show_say_what_each_record_waits_for(aws: Rehearsal, cli: CliRunner) -> None:
    # Given a business failure of the saga, and three records the Reconciler wrote
    (out_of_stock,) = failed_orders(aws, 1, first=500)
    policy = _policy(aws)
    _put_records(aws, policy.max_attempts)

    # When the operator lists them and shows the timed-out one
    _, listing = ff_ops(cli, "failures", "list")
    human = cli.invoke(app, ["failures", "list"], env=WIDE)
    _, shown = ff_ops(cli, "failures", "show", "ord-timed-out")
    shown_human = cli.invoke(app, ["failures", "show", "ord-timed-out"], env=WIDE)

    # Then each says what it waits for, with the attempt count and, for the one to retry, when it goes back
    by_key = {f["key"]: f for f in listing["failures"]}
    assert {k: (f["disposition"], f["attempt"]) for k, f in by_key.items()} == {
        out_of_stock: ("needs-decision", 0),
        "ord-timed-out": ("waiting-for-retry", 1),
        "ord-spent": ("retries-exhausted", policy.max_attempts),
        "ord-repair": ("manual-repair", 0),
    }
    assert [k for k, f in by_key.items() if f["dueAt"] is not None] == ["ord-timed-out"]
    assert (
        by_key["ord-timed-out"]["reconciliation"]["via"] == "event" and by_key[out_of_stock]["reconciliation"] is None
    )
    assert human.exit_code == 0 and "waiting for" in human.stdout
    assert f"retry 2/{policy.max_attempts}" in human.stdout and "a person" in human.stdout
    assert f"{policy.max_attempts}/{policy.max_attempts} tried" in human.stdout and "repair" in human.stdout
    (detail,) = shown["failures"]
    assert detail["disposition"] == "waiting-for-retry" and detail["reconciliation"]["compensated"] == [
        "ReleaseInventory"
    ]
    assert "reconciliation" in shown_human.stdout and "via: event" in shown_human.stdout
    assert "automatic redrives" in shown_human.stdout


def _healing_counts(aws: Rehearsal, cli: CliRunner) -> dict[str, int]:
    _, status = ff_ops(cli, "status")
    healed = status["healing"]["healedAutomatically"]
    return {"reconciled": healed["executionsReconciled"], "redriven": healed["failuresAutoRedriven"]}


def test_status_splits_the_failure_dlq_and_counts_what_healed_by_itself(aws: Rehearsal, cli: CliRunner) -> None:
    # Given two business failures and the Reconciler's three records in the failure DLQ
    failed_orders(aws, 2, first=520)
    _put_records(aws, _policy(aws).max_attempts)
    before = _healing_counts(aws, cli)
    # ... and what the healing functions published (Powertools EMF: the workflow namespace, service <pipeline>-healing)
    cloudwatch = boto3.client("cloudwatch", region_name=aws.region)
    service = f"{aws.outputs['PipelineName']}-healing"
    # a minute ago: GetMetricData's EndTime is exclusive, and moto truncates it to the second
    now = datetime.now(UTC) - timedelta(minutes=1)
    for name, value in (("ExecutionsReconciled", 2), ("FailuresAutoRedriven", 3)):
        cloudwatch.put_metric_data(
            Namespace="FireAndForget",
            MetricData=[
                {
                    "MetricName": name,
                    "Dimensions": [{"Name": "service", "Value": service}],
                    "Value": value,
                    "Unit": "Count",
                    "Timestamp": now,
                }
            ],
        )
    # a count of another pipeline, and one outside the window, are not this one's
    cloudwatch.put_metric_data(
        Namespace="FireAndForget",
        MetricData=[
            {
                "MetricName": "FailuresAutoRedriven",
                "Dimensions": [{"Name": "service", "Value": "Other-healing"}],
                "Value": 50,
                "Unit": "Count",
                "Timestamp": now,
            },
            {
                "MetricName": "FailuresAutoRedriven",
                "Dimensions": [{"Name": "service", "Value": service}],
                "Value": 70,
                "Unit": "Count",
                "Timestamp": now - timedelta(hours=30),
            },
        ],
    )

    # When the operator asks for the status
    code, status = ff_ops(cli, "status")
    human = cli.invoke(app, ["status"], env=WIDE)

    # Then the records are split by what they wait for, and the window's counts are shown
    dlq = status["healing"]["failureDlq"]
    assert code == 0 and human.exit_code == 0
    assert (dlq["read"], dlq["waitingForRetry"], dlq["needingAPerson"]) == (5, 1, 4)
    assert dlq["byDisposition"] == {"retries-exhausted": 1, "manual-repair": 1, "needs-decision": 2,
                                    "cannot-redrive": 0}
    assert dlq["nextDueAt"] is not None and dlq["truncated"] is False
    after = _healing_counts(aws, cli)
    assert (after["reconciled"] - before["reconciled"], after["redriven"] - before["redriven"]) == (2, 3)
    assert status["healing"]["healedAutomatically"]["service"] == service
    assert "1 waiting for an automatic retry" in human.stdout and "4 needing a person" in human.stdout
    assert "Healed automatically in the last 24 h" in human.stdout
    # ... and the self-healing queues are listed with the others
    assert [q["outputKey"] for q in status["queues"]][-2:] == ["ReconcilerDlqUrl", "ScheduleDlqUrl"]
    assert "reconciler DLQ" in human.stdout and "schedule DLQ" in human.stdout


def test_a_stack_deployed_before_self_healing_shows_dashes_and_keeps_working(
    stack_before_healing: Rehearsal, cli: CliRunner
) -> None:
    aws = stack_before_healing
    (order_id,) = failed_orders(aws, 1, first=540)

    list_code, listing = ff_ops(cli, "failures", "list")
    human = cli.invoke(app, ["failures", "list"], env=WIDE)
    status_code, status = ff_ops(cli, "status")
    human_status = cli.invoke(app, ["status"], env=WIDE)

    assert (list_code, status_code, human.exit_code, human_status.exit_code) == (0, 0, 0, 0)
    (failure,) = listing["failures"]
    assert failure["key"] == order_id
    assert (failure["disposition"], failure["dueAt"], failure["attempt"]) == (None, None, 0)
    assert "waiting for" in human.stdout and "│ -" in human.stdout
    assert status["healing"] is None
    assert [q["outputKey"] for q in status["queues"]] == [
        "SourceQueueUrl",
        "SourceDlqUrl",
        "FailureDlqUrl",
        "FailureEventsQueueUrl",
        "EventTargetDlqUrl",
    ]
    assert "Self-healing: -" in human_status.stdout
