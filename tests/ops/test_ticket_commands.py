"""The `ff-ops` commands an OpsCenter ticket hands the person on call (fire_and_forget.healing.tickets.ops_item) run as
written, against the offline deployment: the one that shows the message, and the one that redrives it by its key."""

from __future__ import annotations

import json
import shlex

from typer.testing import CliRunner

from fire_and_forget.healing.endings import Ending
from fire_and_forget.healing.tickets import TicketSettings, ops_item
from fire_and_forget.rehearsal.rehearsal import Rehearsal
from fire_and_forget.runtime.status import read_status
from tests.ops.helpers import failed_orders, ff_ops


def test_a_tickets_commands_show_and_redrive_its_message(aws: Rehearsal, cli: CliRunner) -> None:
    # Given an order that failed for good, and the ticket the tickets function would open for it
    (order,) = failed_orders(aws, 1, first=7401)
    (message,) = aws.messages("FailureDlqUrl")
    record = json.loads(message["Body"])["record"]
    status = read_status(aws.dynamodb, aws.outputs["DeliveriesTableName"], record["messageId"])
    settings = TicketSettings(pipeline="orders", environment="dev", title="Order saga", stack=aws.stack.name,
                              runbook_url="https://example.com/runbook.md", key_field="orderId",
                              table=aws.outputs["DeliveriesTableName"])
    request = ops_item(Ending(status, record), settings)
    data = {name: value["Value"] for name, value in request["OperationalData"].items()}

    # When the person on call runs them as written (the redrive looked at first, with --dry-run)
    shown_code, shown = ff_ops(cli, *shlex.split(data["showCommand"])[1:])
    redrive_code, redrive = ff_ops(cli, *shlex.split(data["redriveCommand"])[1:], "--dry-run")

    # Then the first shows the message's failure, and the second would redrive exactly that order
    assert (shown_code, shown["messageId"], shown["state"]) == (0, record["messageId"], "failed")
    assert redrive_code == 0 and [item["key"] for item in redrive["items"]] == [order]
