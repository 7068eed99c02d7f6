"""Work done by someone else, hours later: the task token a `.waitForTaskToken` Task hands out, kept in our own table
under the work's key, and the answers that come back for it (docs/construct.md, "A step done by someone else").

The token never leaves the account. The task that hands the work over stores it with `hand_over`, which returns the
hand-over's request id (a digest of the token) for the task to send with the work; the party doing the work answers
by the key and that request id ("job 42, request 9f3c..., is done") through the pattern's entry point, which
turns the answer into SendTaskSuccess, SendTaskFailure or SendTaskHeartbeat. Each key has one row, the wait handed
over last, and what an answer does depends on it:

- another request id: the answer is for a hand-over a newer one replaced (a retried task, or a redriven execution,
  handed the same work over again). It is refused, so that it never reaches the wait it was not meant for.

- WAITING: the first success or failure is claimed on the row (a conditional write), then sent. A heartbeat is sent.
- ANSWERED, with the same answer: a repeat, which does nothing (it is sent again if its first sending failed).
  A different answer is refused, since the work has one outcome.
- CLOSED: the task no longer takes answers (Step Functions said the token expired or its task closed: it timed out,
  or the execution ended). The answer is refused, and the workflow has already dealt with the wait on its own.
- no row: an unknown key, refused.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from botocore.exceptions import ClientError

from fire_and_forget.runtime.errors import aws_errors_as_transient, error_code

KEY_ATTRIBUTE = "key"
# What Step Functions answers for a token that will take no answer (SendTaskSuccess, SendTaskFailure,
# SendTaskHeartbeat: TaskTimedOut "the task token has either expired or the task associated with the token has
# already been closed"; InvalidToken; TaskDoesNotExist). Whichever of the three it is, the wait is over.
CLOSED_TOKEN_CODES = frozenset({"TaskTimedOut", "InvalidToken", "TaskDoesNotExist"})
REQUEST_ID_LENGTH = 32  # hex digits of the token's SHA-256 kept as the hand-over's request id
# A row outlives its wait by this long (TTL), so that a late or repeated answer still finds it and is told why.
KEPT_AFTER_TIMEOUT_SECONDS = 7 * 24 * 3600
# Step Functions' limits for SendTaskFailure's error and cause (API_SendTaskFailure.html).
MAX_ERROR = 256
MAX_CAUSE = 32_768


class WaitStatus(StrEnum):
    WAITING = "WAITING"
    ANSWERED = "ANSWERED"
    CLOSED = "CLOSED"


class AnswerKind(StrEnum):
    SUCCESS = "success"
    FAILURE = "failure"
    HEARTBEAT = "heartbeat"


class Verdict(StrEnum):
    """What became of an answer; the entry point maps each to an HTTP status (callbacks/entry_point.py)."""

    DELIVERED = "delivered"  # sent to Step Functions: the workflow goes on with it
    REPEATED = "repeated"  # the same answer was delivered before: nothing done
    UNKNOWN = "unknown"  # no wait under this key
    CONFLICT = "conflict"  # the wait was answered before, differently
    CLOSED = "closed"  # the wait is over (timed out, or its execution ended): the workflow has dealt with it
    SUPERSEDED = "superseded"  # for a hand-over of this key that a newer one replaced


@dataclass(frozen=True)
class Answer:
    """One answer for the wait under `key` that hand-over `request` started: success with its output, failure with
    an error name and cause, or a heartbeat (still working)."""

    key: str
    request: str
    kind: AnswerKind
    output: Mapping[str, Any] | None = None
    error: str | None = None
    cause: str | None = None

    def __post_init__(self) -> None:
        if not self.key:
            raise ValueError("an answer names the key of the work it answers for")
        if not self.request:
            raise ValueError("an answer names the request it answers (the id the hand-over sent with the work)")
        if self.kind is AnswerKind.FAILURE and not self.error:
            raise ValueError("a failure names its error (the name the workflow's Catch sees)")
        if self.error is not None and len(self.error) > MAX_ERROR:
            raise ValueError(f"error is {len(self.error)} characters, over Step Functions' {MAX_ERROR}")
        if self.cause is not None and len(self.cause) > MAX_CAUSE:
            raise ValueError(f"cause is {len(self.cause)} characters, over Step Functions' {MAX_CAUSE}")

    @property
    def fingerprint(self) -> str:
        """The same answer sent twice has the same fingerprint; a heartbeat has none (it is never recorded)."""
        canonical = json.dumps({"kind": self.kind.value, "output": self.output, "error": self.error,
                                "cause": self.cause}, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Reply:
    verdict: Verdict
    key: str
    detail: str

    def as_dict(self) -> dict[str, str]:
        return {"verdict": self.verdict.value, "key": self.key, "detail": self.detail}


class CallbackWaits:
    """The waits table (partition key `key`, TTL attribute `expiresAt`) and Step Functions' task-token API (`sfn`,
    which only answering needs: the task that hands the work over goes without)."""

    def __init__(self, dynamodb: Any, table_name: str, sfn: Any = None, clock: Callable[[], float] = time.time) -> None:
        self._dynamodb = dynamodb
        self._table = table_name
        self._sfn = sfn
        self._clock = clock

    # -- the task that hands the work over ---------------------------------------------------------------------

    def hand_over(self, key: str, token: str, execution_arn: str, state: str, timeout_seconds: int) -> str:
        """Keep `token` as the one that answers for `key` and return the request id to send with the work: a new
        attempt of the task, or a new execution of the same work, replaces the wait, and only answers with the new
        request id reach it."""
        now = int(self._clock())
        request = request_id(token)
        with aws_errors_as_transient("record the task token"):
            self._dynamodb.put_item(TableName=self._table, Item={
                KEY_ATTRIBUTE: {"S": key},
                "token": {"S": token},
                "request": {"S": request},
                "status": {"S": WaitStatus.WAITING.value},
                "executionArn": {"S": execution_arn},
                "state": {"S": state},
                "handedOverAt": {"N": str(now)},
                "expiresAt": {"N": str(now + timeout_seconds + KEPT_AFTER_TIMEOUT_SECONDS)},
            })
        return request

    # -- the entry point ---------------------------------------------------------------------------------------

    def answer(self, answer: Answer) -> Reply:
        """Deliver `answer` to the task waiting under its key, at most once; see the module docstring."""
        row = self._row(answer.key)
        if row is None:
            return Reply(Verdict.UNKNOWN, answer.key, "no work is waiting under this key")
        if row.get("request", {}).get("S") != answer.request:
            return Reply(Verdict.SUPERSEDED, answer.key, "this key waits for another request now: the work was "
                                                         "handed over again, answer the latest request")
        status = WaitStatus(row["status"]["S"])
        if status is WaitStatus.CLOSED:
            return self._closed(answer.key, row)
        if answer.kind is AnswerKind.HEARTBEAT:
            if status is WaitStatus.ANSWERED:
                return Reply(Verdict.REPEATED, answer.key,
                             "the work was already answered; the heartbeat changes nothing")
            return self._send(answer, row)
        if status is WaitStatus.ANSWERED:
            return self._answered_before(answer, row)
        if not self._claim(answer, row["token"]["S"]):
            # Another answer won the row between the read and the claim: judge this one against it.
            return self.answer(answer)
        return self._send(answer, row)

    def _answered_before(self, answer: Answer, row: Mapping[str, Any]) -> Reply:
        if row.get("answer", {}).get("S") != answer.fingerprint:
            recorded = row.get("answerKind", {}).get("S", "another answer")
            return Reply(Verdict.CONFLICT, answer.key, f"the work was already answered ({recorded}), differently")
        if row.get("delivered", {}).get("BOOL"):
            return Reply(Verdict.REPEATED, answer.key, "the same answer was delivered before")
        return self._send(answer, row)  # claimed, but its sending failed: send it now

    def _claim(self, answer: Answer, token: str) -> bool:
        try:
            with aws_errors_as_transient("claim the answer"):
                self._dynamodb.update_item(
                    TableName=self._table, Key={KEY_ATTRIBUTE: {"S": answer.key}},
                    UpdateExpression="SET #status = :answered, answer = :answer, answerKind = :kind, "
                                     "answeredAt = :now, delivered = :false",
                    ConditionExpression="#status = :waiting AND #token = :token",
                    ExpressionAttributeNames={"#status": "status", "#token": "token"},
                    ExpressionAttributeValues={
                        ":answered": {"S": WaitStatus.ANSWERED.value}, ":waiting": {"S": WaitStatus.WAITING.value},
                        ":answer": {"S": answer.fingerprint}, ":kind": {"S": answer.kind.value},
                        ":now": {"N": str(int(self._clock()))}, ":false": {"BOOL": False}, ":token": {"S": token},
                    },
                )
        except ClientError as error:
            if error_code(error) == "ConditionalCheckFailedException":
                return False
            raise
        return True

    def _send(self, answer: Answer, row: Mapping[str, Any]) -> Reply:
        token = row["token"]["S"]
        try:
            with aws_errors_as_transient(f"send the {answer.kind.value} to Step Functions"):
                if answer.kind is AnswerKind.SUCCESS:
                    self._sfn.send_task_success(taskToken=token, output=json.dumps(answer.output or {}))
                elif answer.kind is AnswerKind.FAILURE:
                    self._sfn.send_task_failure(taskToken=token, error=answer.error or "",
                                                cause=answer.cause or "")
                else:
                    self._sfn.send_task_heartbeat(taskToken=token)
        except ClientError as error:
            if error_code(error) not in CLOSED_TOKEN_CODES:
                raise
            if answer.kind is AnswerKind.HEARTBEAT or not self._ended_with(answer, row):
                self._close(answer.key, token)
                return self._closed(answer.key, row)
            # An earlier sending of this claimed answer reached Step Functions (its response was lost, or the
            # delivery could not be recorded): the token is closed because of it.
        if answer.kind is not AnswerKind.HEARTBEAT:
            with aws_errors_as_transient("record the delivery"):
                self._dynamodb.update_item(
                    TableName=self._table, Key={KEY_ATTRIBUTE: {"S": answer.key}},
                    UpdateExpression="SET delivered = :true", ConditionExpression="#token = :token",
                    ExpressionAttributeNames={"#token": "token"},
                    ExpressionAttributeValues={":true": {"BOOL": True}, ":token": {"S": token}},
                )
        return Reply(Verdict.DELIVERED, answer.key, f"{answer.kind.value} delivered to {row['state']['S']}")

    def _ended_with(self, answer: Answer, row: Mapping[str, Any]) -> bool:
        """Whether the task that handed out the row's token ended with `answer`, by the execution's history: the
        TaskScheduled whose parameters hold the token, and the TaskSucceeded or TaskFailed that follows it
        (previousEventId leads back to it). A closed token says "expired or already closed", not which."""
        token = row["token"]["S"]
        with aws_errors_as_transient("read the execution's history"):
            pages = self._sfn.get_paginator("get_execution_history").paginate(
                executionArn=row["executionArn"]["S"], includeExecutionData=True)
            events = {event["id"]: event for page in pages for event in page["events"]}
        scheduled = {event_id for event_id, event in events.items() if event["type"] == "TaskScheduled"
                     and token in (event.get("taskScheduledEventDetails") or {}).get("parameters", "")}
        for event in events.values():
            ending = event["type"] in ("TaskSucceeded", "TaskFailed")
            if not ending or self._scheduled_by(event, events) not in scheduled:
                continue
            if event["type"] == "TaskSucceeded":
                output = (event.get("taskSucceededEventDetails") or {}).get("output") or "{}"
                return answer.kind is AnswerKind.SUCCESS and json.loads(output) == (answer.output or {})
            details = event.get("taskFailedEventDetails") or {}
            return answer.kind is AnswerKind.FAILURE and details.get("error") == answer.error
        return False

    @staticmethod
    def _scheduled_by(event: Mapping[str, Any], events: Mapping[int, Mapping[str, Any]]) -> int | None:
        """The TaskScheduled event a task's ending event follows from (through TaskStarted, TaskSubmitted)."""
        current = event
        while current.get("previousEventId") in events:
            current = events[current["previousEventId"]]
            if current["type"] == "TaskScheduled":
                return int(current["id"])
            if not current["type"].startswith("Task") or current["type"].endswith("StateEntered"):
                return None
        return None

    def _close(self, key: str, token: str) -> None:
        """The token will take no answer: say so on the row, unless a newer wait has replaced it meanwhile."""
        try:
            with aws_errors_as_transient("record the closed wait"):
                self._dynamodb.update_item(
                    TableName=self._table, Key={KEY_ATTRIBUTE: {"S": key}},
                    UpdateExpression="SET #status = :closed", ConditionExpression="#token = :token",
                    ExpressionAttributeNames={"#status": "status", "#token": "token"},
                    ExpressionAttributeValues={":closed": {"S": WaitStatus.CLOSED.value}, ":token": {"S": token}},
                )
        except ClientError as error:
            if error_code(error) != "ConditionalCheckFailedException":
                raise

    def _closed(self, key: str, row: Mapping[str, Any]) -> Reply:
        return Reply(Verdict.CLOSED, key, f"the wait in {row['state']['S']} is over (timed out, or its execution "
                                          "ended): the workflow has already dealt with it")

    def _row(self, key: str) -> dict[str, Any] | None:
        with aws_errors_as_transient("read the wait"):
            item: dict[str, Any] | None = self._dynamodb.get_item(
                TableName=self._table, Key={KEY_ATTRIBUTE: {"S": key}}, ConsistentRead=True).get("Item")
        return item


def request_id(token: str) -> str:
    """The id a hand-over sends with the work: it names the wait without giving the token away."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()[:REQUEST_ID_LENGTH]
