"""The callback waits (fire_and_forget/runtime/callbacks.py) on moto's DynamoDB, against a Step Functions of this
module's own that keeps the task-token rules of the API pages: a token takes one SendTaskSuccess or SendTaskFailure
and is closed after it (API_SendTaskSuccess.html, API_SendTaskFailure.html: TaskTimedOut "the task token has either
expired or the task associated with the token has already been closed"), a heartbeat is taken while it is open
(API_SendTaskHeartbeat.html), an unknown token is InvalidToken.

The chosen cases first, then the interleavings: hand-overs (a retried task, a redriven execution), answers to any
request ever sent, repeated or different, Step Functions throttling, a call to it or to DynamoDB taking effect with
its response lost, or the task timing out in between. The accounting
is the fake Step Functions' own (what each token received) and the requests this module handed out, none of it read
from the table: checked after every step, no token takes two outcomes, an outcome reaches only the token of the
request it answers, every DELIVERED verdict is one the token received, and no answer is told CLOSED for a token that
took an outcome (the history decides when Step Functions' "closed" cannot).

Bounds: Hypothesis, 25 steps per run, `examples(100)` runs (five times as many in `make wide`).
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


LOST = "ResponseLost"  # in `fail_next`: the call takes effect, then fails for its caller with a 5xx


def client_error(code: str, operation: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": code}}, operation)


@dataclass
class TaskTokens:
    """Step Functions' side of task tokens, with faults to order: `fail_next` codes are raised by the next calls."""

    open: set[str] = field(default_factory=set)
    outcomes: dict[str, list[tuple[str, Any]]] = field(default_factory=dict)
    heartbeats: dict[str, int] = field(default_factory=dict)
    fail_next: list[str] = field(default_factory=list)
    lose_response: bool = False  # the call took effect, and its caller gets a 5xx
    history_reads: int = 0

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
        return self._answered("SendTaskSuccess")

    def send_task_failure(self, *, taskToken: str, error: str, cause: str) -> dict[str, Any]:
        self._take(taskToken, "SendTaskFailure")
        self.outcomes[taskToken].append(("failure", (error, cause)))
        self.open.discard(taskToken)
        return self._answered("SendTaskFailure")

    def _answered(self, operation: str) -> dict[str, Any]:
        if self.lose_response:
            self.lose_response = False
            raise client_error("ServiceUnavailable", operation)
        return {}

    def send_task_heartbeat(self, *, taskToken: str) -> dict[str, Any]:
        self._take(taskToken, "SendTaskHeartbeat")
        self.heartbeats[taskToken] += 1
        return self._answered("SendTaskHeartbeat")

    def _take(self, token: str, operation: str) -> None:
        code = self.fail_next.pop(0) if self.fail_next else None
        if code is not None and code != LOST:
            raise client_error(code, operation)
        if token not in self.outcomes:
            raise client_error("InvalidToken", operation)
        if token not in self.open:
            raise client_error("TaskTimedOut", operation)
        self.lose_response = code == LOST  # only a call that takes effect can lose its response

    def get_paginator(self, operation: str) -> Any:
        """GetExecutionHistory's pages, as Step Functions writes a callback Task's events: TaskScheduled with the
        token in its parameters, TaskStarted, then TaskSucceeded, TaskFailed or TaskTimedOut, each pointing back
        (previousEventId). One execution holds every token here, in hand-over order."""
        assert operation == "get_execution_history"
        events: list[dict[str, Any]] = []
        for token, outcomes in self.outcomes.items():
            base = len(events) + 1
            parameters = json.dumps({"FunctionName": "book", "Payload": {"taskToken": token}})
            events += [
                {"id": base, "type": "TaskStateEntered", "previousEventId": base - 1},
                {"id": base + 1, "type": "TaskScheduled", "previousEventId": base,
                 "taskScheduledEventDetails": {"resourceType": "lambda", "resource": "invoke.waitForTaskToken",
                                               "parameters": parameters}},
                {"id": base + 2, "type": "TaskStarted", "previousEventId": base + 1},
            ]
            for kind, payload in outcomes:
                ending = ({"type": "TaskSucceeded", "taskSucceededEventDetails": {"output": json.dumps(payload)}}
                          if kind == "success" else
                          {"type": "TaskFailed", "taskFailedEventDetails": {"error": payload[0], "cause": payload[1]}})
                events.append({"id": len(events) + 1, "previousEventId": base + 2, **ending})
            if not outcomes and token not in self.open:
                events.append({"id": len(events) + 1, "previousEventId": base + 2, "type": "TaskTimedOut"})
        self.history_reads += 1

        class Pages:
            def paginate(self, **_: Any) -> list[dict[str, Any]]:
                return [{"events": events[:3]}, {"events": events[3:]}]

        return Pages()


