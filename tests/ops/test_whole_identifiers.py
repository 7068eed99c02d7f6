"""The table output keeps what an operator acts on whole at 80 and 120 columns: keys, message ids, execution names and
ARNs, state and error names, console links; only free text (a cause, a body) wraps.

"Whole" means on one line of the output: rich never breaks such a line (a terminal narrower than it wraps it for the eye
only, and copying it gives it back whole). Order numbers are 76xx: the package's deployment keeps earlier executions.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import uuid4

import pytest
from typer.testing import CliRunner

from demos.orders.samples import OrderKind
from fire_and_forget.cli.app import app
from fire_and_forget.cli.trace_output import execution_url
from fire_and_forget.rehearsal.rehearsal import Rehearsal
from tests.ops.healing_records import record_body
from tests.ops.helpers import failed_orders, ff_ops

WIDTHS = (80, 120)


def _lines(cli: CliRunner, *args: str, width: int) -> list[str]:
    result = cli.invoke(app, list(args), env={"COLUMNS": str(width)})
    assert result.exit_code == 0, result.output
    return result.stdout.splitlines()


def _broken(lines: list[str], identifiers: list[str]) -> list[str]:
    """The identifiers that no single line holds whole."""
    return [identifier for identifier in identifiers if not any(identifier in line for line in lines)]


def _execution_arn(aws: Rehearsal, name: str) -> str:
    return aws.outputs["StateMachineArn"].replace(":stateMachine:", ":execution:") + f":{name}"


@pytest.fixture
def two_records_of_one_key(aws: Rehearsal) -> list[dict[str, Any]]:
    """Two failure records of one key (two executions of one order), with the long names and causes AWS gives, and a
    third record that failed in another state."""
    failed_at = datetime.now(UTC) - timedelta(minutes=5)
    records = [
        {"key": "ord-007601", "error": "ReservationServiceUnavailableException", "state": "ReserveInventoryForOrder",
         "execution": "pipe-5c65a8f0f204454da406594d6160fbc7"},
        {"key": "ord-007601", "error": "PaymentProviderUnavailable", "state": "ChargePayment",
         "execution": "pipe-e6011845adc642d49b691187e316a7e5"},
        {"key": "ord-007602", "error": "ShippingUnavailable", "state": "ArrangeShipping",
         "execution": "pipe-dc11e38ab9aa460899a440ddd55c664a"},
    ]
    for number, r in enumerate(records):
        r["executionArn"] = _execution_arn(aws, r["execution"])
        sent = aws.sqs.send_message(QueueUrl=aws.outputs["FailureDlqUrl"], MessageBody=record_body(
            r["key"], error=r["error"], state=r["state"], failed_at=failed_at + timedelta(seconds=number),
            message_id=f"src-{number}-{uuid4()}", execution_arn=r["executionArn"], cause=CAUSE))
        r["messageId"] = sent["MessageId"]
    return records


CAUSE = ("the payment provider answered 503 Service Unavailable for the third time in a row; the charge was not made "
         "and nothing is owed: https://status.example.com/incidents/2026-12-01-0815-payment-gateway-degradation")


def test_failures_list_keeps_keys_message_ids_errors_and_states_whole(
    cli: CliRunner, two_records_of_one_key: list[dict[str, Any]]
) -> None:
    # The two records of one key differ by their message ids: both are shown, whole
    identifiers = [r[field] for r in two_records_of_one_key for field in ("key", "messageId", "error", "state")]
    for width in WIDTHS:
        lines = _lines(cli, "failures", "list", width=width)
        assert _broken(lines, identifiers) == [], (width, "\n".join(lines))
        assert "503 Service" in "\n".join(lines)  # the cause is there, wrapped


def test_failures_show_keeps_the_execution_arn_and_message_ids_whole(
    cli: CliRunner, two_records_of_one_key: list[dict[str, Any]]
) -> None:
    first = two_records_of_one_key[0]
    identifiers = [first[field] for field in ("executionArn", "messageId", "key", "error", "state")]
    for width in WIDTHS:
        lines = _lines(cli, "failures", "show", first["messageId"], width=width)
        assert _broken(lines, identifiers) == [], (width, "\n".join(lines))


@pytest.fixture
def compensated(aws: Rehearsal) -> str:
    """An order nobody ships to: three compensations, an alert, a failure record."""
    (order_id,) = failed_orders(aws, 1, OrderKind.UNSERVED, first=7603)
    return order_id


def test_trace_prints_console_links_unbroken_and_names_whole(aws: Rehearsal, cli: CliRunner, compensated: str) -> None:
    _, doc = ff_ops(cli, "trace", compensated)
    identifiers = [doc["failureDlqConsoleUrl"], f"ff-ops failures show {compensated}", *doc["messageIds"]]
    for e in doc["executions"]:
        identifiers += [execution_url(aws.region, e["executionArn"]), e["name"], *(s["state"] for s in e["states"])]
        identifiers += [error for s in e["states"] for error in s["errors"]]
    for width in WIDTHS:
        lines = _lines(cli, "trace", compensated, width=width)
        assert _broken(lines, identifiers) == [], (width, "\n".join(lines))


def test_status_lists_each_recent_execution_with_its_key(aws: Rehearsal, cli: CliRunner, compensated: str) -> None:
    _, status = ff_ops(cli, "status")
    recent = status["executions"]["recent"]
    assert any(e["key"] for e in recent)
    for width in WIDTHS:
        lines = _lines(cli, "status", width=width)
        for e in [e for e in recent if e["key"]]:  # each execution's line names its key
            assert any(e["name"] in line and e["key"] in line for line in lines), (width, e, "\n".join(lines))
        assert _broken(lines, [aws.outputs["PipeName"]]) == []


@pytest.mark.parametrize("width", WIDTHS)
def test_failures_redrive_names_each_record_by_key_and_message_id_on_one_line(
    cli: CliRunner, two_records_of_one_key: list[dict[str, Any]], width: int
) -> None:
    unserved = next(r for r in two_records_of_one_key if r["error"] == "ShippingUnavailable")
    row = f"{unserved['key']}  {unserved['messageId']}  ShippingUnavailable"
    # When the operator tries a redrive first: its row names the record by key and message id, on one line
    dry = cli.invoke(app, ["failures", "redrive", "--error", "ShippingUnavailable", "--dry-run"],
                     env={"COLUMNS": str(width)})
    assert dry.exit_code == 0, dry.output
    assert f"would-redrive  {row}" in dry.stdout.splitlines()[0], (width, dry.stdout)
    # And then redrives it
    result = cli.invoke(app, ["failures", "redrive", "--error", "ShippingUnavailable", "--yes"],
                        env={"COLUMNS": str(width)})
    assert result.exit_code == 0, result.output
    # Then the line that says it was redriven holds the key, the message id, the error and the id it was resent as
    resent = re.findall(rf"redriven  {row} -> ([0-9a-f-]{{36}})$", result.stdout, flags=re.MULTILINE)
    assert len(resent) == 1, (width, result.stdout)
