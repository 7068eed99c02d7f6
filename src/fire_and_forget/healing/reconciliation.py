"""Reconciliation: an execution that ended without the failure tail's record is compensated, recorded and announced.

TIMED_OUT and ABORTED executions stop wherever they were, and a FAILED one that died inside the failure tail
(HandleFailure or NotifyFailure after their retries, ClaimFailure) never finished recording or announcing. The
Reconciler reads the execution's history, runs the compensation of every step that was entered (a step that was
entered may have taken effect; compensations are idempotent and undo only what this execution owns), writes the
failure record in the tail's format (`fire-and-forget.failure.v1`, plus `reconciliation`), and announces it if a
person must act. It is fed by the failure-events queue and by a periodic sweep; both may see the same execution,
so every run claims the message's row in the deliveries table and moves it through CLAIMED -> RECORDED ->
ANNOUNCED with conditional writes: a second run finds the work done, or resumes where a crashed one stopped.

A timeout or an abort stops the execution, not the Lambda invocation its task had started: that invocation runs
on up to its function's timeout and may still commit. So a TIMED_OUT or ABORTED execution is compensated only once
every task invocation its history shows in flight has certainly ended (its start plus its function's timeout plus
IN_FLIGHT_MARGIN); until then `reconcile` claims the row (a late delivery claim of that execution is refused from
then on) and raises NotYetSettled, and the event comes back after the queue's visibility timeout.

Imports only boto3-level names and the runtime: it runs in the Reconciler function as
`fire_and_forget.healing.reconciliation`.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

from botocore.exceptions import ClientError

from fire_and_forget.healing.alerts import Alert, failure_alert
from fire_and_forget.runtime.errors import error_code, is_transient
from fire_and_forget.runtime.healing_policy import TIMEOUT_ERROR, HealingPolicy, attempt_of
from fire_and_forget.runtime.records import RECORD_KIND, parse_time
from fire_and_forget.runtime.tail import HANDLED_FAILURE_ERROR, TailState

TAIL_ENTRY, HANDLE_FAILURE = TailState.CLAIM_FAILURE, TailState.HANDLE_FAILURE
RECONCILABLE = frozenset({"FAILED", "TIMED_OUT", "ABORTED"})
STOPPED_MID_TASK = frozenset({"TIMED_OUT", "ABORTED"})  # a task's invocation may outlive these
# An invocation may begin after its TaskStarted event (the request in transit) and its Init phase may take up to
# 10 s before the function's timeout starts counting (lambda-runtime-environment.html): a minute covers both, and
# a task that is not a Lambda invocation (an SQS send, a DynamoDB write) ends well within it.
IN_FLIGHT_MARGIN = timedelta(seconds=60)
# The sweep's record of an execution it settled (keyed `settled#<executionArn>#<redriveCount>`), kept past the
# sweep's lookback so that no later sweep describes it again.
SETTLED_PREFIX = "settled#"
BATCH_GET_KEYS = 100  # BatchGetItem's maximum (API_BatchGetItem.html)
# A run holds the row this long; a run that died mid-way is resumed by the next one after it lapses.
LEASE_SECONDS = 300
MAX_CAUSE_CHARS = 4000  # of the cause kept on the row for a resumed announcement (the record keeps it whole)


class Stage(StrEnum):
    CLAIMED = "CLAIMED"
    RECORDED = "RECORDED"
    ANNOUNCED = "ANNOUNCED"


class Verdict(StrEnum):
    """What one reconcile call found and did."""

    RECONCILED = "reconciled"  # compensated, recorded (or found recorded) and announced when needed
    ALREADY_RECONCILED = "already-reconciled"  # another run (the event or the sweep) finished it
    HANDLED = "handled"  # the failure tail recorded and announced it (FailureRecorded)
    NOT_FAILED = "not-failed"  # running, succeeded, or being redriven
    NOT_OWNER = "not-owner"  # another execution owns the message: a duplicate that never claimed it did nothing


class ReconcileBusy(Exception):
    """Another run holds the execution's row: retry later (the queue redelivers, the next sweep comes)."""


