"""Queue pairs and the queues and topics AWS services write to, over both stacks' templates.

moto keeps a message in a DLQ whatever its retention, so what SQS enforces is checked here on the synthesized
template; every pair is derived from the template (RedrivePolicy), not named by hand.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.template import of_type, ref_or_att

TEMPLATES = ("template", "catalog_template")
# What a queue keeps without MessageRetentionPeriod (API_CreateQueue: default 345,600 s, 4 days).
SQS_DEFAULT_RETENTION_SECONDS = 345_600


@pytest.fixture(scope="module", params=TEMPLATES)
def stack(request: pytest.FixtureRequest) -> dict[str, Any]:
    found: dict[str, Any] = request.getfixturevalue(request.param)
    return found


def queue_pairs(stack: dict[str, Any]) -> list[tuple[str, str]]:
    """(source queue, the DLQ its RedrivePolicy names), for every queue of the template that has one."""
    pairs = []
    for queue, resource in of_type(stack, "AWS::SQS::Queue").items():
        redrive = resource["Properties"].get("RedrivePolicy")
        if redrive:
            dlq = ref_or_att(redrive["deadLetterTargetArn"])
            assert dlq is not None, f"{queue}: its DLQ is not a queue of this template"
            pairs.append((queue, dlq))
    return pairs


def retention_seconds(stack: dict[str, Any], queue: str) -> int:
    return int(stack["Resources"][queue]["Properties"].get("MessageRetentionPeriod", SQS_DEFAULT_RETENTION_SECONDS))


def test_the_pairs_are_read_from_the_template(stack: dict[str, Any]) -> None:
    sources = {source for source, _ in queue_pairs(stack)}
    assert any(s.startswith("PipelineSourceQueue") for s in sources)
    assert any(s.startswith("PipelineExecutionEventsFailureEventsQueue") for s in sources)


def test_every_dlq_keeps_a_message_longer_than_its_source_queue(stack: dict[str, Any]) -> None:
    """SQS keeps a message's original enqueue timestamp when it moves it to the DLQ, so a DLQ whose retention is not
    longer than its source's can expire a moved message at once (sqs-dead-letter-queues.html)."""
    too_short = [
        f"{dlq} keeps {retention_seconds(stack, dlq)} s, its source {source} {retention_seconds(stack, source)} s"
        for source, dlq in queue_pairs(stack)
        if retention_seconds(stack, dlq) <= retention_seconds(stack, source)
    ]
    assert not too_short, "; ".join(too_short)
