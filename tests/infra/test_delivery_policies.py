"""Queue pairs and the queues and topics AWS services write to, over both stacks' templates.

moto keeps a message in a DLQ whatever its retention and lets any principal send to any queue, so what SQS, EventBridge
and Scheduler enforce is checked here on the synthesized template; every pair and every writer is derived from the
template (RedrivePolicy, rule targets and their DLQs, schedule targets), not named by hand.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.template import of_type, ref_or_att

TEMPLATES = ("template", "catalog_template")
# What a queue keeps without MessageRetentionPeriod (API_CreateQueue: default 345,600 s, 4 days).
SQS_DEFAULT_RETENTION_SECONDS = 345_600
POLICY_OF = {"AWS::SQS::Queue": ("AWS::SQS::QueuePolicy", "Queues"),
             "AWS::SNS::Topic": ("AWS::SNS::TopicPolicy", "Topics")}
WRITERS = {"AWS::Events::Rule": "events.amazonaws.com", "AWS::Scheduler::Schedule": "scheduler.amazonaws.com"}


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


def _written_to(stack: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(service, writer's logical id, queue or topic) for every rule target, rule target DLQ and schedule target or
    DLQ of the template that is an SQS queue or an SNS topic."""
    found = []
    for writer_type, service in WRITERS.items():
        for writer, resource in of_type(stack, writer_type).items():
            props = resource["Properties"]
            targets = props.get("Targets", []) if writer_type == "AWS::Events::Rule" else [props["Target"]]
            for target in targets:
                values = [target["Arn"], target.get("DeadLetterConfig", {}).get("Arn")]
                for lid in filter(None, (ref_or_att(v) for v in values if v is not None)):
                    if stack["Resources"][lid]["Type"] in POLICY_OF:
                        found.append((service, writer, lid))
    return found


def _policy_statements(stack: dict[str, Any], lid: str) -> list[dict[str, Any]]:
    policy_type, key = POLICY_OF[stack["Resources"][lid]["Type"]]
    return [s for p in of_type(stack, policy_type).values() if {"Ref": lid} in p["Properties"][key]
            for s in p["Properties"]["PolicyDocument"]["Statement"]]


def _services(statement: dict[str, Any]) -> set[str]:
    principal = statement.get("Principal")
    return set(_as_list(principal.get("Service"))) if isinstance(principal, dict) else set()


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [] if value is None else [value]


def _bound_sources(statement: dict[str, Any]) -> list[str | None]:
    """The logical ids an exact aws:SourceArn condition names (None for a value that is no resource of ours)."""
    condition = statement.get("Condition", {})
    return [ref_or_att(value) for operator in ("ArnEquals", "StringEquals")
            for value in _as_list(condition.get(operator, {}).get("aws:SourceArn"))]


def test_the_writers_are_read_from_the_template(stack: dict[str, Any]) -> None:
    written = {lid for _, _, lid in _written_to(stack)}
    assert any(lid.startswith("PipelineExecutionEventsFailureEventsQueue") for lid in written)
    assert any(lid.startswith("PipelineExecutionEventsTargetDlq") for lid in written)


def test_each_queue_or_topic_a_rule_writes_to_lets_exactly_that_rule_send(stack: dict[str, Any]) -> None:
    """EventBridge delivers to SQS and SNS targets through their resource policies, bound to the rule by
    aws:SourceArn (eb-use-resource-based.html); aws:SourceAccount alone would let any rule of the account send."""
    for service, writer, lid in _written_to(stack):
        if service != "events.amazonaws.com":
            continue
        grants = [s for s in _policy_statements(stack, lid) if s["Effect"] == "Allow" and service in _services(s)]
        assert grants, f"{lid}: no statement lets {writer} deliver"
        for statement in grants:
            assert _bound_sources(statement) == [writer], f"{lid}: {statement} is not bound to {writer} alone"


def test_no_queue_or_topic_lets_eventbridge_or_scheduler_send_for_anything_else(stack: dict[str, Any]) -> None:
    """Every grant to the two services, on every queue and topic, names by aws:SourceArn a rule or schedule of this
    template that writes to that very resource. (Scheduler writes with the schedule's role: no grant at all.)"""
    writers_of: dict[str, set[str]] = {}
    for _, writer, lid in _written_to(stack):
        writers_of.setdefault(lid, set()).add(writer)
    for resource_type in POLICY_OF:
        for lid in of_type(stack, resource_type):
            for statement in _policy_statements(stack, lid):
                if statement["Effect"] != "Allow" or not _services(statement) & set(WRITERS.values()):
                    continue
                sources = _bound_sources(statement)
                assert sources, f"{lid}: {statement} is bound to no rule or schedule"
                assert set(sources) <= writers_of.get(lid, set()), f"{lid}: {statement} names {sources}"
