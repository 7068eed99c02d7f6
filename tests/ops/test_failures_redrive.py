"""`ff-ops failures redrive` on the offline deployment: the round trip, selection, --dry-run, --max, manual repair."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from demos.orders.samples import OUT_OF_STOCK_SKU, OrderKind
from fire_and_forget.rehearsal.accounting import Place, account
from fire_and_forget.rehearsal.faults import Fault, FaultKind
from fire_and_forget.rehearsal.rehearsal import Rehearsal
from tests.ops.helpers import depth, failed_orders, ff_ops, queued_orders, restock, shipped, stock


def test_round_trip_out_of_stock_orders_succeed_after_restock_and_redrive(aws: Rehearsal, cli: CliRunner) -> None:
    # Given three orders that failed for lack of stock, and the stock then replenished
    order_ids = failed_orders(aws, 3)
    assert queued_orders(aws, "FailureDlqUrl") == dict.fromkeys(order_ids, 1)
    restock(aws, available=100)

    # When the operator redrives the OutOfStock failures and the pipe runs again
    code, summary = ff_ops(cli, "failures", "redrive", "--yes", "--error", "OutOfStock")
    redriven = [item["newMessageId"] for item in summary["items"]]
    aws.run()

    # Then every order went through: shipped once, stock taken once, and no queue holds anything
    assert code == 0
    assert summary["summary"]["redriven"] == 3 and summary["complete"] is True
    assert sorted(item["key"] for item in summary["items"]) == sorted(order_ids)
    ledger = account(aws, redriven)
    assert {fate.place for fate in ledger.fates.values()} == {Place.SUCCEEDED}
    assert shipped(aws) == dict.fromkeys(order_ids, 1)
    assert stock(aws, OUT_OF_STOCK_SKU) == 100 - 3
    charged = [p for p in aws.items("PaymentsTableName") if p["pk"].startswith("ORDER#")]
    assert sorted(p["pk"] for p in charged) == sorted(f"ORDER#{o}" for o in order_ids)
    assert {p["status"] for p in charged} == {"CHARGED"}
    for key in ("FailureDlqUrl", "SourceQueueUrl", "SourceDlqUrl"):
        assert depth(aws, key) == (0, 0), key


def test_the_callers_message_reads_through_the_operators_redrive_to_its_copy(aws: Rehearsal, cli: CliRunner) -> None:
    # Given an order that failed for lack of stock: its caller reads it failed, for good
    (order_id,) = failed_orders(aws, 1)
    caller_message = aws.sent[-1]
    _, before = ff_ops(cli, "message", caller_message)
    assert (before["state"], before["error"], before["final"]) == ("failed", "OutOfStock", True)
    restock(aws, available=100)
    # When the operator redrives it and the copy runs
    _, summary = ff_ops(cli, "failures", "redrive", "--yes", "--order-id", order_id)
    (copy,) = [item["newMessageId"] for item in summary["items"]]
    aws.run()
    # Then the caller's own message id reads succeeded, through the copy
    _, after = ff_ops(cli, "message", caller_message)
    assert (after["state"], after["attemptMessageId"], after["redrives"], after["stage"]) == (
        "succeeded", copy, 1, "shipped")


def test_redrive_sends_the_original_body_and_attributes(aws: Rehearsal, cli: CliRunner) -> None:
    (order_id,) = failed_orders(aws, 1)
    (record_message,) = aws.messages("FailureDlqUrl")
    original = json.loads(record_message["Body"])["record"]

    code, _ = ff_ops(cli, "failures", "redrive", "--yes", "--order-id", order_id)

    (sent,) = aws.messages("SourceQueueUrl")
    assert code == 0
    assert sent["Body"] == original["body"]
    assert {k: v["StringValue"] for k, v in sent["MessageAttributes"].items()} == {"tenant": "acme", "source": "web"}


def test_selection_by_order_id_leaves_the_others(aws: Rehearsal, cli: CliRunner) -> None:
    first, second, third = failed_orders(aws, 3)

    code, summary = ff_ops(cli, "failures", "redrive", "--yes", "--order-id", second)

    assert code == 0 and [item["key"] for item in summary["items"]] == [second]
    assert queued_orders(aws, "SourceQueueUrl") == {second: 1}
    assert queued_orders(aws, "FailureDlqUrl") == {first: 1, third: 1}


def test_dry_run_changes_nothing(aws: Rehearsal, cli: CliRunner) -> None:
    order_ids = failed_orders(aws, 3)

    code, summary = ff_ops(cli, "failures", "redrive", "--all", "--dry-run")

    assert code == 0 and summary["dryRun"] is True
    assert summary["summary"]["wouldRedrive"] == 3 and summary["summary"]["redriven"] == 0
    assert all(item["newMessageId"] is None for item in summary["items"])
    assert depth(aws, "FailureDlqUrl") == (3, 0)  # all visible again
    assert queued_orders(aws, "FailureDlqUrl") == dict.fromkeys(order_ids, 1)
    assert depth(aws, "SourceQueueUrl") == (0, 0)


def test_max_redrives_at_most_that_many(aws: Rehearsal, cli: CliRunner) -> None:
    failed_orders(aws, 4)

    code, summary = ff_ops(cli, "failures", "redrive", "--yes", "--all", "--max", "2")

    assert code == 0 and summary["summary"]["redriven"] == 2
    assert depth(aws, "SourceQueueUrl") == (2, 0)
    assert depth(aws, "FailureDlqUrl") == (2, 0)


def test_manual_repair_is_refused_without_force(aws: Rehearsal, cli: CliRunner) -> None:
    # Given an order whose refund failed (manual repair), next to an ordinary failure
    aws.faults.add(Fault("RefundPayment", FaultKind.CRASH))
    (repair,) = failed_orders(aws, 1, OrderKind.UNSERVED, first=50)
    aws.faults.clear()
    (ordinary,) = failed_orders(aws, 1, OrderKind.OUT_OF_STOCK, first=60)

    code, summary = ff_ops(cli, "failures", "redrive", "--yes", "--all")

    assert code == 8 and summary["complete"] is False
    actions = {item["key"]: item["action"] for item in summary["items"]}
    assert actions == {repair: "refused-manual-repair", ordinary: "redriven"}
    assert queued_orders(aws, "FailureDlqUrl") == {repair: 1}
    assert queued_orders(aws, "SourceQueueUrl") == {ordinary: 1}

    # When the operator has repaired it and forces the redrive
    code, summary = ff_ops(cli, "failures", "redrive", "--yes", "--order-id", repair, "--force")

    assert code == 0 and summary["summary"]["redriven"] == 1
    assert depth(aws, "FailureDlqUrl") == (0, 0)


def test_redrive_without_a_selection_is_a_usage_error(aws: Rehearsal, cli: CliRunner) -> None:
    failed_orders(aws, 1)

    code, document = ff_ops(cli, "failures", "redrive")

    assert code == 2 and "--all" in document["error"]["message"]
    assert depth(aws, "FailureDlqUrl") == (1, 0)
