"""The callback waits (fire_and_forget/runtime/callbacks.py) on moto's DynamoDB, against a Step Functions of this
module's own that keeps the task-token rules of the API pages: a token takes one SendTaskSuccess or SendTaskFailure
and is closed after it (API_SendTaskSuccess.html, API_SendTaskFailure.html: TaskTimedOut "the task token has either
expired or the task associated with the token has already been closed"), a heartbeat is taken while it is open
(API_SendTaskHeartbeat.html), an unknown token is InvalidToken.

The chosen cases first, then the interleavings: hand-overs (a retried task, a redriven execution), answers to any
request ever sent, repeated or different, Step Functions throttling or the task timing out in between. The accounting
is the fake Step Functions' own (what each token received) and the requests this module handed out, none of it read
from the table: checked after every step, no token takes two outcomes, an outcome reaches only the token of the
request it answers, and every DELIVERED verdict is one the token received.

Bounds: Hypothesis, 25 steps per run, `examples(60)` runs (five times as many in `make wide`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test
from moto import mock_aws

from fire_and_forget.callbacks import entry_point
from fire_and_forget.runtime.callbacks import (
    KEPT_AFTER_TIMEOUT_SECONDS,
    Answer,
    AnswerKind,
    CallbackWaits,
    Verdict,
    request_id,
)
from fire_and_forget.runtime.errors import TransientError
from tests.support.wide import examples

TABLE = "waits"
KEY = "ord-000042"
EXECUTION = "arn:aws:states:us-east-1:123456789012:execution:saga:e-1"
NOW = 1_900_000_000
BOOKED = {"carrier": "booked"}


def client_error(code: str, operation: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": code}}, operation)


@dataclass
class TaskTokens:
    """Step Functions' side of task tokens, with faults to order: `fail_next` codes are raised by the next calls."""

    open: set[str] = field(default_factory=set)
    outcomes: dict[str, list[tuple[str, Any]]] = field(default_factory=dict)
    heartbeats: dict[str, int] = field(default_factory=dict)
    fail_next: list[str] = field(default_factory=list)

    def issue(self, token: str) -> None:
        self.open.add(token)
        self.outcomes[token] = []
        self.heartbeats[token] = 0

    def time_out(self, token: str) -> None:
        self.open.discard(token)

    def send_task_success(self, *, taskToken: str, output: str) -> dict[str, Any]:
        self._take(taskToken, "SendTaskSuccess")
        self.outcomes[taskToken].append(("success", json.loads(output)))
        self.open.discard(taskToken)
        return {}

    def send_task_failure(self, *, taskToken: str, error: str, cause: str) -> dict[str, Any]:
        self._take(taskToken, "SendTaskFailure")
        self.outcomes[taskToken].append(("failure", (error, cause)))
        self.open.discard(taskToken)
        return {}

    def send_task_heartbeat(self, *, taskToken: str) -> dict[str, Any]:
        self._take(taskToken, "SendTaskHeartbeat")
        self.heartbeats[taskToken] += 1
        return {}

    def _take(self, token: str, operation: str) -> None:
        if self.fail_next:
            raise client_error(self.fail_next.pop(0), operation)
        if token not in self.outcomes:
            raise client_error("InvalidToken", operation)
        if token not in self.open:
            raise client_error("TaskTimedOut", operation)


@pytest.fixture
def dynamodb() -> Iterator[Any]:
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        client.create_table(TableName=TABLE, BillingMode="PAY_PER_REQUEST",
                            AttributeDefinitions=[{"AttributeName": "key", "AttributeType": "S"}],
                            KeySchema=[{"AttributeName": "key", "KeyType": "HASH"}])
        yield client


@pytest.fixture
def sfn() -> TaskTokens:
    return TaskTokens()


@pytest.fixture
def waits(dynamodb: Any, sfn: TaskTokens) -> CallbackWaits:
    return CallbackWaits(dynamodb, TABLE, sfn, clock=lambda: NOW)


def hand_over(waits: CallbackWaits, sfn: TaskTokens, token: str) -> str:
    sfn.issue(token)
    return waits.hand_over(KEY, token, EXECUTION, "BookCarrier", timeout_seconds=172_800)


def success(request: str, output: dict[str, Any] = BOOKED) -> Answer:
    return Answer(KEY, request, AnswerKind.SUCCESS, output=output)


def row(dynamodb: Any) -> dict[str, Any]:
    item: dict[str, Any] = dynamodb.get_item(TableName=TABLE, Key={"key": {"S": KEY}})["Item"]
    return item


