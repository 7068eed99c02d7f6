"""An interrupted `failures redrive` loses nothing: at worst a message is in both queues, and the handlers absorb it.

The interruption is injected at the SQS client's edge (botocore's before-call event), exactly where a Ctrl-C, a
crash or a lost connection would strike: after a SendMessage succeeded and before its DeleteMessage, while the
DLQ is read, and between two sends.
"""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from demos.orders.samples import OUT_OF_STOCK_SKU
from fire_and_forget.rehearsal.rehearsal import Rehearsal
from fire_and_forget.runtime.records import Selection
from fire_and_forget.runtime.redrive import RedriveRequest, redrive_failures
from tests.ops.helpers import depth, failed_orders, queued_orders, restock, shipped, stock


class Interrupted(KeyboardInterrupt):
    """What Ctrl-C raises, wherever the process happens to be."""


def interrupt_on(client: Any, operation: str, call: int) -> None:
    """Raise Interrupted instead of the `call`-th request of `operation` (1-based)."""
    calls = {"n": 0}

    def hook(**_: Any) -> None:
        calls["n"] += 1
        if calls["n"] == call:
            raise Interrupted

    client.meta.events.register(f"before-call.sqs.{operation}", hook)


def redrive_all(aws: Rehearsal, sqs: Any, batch_size: int = 10) -> None:
    redrive_failures(sqs, aws.outputs["FailureDlqUrl"], aws.outputs["SourceQueueUrl"],
                     RedriveRequest(Selection(), wait_seconds=0, batch_size=batch_size))


def assert_each_order_done_once(aws: Rehearsal, order_ids: list[str]) -> None:
    aws.run()
    assert shipped(aws) == dict.fromkeys(order_ids, 1)
    assert stock(aws, OUT_OF_STOCK_SKU) == 100 - len(order_ids)
    charged = [p["pk"] for p in aws.items("PaymentsTableName") if p["pk"].startswith("ORDER#")]
    assert sorted(charged) == sorted(f"ORDER#{o}" for o in order_ids)
    for key in ("FailureDlqUrl", "SourceQueueUrl", "SourceDlqUrl"):
        assert depth(aws, key) == (0, 0), key


def test_interrupted_between_send_and_delete_duplicates_and_the_duplicate_is_absorbed(aws: Rehearsal) -> None:
    # Given two failed orders, restocked
    order_ids = failed_orders(aws, 2)
    restock(aws)
    sqs = boto3.client("sqs", region_name=aws.region)
    interrupt_on(sqs, "DeleteMessage", call=1)

    # When the redrive is interrupted right after its first send succeeded
    with pytest.raises(Interrupted):
        redrive_all(aws, sqs)

    # Then nothing is lost: the sent order is in both queues, the other still in the DLQ, all visible again
    sent = queued_orders(aws, "SourceQueueUrl")
    assert len(sent) == 1
    assert queued_orders(aws, "FailureDlqUrl") == dict.fromkeys(order_ids, 1)
    assert depth(aws, "FailureDlqUrl") == (2, 0)

    # When the operator runs it again: the first order goes out a second time (a duplicate)
    redrive_all(aws, boto3.client("sqs", region_name=aws.region))
    assert queued_orders(aws, "SourceQueueUrl") == {o: 2 if o in sent else 1 for o in order_ids}

    # Then the duplicate is absorbed: each order is reserved, charged and shipped exactly once
    assert_each_order_done_once(aws, order_ids)


def test_interrupted_while_reading_or_between_two_sends_keeps_the_rest_in_the_dlq(aws: Rehearsal) -> None:
    # Given five failed orders, read in receive batches of two (batches of ten work alike, with more orders)
    order_ids = failed_orders(aws, 5)
    restock(aws)
    sqs = boto3.client("sqs", region_name=aws.region)
    interrupt_on(sqs, "ReceiveMessage", call=2)

    # When the redrive is interrupted while it reads the DLQ (it reads it all before it sends: the records of one
    # execution go back as one)
    with pytest.raises(Interrupted):
        redrive_all(aws, sqs, batch_size=2)

    # Then nothing moved, and every message is visible in the DLQ again
    assert queued_orders(aws, "SourceQueueUrl") == {} and depth(aws, "FailureDlqUrl") == (5, 0)

    # When it is interrupted again, before its third send
    sqs = boto3.client("sqs", region_name=aws.region)
    interrupt_on(sqs, "SendMessage", call=3)
    with pytest.raises(Interrupted):
        redrive_all(aws, sqs, batch_size=2)

    # Then the first two moved completely and the rest waits, visible, in the DLQ
    moved, waiting = queued_orders(aws, "SourceQueueUrl"), queued_orders(aws, "FailureDlqUrl")
    assert (sum(moved.values()), sum(waiting.values())) == (2, 3)
    assert set(moved) | set(waiting) == set(order_ids) and not set(moved) & set(waiting)
    assert depth(aws, "FailureDlqUrl") == (3, 0)

    # When it is run again, everything arrives exactly once
    redrive_all(aws, boto3.client("sqs", region_name=aws.region), batch_size=2)
    assert queued_orders(aws, "SourceQueueUrl") == dict.fromkeys(order_ids, 1)
    assert_each_order_done_once(aws, order_ids)


def test_a_send_the_source_queue_refuses_stays_in_the_dlq(aws: Rehearsal) -> None:
    order_ids = failed_orders(aws, 2)
    sqs = boto3.client("sqs", region_name=aws.region)
    calls = {"n": 0}

    def refuse_first_send(**_: Any) -> dict[str, Any] | None:
        calls["n"] += 1
        if calls["n"] == 1:
            from botocore.exceptions import ClientError

            raise ClientError({"Error": {"Code": "InvalidMessageContents", "Message": "refused"}}, "SendMessage")
        return None

    sqs.meta.events.register("before-call.sqs.SendMessage", refuse_first_send)

    report = redrive_failures(sqs, aws.outputs["FailureDlqUrl"], aws.outputs["SourceQueueUrl"],
                              RedriveRequest(Selection(), wait_seconds=0))

    assert [o.action.value for o in report.outcomes] == ["send-failed", "redriven"]
    assert report.complete is False
    assert sum(queued_orders(aws, "SourceQueueUrl").values()) == 1
    assert sum(queued_orders(aws, "FailureDlqUrl").values()) == 1
    assert set(queued_orders(aws, "SourceQueueUrl")) | set(queued_orders(aws, "FailureDlqUrl")) == set(order_ids)
