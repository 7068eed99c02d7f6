"""`ff-ops failures redrive` keeps binary message attributes, and never sends an attribute SQS would refuse."""

from __future__ import annotations

import json
import random

from typer.testing import CliRunner

from demos.orders.samples import OrderKind, make_order
from fire_and_forget.rehearsal.rehearsal import Rehearsal
from tests.ops.helpers import depth, ff_ops

SIGNATURE = bytes(range(256))  # not valid UTF-8: only a BinaryValue can carry it


def failed_with_binary_attribute(aws: Rehearsal) -> str:
    sample = make_order(OrderKind.OUT_OF_STOCK, 1, random.Random(1))
    aws.sqs.send_message(
        QueueUrl=aws.outputs["SourceQueueUrl"],
        MessageBody=sample.body,
        MessageAttributes={
            "tenant": {"DataType": "String", "StringValue": "acme"},
            "signature": {"DataType": "Binary.sha", "BinaryValue": SIGNATURE},
        },
    )
    aws.run()
    assert sample.order_id is not None
    return sample.order_id


def test_redrive_sends_the_binary_attribute_back_unchanged(aws: Rehearsal, cli: CliRunner) -> None:
    # Given an order that failed, sent with a binary attribute
    order_id = failed_with_binary_attribute(aws)

    # When the operator redrives it
    code, summary = ff_ops(cli, "failures", "redrive", "--yes", "--order-id", order_id)

    # Then the source queue holds it with the same bytes and data type
    (sent,) = aws.messages("SourceQueueUrl")
    assert code == 0 and summary["summary"]["redriven"] == 1
    assert sent["MessageAttributes"]["signature"] == {"DataType": "Binary.sha", "BinaryValue": SIGNATURE}
    assert sent["MessageAttributes"]["tenant"] == {"DataType": "String", "StringValue": "acme"}


def test_a_record_whose_binary_attribute_lost_its_value_is_left_in_the_dlq(aws: Rehearsal, cli: CliRunner) -> None:
    # Given a failure record whose Binary attribute has no binaryValue (what the pipe emulator used to record)
    order_id = failed_with_binary_attribute(aws)
    (message,) = aws.messages("FailureDlqUrl")
    document = json.loads(message["Body"])
    del document["record"]["messageAttributes"]["signature"]["binaryValue"]
    aws.sqs.purge_queue(QueueUrl=aws.outputs["FailureDlqUrl"])
    aws.sqs.send_message(QueueUrl=aws.outputs["FailureDlqUrl"], MessageBody=json.dumps(document))

    # When the operator redrives it
    code, summary = ff_ops(cli, "failures", "redrive", "--yes", "--order-id", order_id)

    # Then nothing is sent (SQS refuses an empty Binary attribute), the record stays, and the reason is given
    (item,) = summary["items"]
    assert code != 0 and item["action"] == "send-failed"
    assert "signature" in item["reason"] and "binaryValue" in item["reason"]
    assert depth(aws, "SourceQueueUrl") == (0, 0)
    assert depth(aws, "FailureDlqUrl") == (1, 0)