# -- chosen cases -------------------------------------------------------------------------------------------------


def test_a_hand_over_keeps_the_token_under_the_key_and_names_the_wait_by_a_digest_of_it(
        waits: CallbackWaits, sfn: TaskTokens, dynamodb: Any) -> None:
    request = hand_over(waits, sfn, "token-1")

    assert request == request_id("token-1") != request_id("token-2")
    assert len(request) == 32 and "token-1" not in request
    item = row(dynamodb)
    assert {name: next(iter(value.values())) for name, value in item.items()} == {
        "key": KEY, "token": "token-1", "request": request, "status": "WAITING", "executionArn": EXECUTION,
        "state": "BookCarrier", "handedOverAt": str(NOW),
        "expiresAt": str(NOW + 172_800 + KEPT_AFTER_TIMEOUT_SECONDS)}


def test_an_answer_is_delivered_once_repeated_as_a_no_op_and_a_different_one_refused(
        waits: CallbackWaits, sfn: TaskTokens, dynamodb: Any) -> None:
    request = hand_over(waits, sfn, "token-1")

    assert waits.answer(success(request)).verdict is Verdict.DELIVERED
    assert waits.answer(success(request)).verdict is Verdict.REPEATED
    assert waits.answer(success(request, {"carrier": "other"})).verdict is Verdict.CONFLICT
    assert waits.answer(Answer(KEY, request, AnswerKind.FAILURE, error="CarrierDeclined")).verdict \
        is Verdict.CONFLICT
    assert waits.answer(Answer(KEY, request, AnswerKind.HEARTBEAT)).verdict is Verdict.REPEATED

    assert sfn.outcomes["token-1"] == [("success", BOOKED)]
    assert sfn.heartbeats["token-1"] == 0
    assert (row(dynamodb)["status"]["S"], row(dynamodb)["delivered"]["BOOL"]) == ("ANSWERED", True)


def test_a_failure_carries_its_error_and_cause(waits: CallbackWaits, sfn: TaskTokens) -> None:
    request = hand_over(waits, sfn, "token-1")

    reply = waits.answer(Answer(KEY, request, AnswerKind.FAILURE, error="CarrierDeclined", cause="no slot"))

    assert reply.verdict is Verdict.DELIVERED
    assert sfn.outcomes["token-1"] == [("failure", ("CarrierDeclined", "no slot"))]


def test_heartbeats_are_sent_while_the_wait_is_open_and_never_recorded(
        waits: CallbackWaits, sfn: TaskTokens, dynamodb: Any) -> None:
    request = hand_over(waits, sfn, "token-1")

    for _ in range(3):
        assert waits.answer(Answer(KEY, request, AnswerKind.HEARTBEAT)).verdict is Verdict.DELIVERED

    assert sfn.heartbeats["token-1"] == 3
    assert row(dynamodb)["status"]["S"] == "WAITING"
    assert "answer" not in row(dynamodb)


def test_an_answer_for_a_key_nobody_waits_under_is_unknown(waits: CallbackWaits, sfn: TaskTokens) -> None:
    reply = waits.answer(success("0" * 32))

    assert (reply.verdict, reply.key) == (Verdict.UNKNOWN, KEY)
    assert sfn.outcomes == {}


def test_an_answer_to_a_request_a_newer_hand_over_replaced_never_reaches_the_new_wait(
        waits: CallbackWaits, sfn: TaskTokens) -> None:
    first = hand_over(waits, sfn, "token-1")
    sfn.time_out("token-1")
    second = hand_over(waits, sfn, "token-2")

    for answer in (success(first), Answer(KEY, first, AnswerKind.HEARTBEAT)):
        assert waits.answer(answer).verdict is Verdict.SUPERSEDED

    assert sfn.outcomes == {"token-1": [], "token-2": []}
    assert waits.answer(success(second)).verdict is Verdict.DELIVERED
    assert sfn.outcomes["token-2"] == [("success", BOOKED)]


@pytest.mark.parametrize("code", ["TaskTimedOut", "InvalidToken", "TaskDoesNotExist"])
def test_a_wait_step_functions_closed_is_closed_for_every_later_answer(
        waits: CallbackWaits, sfn: TaskTokens, dynamodb: Any, code: str) -> None:
    request = hand_over(waits, sfn, "token-1")
    sfn.fail_next.append(code)

    assert waits.answer(success(request)).verdict is Verdict.CLOSED
    assert row(dynamodb)["status"]["S"] == "CLOSED"
    for answer in (success(request), Answer(KEY, request, AnswerKind.HEARTBEAT)):
        assert waits.answer(answer).verdict is Verdict.CLOSED
    assert sfn.outcomes["token-1"] == []