class LossyDynamoDB:
    """The DynamoDB client, with faults to order: each operation named in `fail_next` fails with a 5xx and does
    nothing; each named in `lose_next` takes effect, then fails for its caller with a 5xx (what a dropped connection
    after the write looks like)."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.fail_next: list[str] = []
        self.lose_next: list[str] = []

    def __getattr__(self, operation: str) -> Any:
        call = getattr(self.client, operation)

        def lossy(**kwargs: Any) -> Any:
            if operation in self.fail_next:
                self.fail_next.remove(operation)
                raise client_error("ServiceUnavailable", operation)
            response = call(**kwargs)
            if operation in self.lose_next:
                self.lose_next.remove(operation)
                raise client_error("ServiceUnavailable", operation)
            return response

        return lossy


def create_table(client: Any) -> None:
    client.create_table(TableName=TABLE, BillingMode="PAY_PER_REQUEST",
                        AttributeDefinitions=[{"AttributeName": "key", "AttributeType": "S"}],
                        KeySchema=[{"AttributeName": "key", "KeyType": "HASH"}])


@pytest.fixture
def dynamodb() -> Iterator[Any]:
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        create_table(client)
        yield LossyDynamoDB(client)


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


def test_a_delivery_whose_recording_was_lost_is_found_in_the_history_when_the_answer_comes_again(
        waits: CallbackWaits, sfn: TaskTokens, dynamodb: LossyDynamoDB) -> None:
    request = hand_over(waits, sfn, "token-1")
    dynamodb.lose_next.append("update_item")  # the claim
    with pytest.raises(TransientError):
        waits.answer(success(request))
    # The claim took effect; the same answer again is sent, and its delivery cannot be recorded
    dynamodb.fail_next.append("update_item")
    with pytest.raises(TransientError):
        waits.answer(success(request))
    assert sfn.outcomes["token-1"] == [("success", BOOKED)]

    # Sent a third time: Step Functions says the token is closed, the history says by this very answer
    assert waits.answer(success(request)).verdict is Verdict.DELIVERED
    assert sfn.history_reads == 1
    assert (row(dynamodb)["status"]["S"], row(dynamodb)["delivered"]["BOOL"]) == ("ANSWERED", True)
    assert waits.answer(success(request)).verdict is Verdict.REPEATED
    assert sfn.outcomes["token-1"] == [("success", BOOKED)]


def test_a_send_whose_response_was_lost_is_delivered_once_when_the_answer_comes_again(
        waits: CallbackWaits, sfn: TaskTokens) -> None:
    request = hand_over(waits, sfn, "token-1")
    declined = Answer(KEY, request, AnswerKind.FAILURE, error="CarrierDeclined", cause="no slot")
    sfn.fail_next.append(LOST)

    with pytest.raises(TransientError):  # botocore's own retry meets the closed token the same way
        waits.answer(declined)

    assert waits.answer(declined).verdict is Verdict.DELIVERED
    assert sfn.outcomes["token-1"] == [("failure", ("CarrierDeclined", "no slot"))]


def test_a_claimed_answer_whose_task_timed_out_before_it_was_sent_is_closed(
        waits: CallbackWaits, sfn: TaskTokens, dynamodb: LossyDynamoDB) -> None:
    request = hand_over(waits, sfn, "token-1")
    sfn.fail_next.append("ThrottlingException")
    with pytest.raises(TransientError):
        waits.answer(success(request))
    sfn.time_out("token-1")

    assert waits.answer(success(request)).verdict is Verdict.CLOSED
    assert sfn.history_reads == 1  # the history said TaskTimedOut, not this answer
    assert row(dynamodb)["status"]["S"] == "CLOSED"
    assert sfn.outcomes["token-1"] == []


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
        client = boto3.client("dynamodb", region_name="us-east-1")
        create_table(client)
        self.dynamodb = LossyDynamoDB(client)
        self.sfn = TaskTokens()
        self.waits = CallbackWaits(self.dynamodb, TABLE, self.sfn, clock=lambda: NOW)
        self.tokens: list[str] = []  # in hand-over order
        self.requests: dict[str, str] = {}  # request id handed out -> its token
        self.latest: str | None = None  # the request of the last hand-over, if it returned one
        self.last: tuple[int, AnswerKind, int] | None = None  # the last answer's (pick, kind, variant)
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
        replaced = "put_item" not in self.dynamodb.fail_next  # fail_next strikes first: nothing written
        try:
            self.latest = self.waits.hand_over(KEY, token, EXECUTION, "BookCarrier", 3600)
            self.requests[self.latest] = token
        except TransientError:
            # The task failed before it sent the work: Step Functions closes its token. If the row was replaced
            # (the response lost), no request anybody holds is the one waiting; if not, the last one still is.
            self.sfn.time_out(token)
            if replaced:
                self.latest = None

    @rule()
    def time_out(self) -> None:
        if self.tokens:
            self.sfn.time_out(self.tokens[-1])

    @rule(code=st.sampled_from(["ThrottlingException", "ServiceUnavailable", LOST]))
    def fail_next_step_functions_call(self, code: str) -> None:
        self.sfn.fail_next.append(code)

    @rule(operation=st.sampled_from(["put_item", "get_item", "update_item"]), lost=st.booleans())
    def fail_next_dynamodb_call(self, operation: str, lost: bool) -> None:
        (self.dynamodb.lose_next if lost else self.dynamodb.fail_next).append(operation)

    @rule()
    def send_the_last_answer_again(self) -> None:
        """What a party does after a 503 (or a lost reply): the same answer again."""
        if self.last is not None:
            self.answer(*self.last)

    @rule(pick=st.integers(0, 8), kind=st.sampled_from(list(AnswerKind)), variant=st.integers(0, 1),
          retries=st.integers(0, 2))
    def answer(self, pick: int, kind: AnswerKind, variant: int, retries: int = 0) -> None:
        """One answer; on a 503 the party sends it again, up to `retries` times at once."""
        if not self.requests:
            return
        self.last = (pick, kind, variant)
        for _ in range(retries):
            if not self._answer_once(pick, kind, variant):
                return
        self._answer_once(pick, kind, variant)

    def _answer_once(self, pick: int, kind: AnswerKind, variant: int) -> bool:
        """Send the answer and judge the verdict; False when it got one, True on a 503."""
        request = list(self.requests)[pick % len(self.requests)]
        token = self.requests[request]
        answer = Answer(KEY, request, kind, output=OUTPUTS[variant] if kind is AnswerKind.SUCCESS else None,
                        error=f"Declined{variant}" if kind is AnswerKind.FAILURE else None)
        before = list(self.sfn.outcomes[token]), self.sfn.heartbeats[token]
        try:
            verdict = self.waits.answer(answer).verdict
        except TransientError:
            return True
        after = self.sfn.outcomes[token], self.sfn.heartbeats[token]
        if verdict is Verdict.DELIVERED:
            payload = answer.output if kind is AnswerKind.SUCCESS else (answer.error, "")
            self.delivered.append((token, kind.value, payload))
            if kind is AnswerKind.HEARTBEAT:
                assert after[1] == before[1] + 1, "DELIVERED, and Step Functions received no heartbeat"
            else:
                # this answer reached the token, now or when an earlier sending of it lost its response
                assert self.sfn.outcomes[token] == [(kind.value, payload)], "DELIVERED, and not this outcome"
        else:
            assert after == before, f"{verdict}, and Step Functions received something"
        if verdict is Verdict.CLOSED:
            assert self.sfn.outcomes[token] == [], "CLOSED, and the token had taken an outcome"
        if request != self.latest:
            assert verdict is Verdict.SUPERSEDED
        return False

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
        max_examples=examples(100), stateful_step_count=25, deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]))
