"""`make smoke` against the offline deployment: the same code that checks a real stack, the rehearsal pumped
between its looks (instead of the sleep it does against AWS)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from typer.testing import CliRunner

import demos.orders.cli_smoke
import demos.orders.smoke
from demos.orders.cli_smoke import app as smoke_app
from fire_and_forget.rehearsal.deployment import ACCOUNT
from fire_and_forget.rehearsal.faults import Fault, FaultKind
from fire_and_forget.rehearsal.rehearsal import Rehearsal
from tests.ops.helpers import depth, failed_orders, forget_releases, smoke

RUN_ID = "0123456789ab"
FAST = ("--timeout", "60", "--poll-seconds", "0")


@pytest.fixture
def pumped(aws: Rehearsal, monkeypatch: pytest.MonkeyPatch) -> Rehearsal:
    """Each wait of the smoke run delivers what the pipe would and lets every execution finish."""
    monkeypatch.setattr(demos.orders.smoke, "pause", lambda _seconds: aws.run())
    monkeypatch.setattr(demos.orders.cli_smoke, "new_run_id", lambda: RUN_ID)
    return aws


@pytest.fixture
def hung(aws: Rehearsal, monkeypatch: pytest.MonkeyPatch) -> Iterator[Rehearsal]:
    """The valid order's ArrangeShipping hangs; the waits only hand messages over, they do not wait for the end."""

    def hand_over(_seconds: float) -> None:
        aws.drain()
        aws.runtime.hanging.wait(30)  # a loaded machine must not turn "stuck" into "never started"

    monkeypatch.setattr(demos.orders.smoke, "pause", hand_over)
    monkeypatch.setattr(demos.orders.cli_smoke, "new_run_id", lambda: RUN_ID)
    aws.faults.add(Fault("ArrangeShipping", FaultKind.HANG, key=f"smoke-{RUN_ID}-valid"))
    yield aws
    aws.faults.release()
    aws.run()
    forget_releases(aws)


def checks(document: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(c["case"], c["check"]): c for c in document["checks"]}


def sent_alert_ids(aws: Rehearsal) -> set[str]:
    from moto.sns.models import sns_backends

    topic = sns_backends[ACCOUNT][aws.region].topics[aws.outputs["AlertsTopicArn"]]
    return {notification[0] for notification in topic.sent_notifications}


def smoke_skus(aws: Rehearsal) -> list[str]:
    return [item["sku"] for item in aws.items("InventoryTableName") if item["sku"].startswith("SMOKE-")]


def test_all_three_outcomes_pass_and_the_run_removes_what_it_created(pumped: Rehearsal, cli: CliRunner) -> None:
    # When the smoke runs against the deployment
    code, document = smoke(cli, "--stack", pumped.stack.name, *FAST)

    # Then every check passed, for each of the three orders
    assert code == 0, document["checks"]
    assert document["schema"] == "ff-ops/smoke/v1"
    assert document["passed"] is True and document["timedOut"] is False
    assert sorted(checks(document)) == sorted(
        [
            ("valid", "started"),
            ("valid", "outcome"),
            ("valid", "no failure record"),
            *[
                (case, name)
                for case in ("invalid", "compensated")
                for name in ("started", "outcome", "failure record", "alert", "compensations")
            ],
        ]
    )
    assert all(c["passed"] for c in document["checks"])
    found = checks(document)
    assert found[("invalid", "failure record")]["detail"].startswith("InvalidOrder in ReserveInventory")
    assert found[("compensated", "failure record")]["detail"].startswith("ShippingUnavailable in ArrangeShipping")
    assert found[("compensated", "compensations")]["detail"] == "CancelShipment > RefundPayment > ReleaseInventory"
    assert found[("invalid", "compensations")]["detail"] == "none (none owed)"
    statuses = {o["case"]: o["status"] for o in document["orders"]}
    assert statuses == {"valid": "SUCCEEDED", "invalid": "FAILED", "compensated": "FAILED"}
    # And the alerts it reports are messages the alerts topic really sent
    for case in ("invalid", "compensated"):
        assert found[(case, "alert")]["detail"].removeprefix("published, SNS message ") in sent_alert_ids(pumped)
    # And it removed what it created: its two failure records and its inventory item
    assert document["cleanup"]["failureRecordsDeleted"] == 2
    assert document["cleanup"]["inventorySkuRemoved"] is True and document["cleanup"]["left"] == []
    assert depth(pumped, "FailureDlqUrl") == (0, 0)
    assert smoke_skus(pumped) == []
    # And the valid order really shipped, the compensated one was refunded
    shipments = {item["orderId"]: item for item in pumped.items("ShipmentsTableName")}
    assert f"smoke-{RUN_ID}-valid" in shipments and f"smoke-{RUN_ID}-compensated" not in shipments
    payments = {item["pk"]: item for item in pumped.items("PaymentsTableName")}
    assert payments[f"ORDER#smoke-{RUN_ID}-compensated"]["status"] == "REFUNDED"


def test_prints_a_pass_fail_table_without_json(pumped: Rehearsal, cli: CliRunner) -> None:
    result = cli.invoke(smoke_app, FAST)

    assert result.exit_code == 0, result.output
    assert f"Smoke run {RUN_ID}" in result.output
    assert re.findall(r"│ (PASS|FAIL) +│", result.output) == ["PASS"] * 13
    assert "Smoke PASSED" in result.output
    # And while it waited, it said what it was waiting for
    assert re.search(r"\d+\.\d s  valid waiting for the pipe", result.output)  # elapsed time varies with load