def test_a_closed_token_does_not_close_the_wait_that_replaced_it(
        waits: CallbackWaits, sfn: TaskTokens, dynamodb: Any) -> None:
    # A heartbeat for the old wait reads its row, then a new hand-over replaces the row before Step Functions
    # answers that the old token is closed: the new wait stays open.
    first = hand_over(waits, sfn, "token-1")
    sfn.time_out("token-1")
    original = sfn.send_task_heartbeat

    def replaced_meanwhile(*, taskToken: str) -> dict[str, Any]:
        hand_over(waits, sfn, "token-2")
        return original(taskToken=taskToken)

    sfn.send_task_heartbeat = replaced_meanwhile  # type: ignore[method-assign]

    assert waits.answer(Answer(KEY, first, AnswerKind.HEARTBEAT)).verdict is Verdict.CLOSED
    assert (row(dynamodb)["status"]["S"], row(dynamodb)["token"]["S"]) == ("WAITING", "token-2")


def test_a_throttled_send_is_a_transient_error_and_the_same_answer_sent_again_is_delivered_once(
        waits: CallbackWaits, sfn: TaskTokens, dynamodb: Any) -> None:
    request = hand_over(waits, sfn, "token-1")
    sfn.fail_next.append("ThrottlingException")

    with pytest.raises(TransientError):
        waits.answer(success(request))
    # Claimed, not delivered: a different answer is still refused, the same one goes through.
    assert (row(dynamodb)["status"]["S"], row(dynamodb)["delivered"]["BOOL"]) == ("ANSWERED", False)
    assert waits.answer(success(request, {"carrier": "other"})).verdict is Verdict.CONFLICT

    assert waits.answer(success(request)).verdict is Verdict.DELIVERED
    assert waits.answer(success(request)).verdict is Verdict.REPEATED
    assert sfn.outcomes["token-1"] == [("success", BOOKED)]


def test_two_different_answers_racing_for_one_wait_deliver_one_and_refuse_the_other(
        dynamodb: Any, sfn: TaskTokens) -> None:
    # The second answer reads the row while it is WAITING; the first claims it before the second's claim.
    class ClaimedMeanwhile:
        def __init__(self) -> None:
            self.race: Answer | None = None

        def __getattr__(self, name: str) -> Any:
            return getattr(dynamodb, name)

        def get_item(self, **kwargs: Any) -> Any:
            read = dynamodb.get_item(**kwargs)
            race, self.race = self.race, None
            if race is not None:
                assert CallbackWaits(dynamodb, TABLE, sfn).answer(race).verdict is Verdict.DELIVERED
            return read

    racing = ClaimedMeanwhile()
    waits = CallbackWaits(racing, TABLE, sfn, clock=lambda: NOW)
    request = hand_over(waits, sfn, "token-1")
    declined = Answer(KEY, request, AnswerKind.FAILURE, error="CarrierDeclined")
    racing.race = declined

    assert waits.answer(success(request)).verdict is Verdict.CONFLICT
    assert sfn.outcomes["token-1"] == [("failure", ("CarrierDeclined", ""))]