class NotYetSettled(Exception):
    """A task invocation of the stopped execution may still be running: compensate once `settles_at` has passed."""

    def __init__(self, execution_arn: str, settles_at: datetime) -> None:
        super().__init__(f"{execution_arn}: a task invocation may run until {settles_at.isoformat()}")
        self.settles_at = settles_at


class CompensationRetryable(Exception):
    """A compensation failed transiently after the in-run retries: retry the whole reconcile later."""


@dataclass(frozen=True)
class Compensation:
    """The step a compensation undoes, the compensation's state name, and its function's ARN."""

    step: str
    state: str
    function_arn: str


@dataclass(frozen=True)
class ReconcilerSettings:
    pipeline: str
    environment: str
    title: str
    region: str
    state_machine_arn: str
    failure_dlq_url: str
    alerts_topic_arn: str
    deliveries_table: str
    compensations: tuple[Compensation, ...]  # in the order of their steps in the workflow
    claim_ttl_seconds: int
    # each Lambda task state -> its function's timeout in seconds: how long an invocation it started can run
    task_timeouts: Mapping[str, int] = field(default_factory=dict)
    compensation_attempts: int = 3
    compensation_backoff_seconds: float = 1.0

    @classmethod
    def from_environment(cls, env: Mapping[str, str]) -> ReconcilerSettings:
        return cls(
            pipeline=env["PIPELINE_NAME"],
            environment=env["ENVIRONMENT_NAME"],
            title=env["WORKFLOW_TITLE"],
            region=env["AWS_REGION"],
            state_machine_arn=env["STATE_MACHINE_ARN"],
            failure_dlq_url=env["FAILURE_DLQ_URL"],
            alerts_topic_arn=env["ALERTS_TOPIC_ARN"],
            deliveries_table=env["DELIVERIES_TABLE_NAME"],
            compensations=tuple(Compensation(*entry) for entry in json.loads(env.get("COMPENSATIONS", "[]"))),
            claim_ttl_seconds=int(env["DELIVERY_CLAIM_TTL_SECONDS"]),
            task_timeouts={state: int(limit) for state, limit in json.loads(env.get("TASK_TIMEOUTS", "{}")).items()},
            compensation_attempts=int(env.get("COMPENSATION_ATTEMPTS", "3")),
            compensation_backoff_seconds=float(env.get("COMPENSATION_BACKOFF_SECONDS", "1")),
        )


@dataclass(frozen=True)
class InFlight:
    """A task invocation the history shows started (or scheduled) and never ended: its state and its start."""

    state: str
    started: datetime


@dataclass(frozen=True)
class History:
    """What the execution's history says: the states entered in order, those left, the tail's input, and the task
    invocations still in flight when it stopped."""

    entered: tuple[str, ...]
    exited: frozenset[str]
    tail_input: dict[str, Any] | None  # what ClaimFailure / HandleFailure were entered with: {failure, ...}
    in_flight: tuple[InFlight, ...] = ()

    def settles_at(self, task_timeouts: Mapping[str, int]) -> datetime | None:
        """When every invocation in flight has certainly ended (None: none was in flight)."""
        ends = [task.started + timedelta(seconds=task_timeouts.get(task.state, 0)) + IN_FLIGHT_MARGIN
                for task in self.in_flight]
        return max(ends, default=None)

    @property
    def failed_state(self) -> str | None:
        """The last state entered and never left: where the execution stopped."""
        for name in reversed(self.entered):
            if name not in self.exited:
                return name
        return self.entered[-1] if self.entered else None

    @classmethod
    def from_events(cls, events: Sequence[Mapping[str, Any]]) -> History:
        entered: list[str] = []
        exited: set[str] = set()
        tail_input: dict[str, Any] | None = None
        by_id = {event.get("id"): event for event in events}
        open_tasks: dict[Any, InFlight] = {}  # id of a task's Scheduled or Started event -> the task
        for event in events:
            kind = str(event.get("type", ""))
            if kind.endswith("StateEntered"):
                details = event.get("stateEnteredEventDetails", {})
                entered.append(str(details.get("name")))
                if details.get("name") in (TAIL_ENTRY, HANDLE_FAILURE) and tail_input is None:
                    tail_input = _json_object(details.get("input"))
            elif kind.endswith("StateExited"):
                exited.add(str(event.get("stateExitedEventDetails", {}).get("name")))
            elif _task_event(kind, TASK_OPENINGS):
                # A Started event follows its Scheduled one (previousEventId): the task moves to the later id.
                earlier = open_tasks.pop(event.get("previousEventId"), None)
                state = earlier.state if earlier else _state_of(event, by_id)
                open_tasks[event.get("id")] = InFlight(state, _aware(event["timestamp"]))
            elif _task_event(kind, TASK_ENDINGS):
                open_tasks.pop(event.get("previousEventId"), None)
        return cls(tuple(entered), frozenset(exited), tail_input, tuple(open_tasks.values()))


