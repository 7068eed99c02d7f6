"""`ff-ops trace` on the offline deployment: executions, states, retries, compensations, alerts, where it is now.

Order numbers are 71xx: the package's deployment keeps every earlier test's executions, and order ids are the key.
"""

from __future__ import annotations

import random

from typer.testing import CliRunner

from demos.orders.samples import OrderKind, make_order
from fire_and_forget.cli.app import app
from fire_and_forget.cli.errors import ExitCode
from fire_and_forget.rehearsal.faults import Fault, FaultKind
from fire_and_forget.rehearsal.rehearsal import Rehearsal
from tests.ops.helpers import failed_orders, ff_ops, restock


def _send(aws: Rehearsal, kind: OrderKind, number: int) -> tuple[str, str]:
    sample = make_order(kind, number, random.Random(number))
    message_id = aws.send(sample.body)
    assert sample.order_id is not None
    return sample.order_id, message_id


def test_a_succeeded_order_is_traced_by_order_id_with_its_states(aws: Rehearsal, cli: CliRunner) -> None:
    # Given one valid order that went through
    order_id, message_id = _send(aws, OrderKind.VALID, 7101)
    aws.run()

    # When the operator traces it by order id
    code, doc = ff_ops(cli, "trace", order_id)

    # Then one execution, the three steps entered once each, and the order in the "succeeded" place
    assert code == 0 and doc["schema"] == "ff-ops/trace/v1"
    assert (doc["keyField"], doc["query"], doc["matched"], doc["key"]) == ("orderId", order_id, "key", order_id)
    assert doc["messageIds"] == [message_id]
    (execution,) = doc["executions"]
    assert execution["status"] == "SUCCEEDED" and execution["messageId"] == message_id
    assert [s["state"] for s in execution["states"]] == ["ReserveInventory", "ChargePayment", "ArrangeShipping"]
    assert execution["compensations"] == [] and execution["alerts"] == [] and execution["retries"] == 0
    assert [(w["place"], w["messageId"]) for w in doc["where"]] == [("succeeded", message_id)]
    assert execution["consoleUrl"].endswith(f"#/v2/executions/details/{execution['executionArn']}")


def test_a_compensated_order_shows_its_compensations_alert_and_failure_record(aws: Rehearsal, cli: CliRunner) -> None:
    # Given an order to a country nobody ships to: shipping refuses, payment and inventory are compensated
    order_id, message_id = _send(aws, OrderKind.UNSERVED, 7102)
    aws.run()

    # When the operator traces it by its SQS message id
    code, doc = ff_ops(cli, "trace", message_id)

    # Then the compensations ran and succeeded, NotifyFailure published, and the order is in the failure DLQ
    assert code == 0 and (doc["matched"], doc["key"]) == ("message-id", order_id)
    (execution,) = doc["executions"]
    assert execution["status"] == "FAILED" and execution["error"] == "FailureRecorded"
    assert [(c["state"], c["outcome"]) for c in execution["compensations"]] == [
        ("CancelShipment", "succeeded"),
        ("RefundPayment", "succeeded"),
        ("ReleaseInventory", "succeeded"),
    ]
    (alert,) = execution["alerts"]
    assert alert["outcome"] == "succeeded" and alert["snsMessageId"]
    shipping = next(s for s in execution["states"] if s["state"] == "ArrangeShipping")
    assert shipping["outcome"] == "failed" and shipping["errors"]
    (where,) = doc["where"]
    assert where["place"] == "failure-dlq" and where["messageId"] == message_id and where["dlqMessageId"]
    (record,) = doc["failureRecords"]
    assert record["sourceMessageId"] == message_id and record["manualRepair"] is False


def test_retries_are_counted_per_state(aws: Rehearsal, cli: CliRunner) -> None:
    # Given ChargePayment throttled twice before it succeeds
    aws.faults.add(Fault("ChargePayment", FaultKind.THROTTLE, times=2))
    order_id, _ = _send(aws, OrderKind.VALID, 7103)
    aws.run()

    code, doc = ff_ops(cli, "trace", order_id)

    (execution,) = doc["executions"]
    charge = next(s for s in execution["states"] if s["state"] == "ChargePayment")
    assert code == 0 and execution["status"] == "SUCCEEDED"
    assert charge["attempts"] == 3 and charge["retries"] == 2
    assert charge["errors"] == ["Lambda.TooManyRequestsException"] * 2 and execution["retries"] == 2


def test_a_redriven_order_shows_both_messages_and_both_executions(aws: Rehearsal, cli: CliRunner) -> None:
    # Given an order that failed for lack of stock, then was redriven after a restock and went through
    (order_id,) = failed_orders(aws, 1, first=7108)
    restock(aws)
    aws.advance(60)  # the operator redrives it a minute later
    _, redrive = ff_ops(cli, "failures", "redrive", "--yes", "--order-id", order_id)
    aws.run()
    new_message = redrive["items"][0]["newMessageId"]

    # When the operator traces the order
    code, doc = ff_ops(cli, "trace", order_id)

    # Then both executions (newest first), both message ids, and only the second one's success as its place
    assert code == 0
    assert [e["status"] for e in doc["executions"]] == ["SUCCEEDED", "FAILED"]
    assert len(doc["messageIds"]) == 2 and new_message in doc["messageIds"]
    assert [(w["place"], w["messageId"]) for w in doc["where"]] == [
        ("succeeded", new_message),
        ("left-failure-dlq", doc["executions"][1]["messageId"]),
    ]
    assert doc["where"][1]["detail"].endswith(f"redriven as {new_message}")
    assert doc["failureRecords"] == []


