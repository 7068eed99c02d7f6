"""Every call of the architecture, judged by a real IAM policy simulator on the synthesized template's policies."""

from __future__ import annotations

from typing import Any

from tests.permissions.checks import CHAT_CHANNELS
from tests.permissions.matrix import MatrixBuilder, uncovered
from tests.permissions.operator import GRANTED_BEYOND_OPS, OPS_CALLS, ops_boto3_calls

ALLOWED = "Allowed"
DENIED = {"ExplicitlyDenied", "ImplicitlyDenied"}


def test_every_check_gets_the_verdict_aws_would_give(matrix: MatrixBuilder, verdicts: dict[str, Any]) -> None:
    # Given every call derived from the template, When the simulator judges each on all its policies
    wrong = []
    for check in matrix.checks:
        verdict = verdicts[check.id]
        if verdict["result"] == "Error":
            wrong.append(f"{check.id}: simulator refused the request: {verdict.get('errors')}")
        elif (verdict["result"] == ALLOWED) != check.allowed:
            wrong.append(f"{check.id}: got {verdict['result']} ({verdict.get('decisive')})")
    # Then each one the architecture needs is allowed, and each one it must not make is denied
    assert not wrong, "\n".join(wrong)


def test_matrix_judges_both_ways_for_every_kind_of_principal(matrix: MatrixBuilder, stack_name: str) -> None:
    principals = {c.principal.split("/")[0] if c.principal.startswith("arn:") else c.principal for c in matrix.checks}
    for service in (
        "events.amazonaws.com",
        "cloudwatch.amazonaws.com",
        "sns.amazonaws.com",
        "pipes.amazonaws.com",
        "states.amazonaws.com",
        "lambda.amazonaws.com",
        "chatbot.amazonaws.com",
    ):
        assert service in principals, service
    for why in (
        "another account's copy",
        "without TLS",
        "on behalf of another account",
        "a function outside the saga",
        "another state machine",
        "not an ff-ops call",
    ):
        assert any(c.why == why and not c.allowed for c in matrix.checks), why
    # Every stack has a Reconciler, whose environment names only the deliveries table: the others stand outside it.
    outside = {c.principal for c in matrix.checks if c.why.endswith("is not in its environment")}
    assert any("PipelineHealingReconciler" in principal for principal in outside), stack_name
    for why in ("a function it does not run", "a queue that is not its DLQ", "a queue that is not its source",
                "not a compensation", "a table call it never makes", "a queue it does not redrive to",
                "another version of its function", "an alias of its function",
                "on behalf of another resource of this account", "key use for another account",
                "key use through another service", "a topic it does not announce on"):
        assert any(c.why == why and not c.allowed for c in matrix.checks), why
    assert "scheduler.amazonaws.com" in principals


def test_each_chat_channels_role_is_judged_notifications_only(matrix: MatrixBuilder,
                                                                full_template: dict[str, Any]) -> None:
    # Given the full app, with a Slack and a Teams channel
    channels = {lid for kind in CHAT_CHANNELS for lid, resource in full_template["Resources"].items()
                if resource["Type"] == kind}
    assert len(channels) == len(CHAT_CHANNELS)
    # Then each one's role is denied what a channel member could try, by the simulator's verdicts
    for channel in channels:
        denied = {c.action for c in matrix.checks if c.edge == f"chatbot channel {channel} role" and not c.allowed}
        assert denied == {"sns:Publish", "sqs:ReceiveMessage", "states:StartExecution"}, channel


def test_every_role_target_alarm_action_and_dlq_of_the_template_is_in_the_matrix(matrix: MatrixBuilder) -> None:
    assert uncovered(matrix) == []


def test_every_boto3_call_of_ff_ops_is_in_the_matrix() -> None:
    # A new ff-ops call must be added to OPS_CALLS (and so to the operator policy) before it can ship.
    called = ops_boto3_calls()
    assert called <= set(OPS_CALLS) | set(GRANTED_BEYOND_OPS), called - set(OPS_CALLS) - set(GRANTED_BEYOND_OPS)
    assert set(OPS_CALLS) <= called, "OPS_CALLS names a call ff-ops no longer makes"


def test_alerts_topic_takes_each_delivering_service_only_for_this_account(
    matrix: MatrixBuilder, verdicts: dict[str, Any]
) -> None:
    publishes = [c for c in matrix.checks if c.principal.endswith(".amazonaws.com") and c.action == "sns:Publish"]
    services = {c.principal for c in publishes}
    assert "cloudwatch.amazonaws.com" in services  # every alarm action publishes to the topic
    for service in services:
        mine = [c for c in publishes if c.principal == service]
        assert any(c.allowed for c in mine) and any(not c.allowed for c in mine), service
        for check in mine:
            assert (verdicts[check.id]["result"] == ALLOWED) == check.allowed, check.id


def test_eventbridge_s_key_use_is_judged_with_and_without_source_keys(matrix: MatrixBuilder) -> None:
    # Given every KMS call EventBridge makes for a delivery (to a rule target and to its DLQ)
    key_calls = [c for c in matrix.checks if c.principal == "events.amazonaws.com" and c.action.startswith("kms:")]
    with_source = [c for c in key_calls if c.allowed and "aws:SourceAccount" in c.context]
    without_source = [c for c in key_calls if c.allowed and "aws:SourceAccount" not in c.context]
    # Then each is in the matrix both as if the KMS request carried aws:Source* and as if it did not
    assert with_source and len(without_source) == len(with_source)
    assert {(c.edge, c.action) for c in with_source} == {(c.edge, c.action) for c in without_source}


def test_the_carriers_answerer_may_answer_through_the_url_and_read_its_inbox_only(matrix: MatrixBuilder,
                                                                                stack_name: str) -> None:
    # Given the app with the carrier's confirmation: its answerer is judged on the URL, past it, and on the queues
    answerer = "arn:aws:iam::210987654321:role/carrier-answers"
    judged = {(c.action, c.why, c.allowed) for c in matrix.checks if c.principal == answerer}
    if stack_name != "FireAndForget":
        assert judged == set()  # the catalog has no callback step
        return
    assert {("lambda:InvokeFunctionUrl", "the answerer the deployment names", True),
            ("lambda:InvokeFunction", "the URL's own invocation", True),
            ("lambda:InvokeFunction", "invoking the function past its URL", False),
            ("lambda:InvokeFunctionUrl", "a URL without IAM auth", False),
            ("sqs:ReceiveMessage", "the answerer's inbox", True),
            ("kms:Decrypt", "the inbox is encrypted", True),
            ("sqs:ReceiveMessage", "a queue that is not its inbox", False)} <= judged
    answers = {c.action for c in matrix.checks if c.edge.startswith("entry point") and c.allowed}
    assert {"states:SendTaskSuccess", "states:SendTaskFailure", "states:SendTaskHeartbeat"} <= answers