@pytest.mark.parametrize(("fields", "message"), [
    ({"key": "", "request": "r", "kind": AnswerKind.SUCCESS}, "key"),
    ({"key": KEY, "request": "", "kind": AnswerKind.SUCCESS}, "request"),
    ({"key": KEY, "request": "r", "kind": AnswerKind.FAILURE}, "error"),
    ({"key": KEY, "request": "r", "kind": AnswerKind.FAILURE, "error": "E" * 257}, "256"),
    ({"key": KEY, "request": "r", "kind": AnswerKind.FAILURE, "error": "E", "cause": "c" * 32_769}, "32768"),
])
def test_an_answer_out_of_step_functions_rules_is_a_value_error(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Answer(**fields)


# -- the entry point's side ---------------------------------------------------------------------------------------


def test_every_verdict_has_an_http_status_and_every_refusal_is_counted() -> None:
    assert set(entry_point.STATUS) == set(Verdict)
    refused = {verdict for verdict in Verdict if entry_point.STATUS[verdict] >= 400}
    assert refused == set(entry_point.REFUSED) == {Verdict.UNKNOWN, Verdict.CONFLICT, Verdict.CLOSED,
                                                   Verdict.SUPERSEDED}


# -- the interleavings --------------------------------------------------------------------------------------------

OUTPUTS = [{"carrier": "booked"}, {"carrier": "other"}]


class WaitsInterleavings(RuleBasedStateMachine):
    """Hand-overs, answers to any request ever handed out, timeouts and throttling, in any order."""

    def __init__(self) -> None:
        super().__init__()
        self.mock = mock_aws()
        self.mock.start()
        self.dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        self.dynamodb.create_table(TableName=TABLE, BillingMode="PAY_PER_REQUEST",
                                   AttributeDefinitions=[{"AttributeName": "key", "AttributeType": "S"}],
                                   KeySchema=[{"AttributeName": "key", "KeyType": "HASH"}])
        self.sfn = TaskTokens()
        self.waits = CallbackWaits(self.dynamodb, TABLE, self.sfn, clock=lambda: NOW)
        self.tokens: list[str] = []  # in hand-over order
        self.requests: dict[str, str] = {}  # request id handed out -> its token
        self.delivered: list[tuple[str, str, Any]] = []  # (token, kind, payload) of every DELIVERED verdict

    def teardown(self) -> None:
        self.mock.stop()

    @rule()
    def hand_over(self) -> None:
        token = f"token-{len(self.tokens) + 1}"
        if self.tokens:
            self.sfn.time_out(self.tokens[-1])  # a new hand-over comes after the old wait ended
        self.sfn.issue(token)
        self.tokens.append(token)
        self.requests[self.waits.hand_over(KEY, token, EXECUTION, "BookCarrier", 3600)] = token

    @rule()
    def time_out(self) -> None:
        if self.tokens:
            self.sfn.time_out(self.tokens[-1])

    @rule(code=st.sampled_from(["ThrottlingException", "ServiceUnavailable"]))
    def throttle_next_call(self, code: str) -> None:
        self.sfn.fail_next.append(code)

    @rule(pick=st.integers(0, 8), kind=st.sampled_from(list(AnswerKind)), variant=st.integers(0, 1))
    def answer(self, pick: int, kind: AnswerKind, variant: int) -> None:
        if not self.requests:
            return
        request = list(self.requests)[pick % len(self.requests)]
        token = self.requests[request]
        answer = Answer(KEY, request, kind, output=OUTPUTS[variant] if kind is AnswerKind.SUCCESS else None,
                        error=f"Declined{variant}" if kind is AnswerKind.FAILURE else None)
        before = list(self.sfn.outcomes[token]), self.sfn.heartbeats[token]
        try:
            verdict = self.waits.answer(answer).verdict
        except TransientError:
            return
        after = self.sfn.outcomes[token], self.sfn.heartbeats[token]
        if verdict is Verdict.DELIVERED:
            payload = answer.output if kind is AnswerKind.SUCCESS else (answer.error, "")
            self.delivered.append((token, kind.value, payload))
            assert after != before, "DELIVERED, and Step Functions received nothing"
            if kind is not AnswerKind.HEARTBEAT:
                assert self.sfn.outcomes[token][-1] == (kind.value, payload)
        else:
            assert after == before, f"{verdict}, and Step Functions received something"
        if request != next(r for r, t in self.requests.items() if t == self.tokens[-1]):
            assert verdict is Verdict.SUPERSEDED

    @invariant()
    def no_token_takes_two_outcomes(self) -> None:
        for token, outcomes in self.sfn.outcomes.items():
            assert len(outcomes) <= 1, (token, outcomes)

    @invariant()
    def outcomes_are_the_delivered_answers_for_their_own_request(self) -> None:
        received = sorted((token, kind, json.dumps(payload)) for token, outcomes in self.sfn.outcomes.items()
                          for kind, payload in outcomes)
        delivered = sorted((token, kind, json.dumps(payload)) for token, kind, payload in self.delivered
                           if kind != AnswerKind.HEARTBEAT.value)
        # An answer may be received and its delivery not recorded (the recording call throttled): it is DELIVERED
        # when sent again, never received twice.
        assert set(delivered) <= set(received)


def test_no_interleaving_delivers_two_outcomes_or_an_answer_to_another_request() -> None:
    run_state_machine_as_test(WaitsInterleavings, settings=settings(
        max_examples=examples(60), stateful_step_count=25, deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]))
