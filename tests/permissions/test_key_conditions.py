"""What the IAM simulator cannot judge of the key policies: their kms:EncryptionContext conditions.

@cloud-copilot/iam-simulate drops kms:EncryptionContext:* keys from a request, so the matrix judges each key policy
without those conditions (Architecture.resource_policy). Here the real statements are evaluated on the resolved
template for the KMS requests SQS makes when EventBridge delivers to a rule target or its DLQ, under both readings
of AWS's documentation of aws:SourceAccount / aws:SourceArn in such a request (docs/design.md, "Encryption and the
key policy"): this
account's queues allowed, every other resource denied.
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Any

import pytest

from tests.permissions.architecture import Architecture
from tests.permissions.checks import kms_via
from tests.permissions.resolver import ACCOUNT, OTHER_ACCOUNT, REGION, arn

EVENTS = "events.amazonaws.com"
DELIVERY_CALLS = ("kms:GenerateDataKey", "kms:Decrypt")  # what a producer of an SSE-KMS queue needs
SQS_CONTEXT = "kms:EncryptionContext:aws:sqs:arn"


def _values(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def _holds(condition: dict[str, Any], context: dict[str, str]) -> bool:
    """IAM's evaluation of one Condition block, for the operators a key policy here uses (any other fails loudly)."""
    lowered = {k.lower(): v for k, v in context.items()}  # condition keys are case-insensitive
    for operator, keys in condition.items():
        base = operator.removesuffix("IfExists")
        if base not in ("StringEquals", "StringLike", "ArnEquals", "ArnLike"):
            raise AssertionError(f"the evaluator does not model {operator}")
        for key, expected in keys.items():
            actual = lowered.get(key.lower())
            if actual is None:
                if base == operator:  # a key absent from the request fails a condition without IfExists
                    return False
                continue
            like = base.endswith("Like")
            if not any(fnmatchcase(actual, pattern) if like else actual == pattern for pattern in _values(expected)):
                return False
    return True


def _grants(statement: dict[str, Any], action: str) -> bool:
    return any(fnmatchcase(action, pattern) for pattern in _values(statement["Action"]))


def _services(statement: dict[str, Any]) -> list[str]:
    principal = statement.get("Principal")
    return _values(principal.get("Service", [])) if isinstance(principal, dict) else []


def allowed(policy: dict[str, Any], action: str, context: dict[str, str]) -> bool:
    statements = [s for s in policy["Statement"] if EVENTS in _services(s) and _grants(s, action)]
    assert all(s["Effect"] == "Allow" for s in statements), "a Deny would need modelling here"
    return any(_holds(s.get("Condition", {}), context) for s in statements)


@pytest.fixture(scope="module")
def deliveries(full_template: dict[str, Any]) -> list[tuple[str, str, str, dict[str, Any]]]:
    """(rule ARN, queue, queue ARN, its key's policy as deployed) for every rule target and target DLQ."""
    a = Architecture(full_template)
    found = []
    for rule, res in a.of_type("AWS::Events::Rule").items():
        for target in res["Properties"].get("Targets", []):
            for value in (target["Arn"], target.get("DeadLetterConfig", {}).get("Arn")):
                lid = a.lid(value) if value is not None else None
                if lid is None or a.resources[lid]["Type"] != "AWS::SQS::Queue":
                    continue
                key = a.key_of(lid)
                assert key is not None, f"{lid} is not SSE-KMS"
                policy = a.resolver.resolve(a.props(key)["KeyPolicy"])
                found.append((a.att(rule), lid, a.att(lid), policy))
    assert len(found) >= 2, "the failure rule's queue and its target DLQ"
    return found


READINGS = {
    "aws:Source* in the request": lambda rule: {"aws:SourceAccount": ACCOUNT, "aws:SourceArn": rule} | kms_via("sqs"),
    "no aws:Source* in the request": lambda rule: kms_via("sqs"),
    "neither aws:Source* nor kms:ViaService": lambda rule: {},
}


@pytest.mark.parametrize("reading", READINGS)
def test_eventbridge_may_use_the_key_for_each_queue_it_delivers_to(
    deliveries: list[tuple[str, str, str, dict[str, Any]]], reading: str
) -> None:
    for rule, queue, queue_arn, policy in deliveries:
        context = READINGS[reading](rule) | {SQS_CONTEXT: queue_arn}
        for action in DELIVERY_CALLS:
            assert allowed(policy, action, context), f"{queue}: {action} refused with {reading}"


@pytest.mark.parametrize("reading", READINGS)
@pytest.mark.parametrize(
    ("why", "context"),
    [
        ("another account's queue", {SQS_CONTEXT: arn("sqs", "TheirQueue", account=OTHER_ACCOUNT)}),
        ("a queue in another region", {SQS_CONTEXT: arn("sqs", "TheirQueue", region="eu-west-1")}),
        ("this account's topic", {"kms:EncryptionContext:aws:sns:topicArn": arn("sns", "AnyTopic")}),
        ("no encryption context", {}),
    ],
)
def test_eventbridge_may_not_use_the_key_for_anything_else(
    deliveries: list[tuple[str, str, str, dict[str, Any]]], reading: str, why: str, context: dict[str, str]
) -> None:
    assert REGION != "eu-west-1"
    for rule, queue, _queue_arn, policy in deliveries:
        for action in DELIVERY_CALLS:
            assert not allowed(policy, action, READINGS[reading](rule) | context), f"{queue}'s key: {why}, {reading}"


def test_eventbridge_may_not_use_the_key_for_another_account_when_the_request_says_so(
    deliveries: list[tuple[str, str, str, dict[str, Any]]],
) -> None:
    for _rule, queue, queue_arn, policy in deliveries:
        context = {"aws:SourceAccount": OTHER_ACCOUNT, SQS_CONTEXT: queue_arn} | kms_via("sqs")
        assert not allowed(policy, "kms:GenerateDataKey", context), queue
        assert not allowed(policy, "kms:GenerateDataKey", {SQS_CONTEXT: queue_arn} | kms_via("sns")), queue


def test_eventbridge_gets_no_more_of_the_key_than_a_queue_producer_needs(
    deliveries: list[tuple[str, str, str, dict[str, Any]]],
) -> None:
    for _rule, queue, _queue_arn, policy in deliveries:
        granted = {a for s in policy["Statement"] if EVENTS in _services(s) for a in _values(s["Action"])}
        assert granted <= {"kms:GenerateDataKey", "kms:GenerateDataKey*", "kms:Decrypt"}, (queue, granted)
