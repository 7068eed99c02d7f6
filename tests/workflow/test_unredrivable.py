"""A transient failure the automatic redrive cannot send back, end to end: the synthesized order stack on moto, the
real handlers, the Redriver on the rehearsal's clock. The tail records it unannounced (its Choice cannot see SQS's
limits); the Redriver classifies it as needing a person, never tries to resend it, and announces it once over many
runs, a refused publish included; the books balance."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path

import pytest

from demos.orders.samples import OrderKind, make_order, seed_inventory
from fire_and_forget.cli.healing import waiting_for
from fire_and_forget.rehearsal.accounting import Place, account
from fire_and_forget.rehearsal.faults import Fault, FaultKind
from fire_and_forget.rehearsal.rehearsal import Rehearsal
from fire_and_forget.rehearsal.sqs_rules import message_size
from fire_and_forget.runtime.healing_policy import Disposition, HealingPolicy
from fire_and_forget.runtime.records import FailureRecord, parse

HOUR = 3600
CALLS_PER_EXECUTION = 5  # the transient retrier's 4 retries and the first call


def _nine_attributes(_body: str, _limit: int) -> dict[str, str]:
    return {f"a{i}": "v" for i in range(9)}


def _at_the_size_limit(body: str, limit: int) -> dict[str, str]:
    """One attribute that fills the message to the source queue's maximum: the redrive's two would pass it."""
    overhead = message_size(body, {"pad": {"DataType": "String", "StringValue": ""}})
    return {"pad": "x" * (limit - overhead)}


@pytest.mark.parametrize("attributes", [_nine_attributes, _at_the_size_limit], ids=["nine attributes", "size"])
def test_a_failure_the_redrive_cannot_resend_is_announced_once_by_the_redriver(
        cloud_assembly: Path, attributes: Callable[[str, int], dict[str, str]]) -> None:
    with Rehearsal.start(cloud_assembly) as aws:
        seed_inventory(aws.dynamodb, aws.outputs["InventoryTableName"])
        sample = make_order(OrderKind.VALID, 1, random.Random(1))
        limit = int(aws.sqs.get_queue_attributes(QueueUrl=aws.outputs["SourceQueueUrl"],
                                                 AttributeNames=["MaximumMessageSize"])["Attributes"][
            "MaximumMessageSize"])
        aws.faults.add(Fault("ArrangeShipping", FaultKind.SERVICE_ERROR, times=CALLS_PER_EXECUTION))
        message_id = aws.send(sample.body, attributes=attributes(sample.body, limit))
        (failed,) = aws.run()
        assert failed.states[-1] == "FailureRecordedForRetry" and aws.notifications() == []  # the tail's view
        # The alerts topic refuses the Redriver's first publish: the next run announces instead.
        aws.faults.add(Fault("AlertsTopic", FaultKind.UNAVAILABLE, times=1))

        aws.advance(HOUR)  # twelve Redriver runs

        # Then it was announced once, by the Redriver, in the tail's format
        (alert,) = [text for _subject, text in aws.notifications() if failed.arn in text]
        card = json.loads(json.loads(alert)["default"])  # the message is per protocol: the chat card, the e-mail
        assert card["metadata"]["additionalContext"]["disposition"] == "cannot-redrive"
        assert "cannot send it back" in json.loads(alert)["email"]
        assert aws.faults.fired("AlertsTopic") == 1
        # And never resent: ff-ops and the Redriver read it as needing a person
        assert aws.messages("SourceQueueUrl") == [] and len(aws.executions()) == 1
        (message,) = aws.messages("FailureDlqUrl")
        record = parse(message)  # type: ignore[arg-type]
        assert isinstance(record, FailureRecord) and record.execution_arn == failed.arn
        policy = HealingPolicy.from_environment(json.loads(aws.outputs["HealingPolicy"]))
        assert waiting_for(record, policy).disposition is Disposition.UNSENDABLE
        ledger = account(aws, [message_id])
        assert ledger.balanced and ledger.fates[message_id].place is Place.FAILURE_DLQ
