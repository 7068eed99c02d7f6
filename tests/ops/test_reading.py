"""`status`, `failures list` and `failures show`: what they report, and that reading hides and loses nothing."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from typer.testing import CliRunner

from demos.orders.samples import OrderKind
from fire_and_forget.cli.app import app
from fire_and_forget.cli.failures import list_failures
from fire_and_forget.rehearsal.rehearsal import Rehearsal
from fire_and_forget.runtime.records import message_key
from tests.ops.helpers import depth, failed_orders, ff_ops


def test_list_shows_each_failure_and_leaves_every_message_visible(aws: Rehearsal, cli: CliRunner) -> None:
    out_of_stock = failed_orders(aws, 2)
    (declined,) = failed_orders(aws, 1, OrderKind.DECLINED, first=20)

    code, listing = ff_ops(cli, "failures", "list")

    assert code == 0 and listing["read"] == 3 and listing["truncated"] is False
    by_order = {f["key"]: f for f in listing["failures"]}
    assert {o: by_order[o]["error"] for o in [*out_of_stock, declined]} == {
        **dict.fromkeys(out_of_stock, "OutOfStock"), declined: "PaymentDeclined"}
    assert by_order[declined]["failedState"] == "ChargePayment"
    assert all(f["manualRepair"] is False and f["failedAt"].endswith("Z") for f in listing["failures"])
    assert depth(aws, "FailureDlqUrl") == (3, 0)


def test_list_filters_by_error_and_time(aws: Rehearsal, cli: CliRunner) -> None:
    failed_orders(aws, 1)
    (declined,) = failed_orders(aws, 1, OrderKind.DECLINED, first=20)

    _, by_error = ff_ops(cli, "failures", "list", "--error", "PaymentDeclined")
    _, recent = ff_ops(cli, "failures", "list", "--since", "10m")
    _, future = ff_ops(cli, "failures", "list", "--since", "2999-01-01T00:00:00Z")

    assert [f["key"] for f in by_error["failures"]] == [declined]
    assert len(recent["failures"]) == 2
    assert future["failures"] == [] and future["read"] == 2


def test_messages_are_made_visible_again_even_when_reading_fails_midway(aws: Rehearsal) -> None:
    failed_orders(aws, 3)
    sqs = boto3.client("sqs", region_name=aws.region)
    calls = {"n": 0}

    def fail_second_receive(**_: Any) -> None:
        calls["n"] += 1
        if calls["n"] == 2:
            raise ConnectionError("network gone")

    sqs.meta.events.register("before-call.sqs.ReceiveMessage", fail_second_receive)

    with pytest.raises(ConnectionError):
        list_failures(sqs, aws.outputs["FailureDlqUrl"], limit=10, wait_seconds=0, batch_size=2)

    assert depth(aws, "FailureDlqUrl") == (3, 0)


def test_show_finds_a_failure_by_order_id_with_the_original_message(aws: Rehearsal, cli: CliRunner) -> None:
    (order_id,) = failed_orders(aws, 1)

    code, shown = ff_ops(cli, "failures", "show", order_id)
    human = cli.invoke(app, ["failures", "show", order_id])

    (failure,) = shown["failures"]
    assert code == 0 and failure["key"] == order_id
    assert failure["compensation"] == {"required": False}
    assert failure["messageAttributes"]["tenant"]["stringValue"] == "acme"
    assert f'"orderId": "{order_id}"' in failure["body"]
    assert human.exit_code == 0 and "OutOfStock" in human.stdout
    assert depth(aws, "FailureDlqUrl") == (1, 0)


def test_show_of_an_unknown_key_exits_9(aws: Rehearsal, cli: CliRunner) -> None:
    code, document = ff_ops(cli, "failures", "show", "ord-nope")

    assert code == 9 and document["error"]["type"] == "NotFound"


def test_status_reports_queues_pipe_and_recent_failed_executions(aws: Rehearsal, cli: CliRunner) -> None:
    failed_orders(aws, 2, first=300)

    code, status = ff_ops(cli, "status")
    human = cli.invoke(app, ["status"])

    assert code == 0 and human.exit_code == 0
    queues = {q["outputKey"]: q for q in status["queues"]}
    assert queues["FailureDlqUrl"]["visible"] == 2 and queues["SourceQueueUrl"]["visible"] == 0
    assert status["pipe"]["name"] == aws.outputs["PipeName"]
    assert status["pipe"]["currentState"] in {"RUNNING", "CREATING", "STARTING"}
    assert status["executions"]["counts"]["FAILED"] >= 2  # earlier tests' failures of the same deployment count too
    recent = status["executions"]["recent"]
    assert {e["status"] for e in recent} == {"FAILED"}
    # each execution names the message it started from and that message's key, as its input holds them
    started_from = {e.arn: e.input[0] for e in aws.executions() if isinstance(e.input, list)}
    assert status["keyField"] == "orderId" and recent
    assert [(e["messageId"], e["key"]) for e in recent] == [
        (started_from[e["executionArn"]]["messageId"], message_key(started_from[e["executionArn"]]["body"], "orderId"))
        for e in recent
    ]
    assert "failure DLQ" in human.stdout


def test_a_command_makes_only_the_clients_of_the_services_it_calls(
    aws: Rehearsal, cli: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a count of the clients ff-ops makes, and of the services they send requests to
    made: list[str] = []
    called: set[str] = set()
    original = boto3.session.Session.client

    def counted(session: boto3.session.Session, service: str, *args: Any, **kwargs: Any) -> Any:
        made.append(service)
        client = original(session, service, *args, **kwargs)
        client.meta.events.register("before-call", lambda **_: called.add(service))
        return client

    monkeypatch.setattr(boto3.session.Session, "client", counted)
    failed_orders(aws, 1)
    made.clear()
    called.clear()
    # When an operator lists the failures
    code, _ = ff_ops(cli, "failures", "list")
    # Then each client made was made once and sent requests: the others of the seven are never loaded
    assert code == 0
    assert sorted(made) == sorted(called) and len(made) == len(set(made))
    assert "cloudformation" in made and "pipes" not in made