def test_a_message_the_pipe_could_not_hand_over_is_found_in_the_source_dlq(aws: Rehearsal, cli: CliRunner) -> None:
    # Given a message that went to the source DLQ without an execution (as after maxReceiveCount pipe failures)
    sample = make_order(OrderKind.VALID, 7104, random.Random(4))
    sent = aws.sqs.send_message(QueueUrl=aws.outputs["SourceDlqUrl"], MessageBody=sample.body)

    code, doc = ff_ops(cli, "trace", str(sample.order_id))

    assert code == 0 and doc["executions"] == []
    assert [(w["place"], w["messageId"]) for w in doc["where"]] == [("source-dlq", sent["MessageId"])]
    assert (
        aws.sqs.get_queue_attributes(
            QueueUrl=aws.outputs["SourceDlqUrl"], AttributeNames=["ApproximateNumberOfMessages"]
        )["Attributes"]["ApproximateNumberOfMessages"]
        == "1"
    )  # made visible again


def test_an_unknown_key_exits_9_and_names_the_bound(aws: Rehearsal, cli: CliRunner) -> None:
    _send(aws, OrderKind.VALID, 7105)
    aws.run()

    result = cli.invoke(app, ["trace", "no-such-order", "--max-executions", "1"])

    assert result.exit_code == ExitCode.NOT_FOUND
    assert "nothing found for 'no-such-order' in the newest 1 executions" in result.output


def test_the_scan_is_bounded_newest_first_and_says_so(aws: Rehearsal, cli: CliRunner) -> None:
    # Given two orders, the older one first
    older, _ = _send(aws, OrderKind.VALID, 7106)
    aws.run()
    aws.advance(1)  # the rehearsal's clock stands still while work runs: the second order comes a second later
    newer, _ = _send(aws, OrderKind.VALID, 7107)
    aws.run()

    # When only one execution may be read
    code, doc = ff_ops(cli, "trace", newer, "--max-executions", "1")
    missed = cli.invoke(app, ["trace", older, "--max-executions", "1"])

    # Then the newest is found, the scan says it was truncated, and the older one is out of reach (and said so)
    assert code == 0 and doc["scan"] == {"executionsScanned": 1, "maxExecutions": 1, "truncated": True}
    assert missed.exit_code == ExitCode.NOT_FOUND and "raise --max-executions" in missed.output


def test_the_table_output_names_the_place_the_next_step_and_the_console(aws: Rehearsal, cli: CliRunner) -> None:
    (order_id,) = failed_orders(aws, 1, OrderKind.UNSERVED, first=7109)

    result = cli.invoke(app, ["trace", order_id], terminal_width=200)

    assert result.exit_code == 0, result.output
    assert "failure-dlq" in result.output and f"ff-ops failures show {order_id}" in result.output
    assert "compensation ReleaseInventory: succeeded" in result.output, result.output
    assert "alert published by NotifyFailure: succeeded" in result.output
    assert "console.aws.amazon.com/states/home" in result.output


def test_an_execution_arn_older_than_the_scan_is_traced_and_said_to_be_what_matched(
    aws: Rehearsal, cli: CliRunner
) -> None:
    # Given an order that failed, then a newer execution of another order (the ARN the ReconcilerDlqNotEmpty
    # procedure gives the operator is the older one's)
    (order_id,) = failed_orders(aws, 1, first=7110)
    _, listing = ff_ops(cli, "failures", "list", "--key", order_id)
    (record,) = listing["failures"]
    aws.advance(1)
    _send(aws, OrderKind.VALID, 7111)
    aws.run()

    # When the operator traces the execution ARN, reading only the newest execution
    code, doc = ff_ops(cli, "trace", record["executionArn"], "--max-executions", "1")
    human = cli.invoke(app, ["trace", record["executionArn"], "--max-executions", "1"], env={"COLUMNS": "200"})

    # Then that execution is found all the same, with its key, its record, and the answer says it was an ARN
    assert code == 0 and (doc["matched"], doc["key"]) == ("execution-arn", order_id)
    assert [e["executionArn"] for e in doc["executions"]] == [record["executionArn"]]
    assert [r["messageId"] for r in doc["failureRecords"]] == [record["messageId"]]
    assert "matched an execution ARN" in human.stdout


def test_a_failure_dlq_message_id_leads_to_the_executions_of_its_key(aws: Rehearsal, cli: CliRunner) -> None:
    (order_id,) = failed_orders(aws, 1, first=7112)
    _, listing = ff_ops(cli, "failures", "list", "--key", order_id)
    (record,) = listing["failures"]

    code, doc = ff_ops(cli, "trace", record["messageId"])

    assert code == 0 and (doc["matched"], doc["key"]) == ("dlq-message-id", order_id)
    assert [e["executionArn"] for e in doc["executions"]] == [record["executionArn"]]


def test_an_execution_arn_of_another_state_machine_or_none_exits_9(aws: Rehearsal, cli: CliRunner) -> None:
    ours = aws.outputs["StateMachineArn"].replace(":stateMachine:", ":execution:")
    other = ours.rsplit(":", 1)[0] + ":SomeoneElsesMachine"

    code, foreign = ff_ops(cli, "trace", f"{other}:pipe-0")
    missing_code, missing = ff_ops(cli, "trace", f"{ours}:pipe-never-started")

    assert code == missing_code == ExitCode.NOT_FOUND
    assert "is not an execution of the stack's state machine" in foreign["error"]["message"]
    assert missing["error"]["message"] == f"no execution {ours}:pipe-never-started"