def test_a_missing_alert_fails_the_run_with_the_failing_rows(pumped: Rehearsal, cli: CliRunner) -> None:
    # Given an alerts topic that refuses every publish
    pumped.faults.add(Fault("AlertsTopic", FaultKind.UNAVAILABLE))

    # When the smoke runs
    code, document = smoke(cli, *FAST)

    # Then it exits non-zero, and the rows that failed say what was missing
    assert code == 10
    assert document["passed"] is False
    found = checks(document)
    for case in ("invalid", "compensated"):
        assert found[(case, "alert")] == {
            "case": case,
            "check": "alert",
            "passed": False,
            "detail": "NotifyFailure did not complete",
        }
        assert found[(case, "outcome")]["passed"] is False
        assert found[(case, "failure record")]["passed"] is True  # HandleFailure ran before the alert
    assert all(c["passed"] for c in document["checks"] if c["case"] == "valid")
    # And it still removed its own failure records
    assert document["cleanup"]["failureRecordsDeleted"] == 2
    assert depth(pumped, "FailureDlqUrl") == (0, 0)


def test_a_stuck_order_fails_within_the_timeout(hung: Rehearsal, cli: CliRunner) -> None:
    # When the valid order's execution hangs in ArrangeShipping and the timeout is short
    # (the smoke test waits in real time, as against AWS: long enough for a loaded machine to reach the hang)
    code, document = smoke(cli, "--timeout", "8", "--poll-seconds", "0.2")

    # Then the run stops at the timeout, exits non-zero, and says where the order is stuck
    assert code == 10
    assert document["timedOut"] is True
    assert document["elapsedSeconds"] < 30
    outcome = checks(document)[("valid", "outcome")]
    assert outcome == {
        "case": "valid",
        "check": "outcome",
        "passed": False,
        "detail": "still RUNNING after 8 s, in ArrangeShipping",
    }
    # And it keeps its inventory item while an execution that may still need it runs, and says so
    assert document["cleanup"]["inventorySkuRemoved"] is False
    assert document["cleanup"]["left"][0].startswith(f"inventory item SMOKE-{RUN_ID.upper()}")
    assert smoke_skus(hung) == [f"SMOKE-{RUN_ID.upper()}"]


def test_never_deletes_failure_records_that_are_not_its_own(pumped: Rehearsal, cli: CliRunner) -> None:
    # Given a real failed order in the failure DLQ, a record that names another smoke run, and a foreign message
    failed_orders(pumped, 1)
    (real,) = pumped.messages("FailureDlqUrl")
    other_run = json.loads(real["Body"])
    other_run["record"]["messageAttributes"] = {
        "smokeRun": {"stringValue": "another-run", "stringListValues": [], "binaryListValues": [], "dataType": "String"}
    }
    dlq = pumped.outputs["FailureDlqUrl"]
    pumped.sqs.send_message(QueueUrl=dlq, MessageBody=json.dumps(other_run))
    pumped.sqs.send_message(QueueUrl=dlq, MessageBody="not a failure record")
    before = sorted(m["Body"] for m in pumped.messages("FailureDlqUrl"))

    # When the smoke runs
    code, document = smoke(cli, *FAST)

    # Then it passed, deleted only its own two records, and left the three others visible, unchanged
    assert code == 0, document["checks"]
    assert document["cleanup"]["failureRecordsDeleted"] == 2
    assert document["cleanup"]["foreignMessagesRestored"] == 3
    assert depth(pumped, "FailureDlqUrl") == (3, 0)
    assert sorted(m["Body"] for m in pumped.messages("FailureDlqUrl")) == before


def test_finds_the_stack_by_name_and_sends_nothing_when_there_is_none(pumped: Rehearsal, cli: CliRunner) -> None:
    code, document = smoke(cli, "--stack", "NoSuchStack", *FAST)

    assert code == 3
    assert document["error"]["type"] == "StackNotFound"
    assert depth(pumped, "SourceQueueUrl") == (0, 0)
    assert smoke_skus(pumped) == []


def test_a_record_of_its_own_message_but_another_run_id_is_not_its_own(
    aws: Rehearsal, cli: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a copy of the run's own failure record that names another run (planted as soon as the record exists)
    planted: list[str] = []

    def pump_and_plant(_seconds: float) -> None:
        aws.run()
        for message in aws.messages("FailureDlqUrl"):
            document = json.loads(message["Body"])
            attributes = document["record"]["messageAttributes"]
            if not planted and attributes.get("smokeRun", {}).get("stringValue") == RUN_ID:
                attributes["smokeRun"]["stringValue"] = "another-run"
                planted.append(json.dumps(document))
                aws.sqs.send_message(QueueUrl=aws.outputs["FailureDlqUrl"], MessageBody=planted[0])

    monkeypatch.setattr(demos.orders.smoke, "pause", pump_and_plant)
    monkeypatch.setattr(demos.orders.cli_smoke, "new_run_id", lambda: RUN_ID)

    # When the smoke runs
    code, document = smoke(cli, *FAST)

    # Then it deleted its two records and left the copy, whose run id is not its own
    assert code == 0, document["checks"]
    assert document["cleanup"]["failureRecordsDeleted"] == 2
    assert [m["Body"] for m in aws.messages("FailureDlqUrl")] == planted