@dataclass
class Result:
    verdict: Verdict
    execution_arn: str
    message_id: str | None = None
    status: str | None = None
    compensated: list[dict[str, Any]] = field(default_factory=list)
    manual_repair: bool = False
    recorded: bool = False  # this run wrote the failure record
    announced: bool = False  # this run published the announcement


class Reconciler:
    def __init__(self, *, sfn: Any, dynamodb: Any, sqs: Any, sns: Any, lambda_client: Any,
                 settings: ReconcilerSettings, policy: HealingPolicy,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self._sfn, self._dynamodb, self._sqs, self._sns, self._lambda = sfn, dynamodb, sqs, sns, lambda_client
        self._settings = settings
        self._policy = policy
        self._sleep = sleep

    # -- finding what to reconcile ------------------------------------------------------------------------------

    def sweep(self, now: datetime, lookback: timedelta, longest_run: timedelta) -> Iterator[str]:
        """ARNs of the executions that ended FAILED, TIMED_OUT or ABORTED in the lookback window and that no run has
        settled yet: one BatchGetItem per hundred of them decides, so a settled execution is never described again
        by a later sweep and the sweep's cost does not grow with the failures it already saw."""
        stopped = list(self._stopped(now, lookback, longest_run))
        settled = self._settled(stopped)
        for arn, redrives in stopped:
            if _settled_key(arn, redrives) not in settled:
                yield arn

    def _stopped(self, now: datetime, lookback: timedelta, longest_run: timedelta) -> Iterator[tuple[str, int]]:
        """(ARN, redriveCount) of each execution that stopped in the window.

        ListExecutions lists the most recent first, by start date (API_ListExecutions), so each status is read
        only until an execution that started before the window's start minus the longest an execution can run
        (its TimeoutSeconds): nothing older can have stopped inside the window.
        """
        since = now - lookback
        oldest_start = since - longest_run
        for status in sorted(RECONCILABLE):
            paginator = self._sfn.get_paginator("list_executions")
            for page in paginator.paginate(stateMachineArn=self._settings.state_machine_arn, statusFilter=status):
                executions = page["executions"]
                for execution in executions:
                    stopped = execution.get("stopDate")
                    if stopped is not None and _aware(stopped) >= since:
                        yield str(execution["executionArn"]), int(execution.get("redriveCount") or 0)
                if executions and _aware(executions[-1]["startDate"]) < oldest_start:
                    break

    def _settled(self, executions: Sequence[tuple[str, int]]) -> set[str]:
        """The settled keys among those executions' (read in batches; unprocessed keys are read again)."""
        keys = sorted({_settled_key(arn, redrives) for arn, redrives in executions})
        found: set[str] = set()
        for start in range(0, len(keys), BATCH_GET_KEYS):
            pending: dict[str, Any] = {self._settings.deliveries_table: {
                "Keys": [{"messageId": {"S": key}} for key in keys[start:start + BATCH_GET_KEYS]],
                "ProjectionExpression": "messageId", "ConsistentRead": True}}
            while pending:
                response = self._dynamodb.batch_get_item(RequestItems=pending)
                found |= {item["messageId"]["S"]
                          for item in response.get("Responses", {}).get(self._settings.deliveries_table, [])}
                pending = response.get("UnprocessedKeys") or {}
        return found

    # -- reconciling one execution --------------------------------------------------------------------------------

    def reconcile(self, execution_arn: str, *, via: str, now: datetime) -> Result:
        described = self._sfn.describe_execution(executionArn=execution_arn)
        result = self._reconcile(described, via=via, now=now)
        if result.verdict is not Verdict.NOT_FAILED:
            self._mark_settled(execution_arn, int(described.get("redriveCount") or 0), result.verdict, now)
        return result

    def _reconcile(self, described: Mapping[str, Any], *, via: str, now: datetime) -> Result:
        execution_arn = str(described["executionArn"])
        status = str(described["status"])
        if status not in RECONCILABLE or described.get("redriveStatus") == "NOT_REDRIVABLE_RUNNING":
            return Result(Verdict.NOT_FAILED, execution_arn, status=status)
        if status == "FAILED" and described.get("error") == HANDLED_FAILURE_ERROR:
            return Result(Verdict.HANDLED, execution_arn, status=status)
        execution_input = _json_value(described.get("input"))
        record = execution_input[0] if isinstance(execution_input, list) and execution_input else {}
        message_id = record.get("messageId") if isinstance(record, dict) else None
        if not isinstance(message_id, str):
            raise ValueError(f"{execution_arn}: its input is not the pipe's batch of one SQS record")
        row = self._claim(message_id, execution_arn, now)
        if row is None:
            return Result(Verdict.NOT_OWNER, execution_arn, message_id, status)
        if row.get("reconciliation") == Stage.ANNOUNCED:
            return Result(Verdict.ALREADY_RECONCILED, execution_arn, message_id, status)
        try:
            history = History.from_events(self._history(execution_arn))
            settles_at = history.settles_at(self._settings.task_timeouts) if status in STOPPED_MID_TASK else None
            if settles_at is not None and now < settles_at:
                raise NotYetSettled(execution_arn, settles_at)
            return self._settle(described, row, record, message_id, history, via=via, now=now)
        except Exception:
            # A failure this run saw (not a crash): let the retry in at once rather than after the lease. The row
            # stays claimed for reconciliation, so a late invocation of this execution cannot claim the message.
            self._release(message_id, execution_arn)
            raise

    def _settle(self, described: Mapping[str, Any], row: Mapping[str, Any], record: dict[str, Any],
                message_id: str, history: History, *, via: str, now: datetime) -> Result:
        execution_arn, status = str(described["executionArn"]), str(described["status"])
        result = Result(Verdict.RECONCILED, execution_arn, message_id, status)
        failure, compensation, manual_repair, recorded_by_tail = self._failure(described, history)
        if row.get("reconciliation") == Stage.RECORDED:
            summary = _json_object(row.get("summary")) or {}
            failure = summary.get("failure", failure)
            manual_repair = bool(summary.get("manualRepair", manual_repair))
            result.compensated = list(summary.get("compensated", []))
        else:
            if not recorded_by_tail:
                result.compensated = self._compensate(record, execution_arn, history)
                manual_repair = manual_repair or any(c["status"] != "COMPENSATED" for c in result.compensated)
                compensation = {"required": bool(result.compensated), "reconciled": result.compensated}
                self._record(record, described, failure, compensation, manual_repair,
                             reconciliation={"status": status, "via": via, "reconciledAt": _iso(now),
                                             "reason": _reason(status, history),
                                             "compensated": [c["state"] for c in result.compensated]})
                result.recorded = True
            self._advance(message_id, execution_arn, Stage.RECORDED,
                          summary={"failure": _bounded(failure), "manualRepair": manual_repair,
                                   "compensated": result.compensated, "status": status})
        result.manual_repair = manual_repair
        disposition = self._policy.disposition(state=failure.get("state"), error=failure.get("error"),
                                               manual_repair=manual_repair, attempt=attempt_of(record),
                                               status=status)
        if disposition.needs_a_person:
            alert = failure_alert(
                environment=self._settings.environment, title=self._settings.title,
                pipeline=self._settings.pipeline, region=self._settings.region, failure=failure,
                manual_repair=manual_repair, execution_arn=execution_arn, status=status,
                disposition=disposition.value, failed_at=_iso(_aware(described.get("stopDate") or now)))
            self._publish(alert)
            result.announced = True
        self._advance(message_id, execution_arn, Stage.ANNOUNCED)
        return result

    def _failure(self, described: Mapping[str, Any], history: History
                 ) -> tuple[dict[str, Any], Any, bool, bool]:
        """(failure, compensation, manualRepair, whether HandleFailure already wrote the record).

        When the execution died in the failure tail, the workflow had already described its failure (the input
        ClaimFailure or HandleFailure was entered with) and run its compensations: that description is kept.
        """
        tail = history.tail_input
        if tail is not None and isinstance(tail.get("failure"), dict):
            recorded = HANDLE_FAILURE in history.exited
            return dict(tail["failure"]), tail.get("compensation"), tail.get("manualRepair") is True, recorded
        status = str(described["status"])
        error = described.get("error") or (TIMEOUT_ERROR if status == "TIMED_OUT" else status.capitalize())
        return ({"state": history.failed_state or "?", "error": error,
                 "cause": described.get("cause") or _reason(status, history)}, None, False, False)

    def _compensate(self, record: Mapping[str, Any], execution_arn: str, history: History) -> list[dict[str, Any]]:
        """Every entered step's compensation, the last step first, each with what it returned or raised."""
        entered = set(history.entered)
        results = []
        for compensation in reversed(self._settings.compensations):
            if compensation.step not in entered:
                continue
            results.append(self._run_compensation(compensation, record, execution_arn))
        return results

    def _run_compensation(self, compensation: Compensation, record: Mapping[str, Any],
                          execution_arn: str) -> dict[str, Any]:
        # The payload the workflow's compensation states send (checked at synth by the construct).
        payload = json.dumps({"record": record, "executionArn": execution_arn}).encode()
        error: dict[str, Any] = {}
        for attempt in range(self._settings.compensation_attempts):
            if attempt:
                self._sleep(self._settings.compensation_backoff_seconds * 2 ** (attempt - 1))
            try:
                response = self._lambda.invoke(FunctionName=compensation.function_arn, Payload=payload)
            except ClientError as failure:
                if not is_transient(failure):
                    return {"state": compensation.state, "status": "FAILED", "error": error_code(failure),
                            "cause": str(failure)}
                error = {"error": error_code(failure), "cause": str(failure)}
                continue
            body = _json_value(response["Payload"].read().decode() or "null")
            if not response.get("FunctionError"):
                return {"state": compensation.state, "status": "COMPENSATED", "result": body}
            reported = body if isinstance(body, dict) else {}
            error = {"error": str(reported.get("errorType", "Unhandled")),
                     "cause": str(reported.get("errorMessage", ""))}
            if error["error"] not in self._policy.transient_errors.get(compensation.state, frozenset()):
                return {"state": compensation.state, "status": "FAILED", **error}
        raise CompensationRetryable(f"{compensation.state} still failing transiently: {error}")

    def _record(self, record: Mapping[str, Any], described: Mapping[str, Any], failure: Mapping[str, Any],
                compensation: Any, manual_repair: bool, reconciliation: Mapping[str, Any]) -> None:
        body = {
            "kind": RECORD_KIND,
            "pipeline": self._settings.pipeline,
            "record": record,
            "failure": failure,
            "compensation": compensation,
            "manualRepair": manual_repair,
            "executionArn": described["executionArn"],
            "stateMachineArn": described["stateMachineArn"],
            "failedAt": _iso(_aware(described.get("stopDate") or datetime.now(UTC))),
            "reconciliation": reconciliation,
        }
        self._sqs.send_message(
            QueueUrl=self._settings.failure_dlq_url,
            MessageBody=json.dumps(body),
            MessageAttributes={
                "error": {"DataType": "String", "StringValue": str(failure.get("error") or "?")},
                "failedState": {"DataType": "String", "StringValue": str(failure.get("state") or "?")},
            },
        )

    def _publish(self, alert: Alert) -> None:
        self._sns.publish(TopicArn=self._settings.alerts_topic_arn, Subject=alert.subject,
                          MessageStructure="json", Message=alert.message())

    # -- the row ------------------------------------------------------------------------------------------------

    def _claim(self, message_id: str, execution_arn: str, now: datetime) -> dict[str, Any] | None:
        """Take the message's row for this run; None when another execution owns the message.

        Raises ReconcileBusy while another run's lease holds it. A finished row (ANNOUNCED) is returned as is.
        """
        stamp = int(now.timestamp())
        try:
            response = self._dynamodb.update_item(
                TableName=self._settings.deliveries_table,
                Key={"messageId": {"S": message_id}},
                UpdateExpression="SET executionArn = if_not_exists(executionArn, :arn), "
                                 "reconciliation = if_not_exists(reconciliation, :claimed), "
                                 "reconcileLeaseUntil = :lease, expiresAt = if_not_exists(expiresAt, :ttl)",
                ConditionExpression="(attribute_not_exists(messageId) OR executionArn = :arn) AND "
                                    "(attribute_not_exists(reconcileLeaseUntil) OR reconcileLeaseUntil < :now) AND "
                                    "(attribute_not_exists(reconciliation) OR reconciliation <> :announced)",
                ExpressionAttributeValues={
                    ":arn": {"S": execution_arn}, ":claimed": {"S": Stage.CLAIMED},
                    ":announced": {"S": Stage.ANNOUNCED}, ":lease": {"N": str(stamp + LEASE_SECONDS)},
                    ":now": {"N": str(stamp)}, ":ttl": {"N": str(stamp + self._settings.claim_ttl_seconds)},
                },
                ReturnValues="ALL_NEW",
            )
        except ClientError as error:
            if error_code(error) != "ConditionalCheckFailedException":
                raise
            current = self._dynamodb.get_item(TableName=self._settings.deliveries_table,
                                              Key={"messageId": {"S": message_id}}, ConsistentRead=True).get("Item")
            row = _plain(current or {})
            if row.get("executionArn") not in (None, execution_arn):
                return None
            if row.get("reconciliation") == Stage.ANNOUNCED:
                return row
            raise ReconcileBusy(f"{execution_arn} is being reconciled by another run") from error
        return _plain(response["Attributes"])

    def _advance(self, message_id: str, execution_arn: str, stage: Stage,
                 summary: Mapping[str, Any] | None = None) -> None:
        values: dict[str, Any] = {":stage": {"S": stage}, ":arn": {"S": execution_arn}}
        expression = "SET reconciliation = :stage"
        if summary is not None:
            expression += ", summary = :summary"
            values[":summary"] = {"S": json.dumps(summary)}
        if stage is Stage.ANNOUNCED:
            expression += " REMOVE reconcileLeaseUntil"
        self._dynamodb.update_item(TableName=self._settings.deliveries_table, Key={"messageId": {"S": message_id}},
                                   UpdateExpression=expression, ConditionExpression="executionArn = :arn",
                                   ExpressionAttributeValues=values)

    def _mark_settled(self, execution_arn: str, redrives: int, verdict: Verdict, now: datetime) -> None:
        """Note for later sweeps that this execution (as of this redrive) needs nothing more."""
        # Only spares later sweeps a describe: if the write fails, they describe the execution and find it settled.
        with contextlib.suppress(ClientError):
            self._dynamodb.update_item(
                TableName=self._settings.deliveries_table,
                Key={"messageId": {"S": _settled_key(execution_arn, redrives)}},
                UpdateExpression="SET verdict = :verdict, expiresAt = :ttl",
                ExpressionAttributeValues={":verdict": {"S": verdict.value},
                                           ":ttl": {"N": str(int(now.timestamp()) + self._settings.claim_ttl_seconds)}},
            )

    def _release(self, message_id: str, execution_arn: str) -> None:
        with contextlib.suppress(ClientError):  # if this fails too, the lease lapses by itself
            self._dynamodb.update_item(TableName=self._settings.deliveries_table, Key={"messageId": {"S": message_id}},
                                       UpdateExpression="REMOVE reconcileLeaseUntil",
                                       ConditionExpression="executionArn = :arn",
                                       ExpressionAttributeValues={":arn": {"S": execution_arn}})

    def _history(self, execution_arn: str) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = []
        paginator = self._sfn.get_paginator("get_execution_history")
        for page in paginator.paginate(executionArn=execution_arn, includeExecutionData=True):
            events.extend(page["events"])
        return events


def _settled_key(execution_arn: str, redrives: int) -> str:
    return f"{SETTLED_PREFIX}{execution_arn}#{redrives}"


TASK_PREFIXES = ("Task", "LambdaFunction", "Activity")
TASK_OPENINGS = ("Scheduled", "Started")
TASK_ENDINGS = ("Succeeded", "Failed", "TimedOut", "StartFailed", "ScheduleFailed", "SubmitFailed")


def _task_event(kind: str, suffixes: tuple[str, ...]) -> bool:
    """A task's own history event (TaskScheduled, LambdaFunctionTimedOut, ...), not a state's or the execution's."""
    return any(kind == prefix + suffix for prefix in TASK_PREFIXES for suffix in suffixes)


def _state_of(event: Mapping[str, Any], by_id: Mapping[Any, Mapping[str, Any]]) -> str:
    """The state a task event belongs to: the StateEntered event its previousEventId chain leads back to."""
    current: Mapping[str, Any] | None = event
    for _ in range(len(by_id)):
        current = by_id.get(current.get("previousEventId")) if current is not None else None
        if current is None:
            break
        if str(current.get("type", "")).endswith("StateEntered"):
            return str(current.get("stateEnteredEventDetails", {}).get("name"))
    return "?"


def _reason(status: str, history: History) -> str:
    where = history.failed_state or "before its first state"
    if status == "TIMED_OUT":
        return f"The execution timed out in {where}; the steps it had entered were compensated by the reconciler."
    if status == "ABORTED":
        return f"The execution was stopped in {where}; the steps it had entered were compensated by the reconciler."
    return f"The execution failed in {where} outside the failure tail's record; reconciled."


def _bounded(failure: Mapping[str, Any]) -> dict[str, Any]:
    bounded = dict(failure)
    if isinstance(bounded.get("cause"), str):
        bounded["cause"] = bounded["cause"][:MAX_CAUSE_CHARS]
    return bounded


def _plain(item: Mapping[str, Any]) -> dict[str, Any]:
    """A DynamoDB item's S and N attributes as plain values (all the row needs)."""
    plain: dict[str, Any] = {}
    for name, value in item.items():
        if "S" in value:
            plain[name] = value["S"]
        elif "N" in value:
            plain[name] = int(value["N"])
    return plain


def _json_value(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return None


def _json_object(text: Any) -> dict[str, Any] | None:
    value = _json_value(text)
    return value if isinstance(value, dict) else None


def event_time(value: Any) -> datetime:
    """The time an event or a schedule's input names (`time`), or now when it names none; ValueError if malformed."""
    return _aware(value) if isinstance(value, str) else datetime.now(UTC)


def _aware(value: Any) -> datetime:
    """A boto3 datetime (made aware) or an ISO 8601 text, read as the failure records' times are (parse_time)."""
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    parsed = parse_time(value)
    if parsed is None:
        raise ValueError(f"not an ISO 8601 time: {value!r}")
    return parsed


def _iso(value: datetime) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"
