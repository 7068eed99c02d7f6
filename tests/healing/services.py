"""The services the healing explorer's actors call: moto's DynamoDB, SQS and SNS, a Step Functions built from the
explorer's own executions, and a Lambda that runs the real compensation handlers; every call passes a gate.

moto's SQS reads the explorer's virtual clock (visibility timeouts, receive times), and the whole state of the
three services can be snapshotted and restored: the explorer branches on that.
"""

from __future__ import annotations

import copy
import importlib
import io
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager, redirect_stdout
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import boto3
import moto.sqs.models as sqs_models
from moto.dynamodb.models import dynamodb_backends
from moto.sns.models import sns_backends
from moto.sqs.models import sqs_backends

from tests.healing.gates import Call, Decision, Runner, lost_response, refusal

ACCOUNT, REGION = "123456789012", "us-east-1"
STATE_MACHINE_ARN = f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:OrderSaga"
EPOCH = datetime(2026, 12, 1, 12, 0, tzinfo=UTC).timestamp()


def at(seconds: float) -> datetime:
    """A virtual time as the datetime boto3 would return."""
    return datetime.fromtimestamp(seconds, UTC)


@dataclass
class ExecutionView:
    """What DescribeExecution and GetExecutionHistory say of one execution (written by its actor, read by the fake)."""

    arn: str
    record: dict[str, Any]
    started: float
    status: str = "RUNNING"
    stopped: float | None = None
    error: str | None = None
    cause: str | None = None
    history: list[dict[str, Any]] = field(default_factory=list)
    pending: dict[str, Any] | None = None  # the task call it is about to make (what a late invocation makes)


@dataclass
class Model:
    """Everything of one run that is not in moto: the clock, the executions as Step Functions sees them, and what
    was sent to the failure DLQ or the ReconcilerDlq (the DLQ's own contents are in moto)."""

    clock: float = EPOCH
    executions: dict[str, ExecutionView] = field(default_factory=dict)
    recorded: list[dict[str, Any]] = field(default_factory=list)  # every SendMessage to the failure DLQ
    reconciler_dlq: list[str] = field(default_factory=list)  # executions whose event the Reconciler failed 5 times
    lineage: dict[str, str] = field(default_factory=dict)  # a redriven copy's messageId -> the record's messageId


class StepFunctions:
    """DescribeExecution, GetExecutionHistory and ListExecutions in the shapes boto3 returns, over the Model."""

    def __init__(self, model: Callable[[], Model]) -> None:
        self._model = model

    def describe_execution(self, executionArn: str) -> dict[str, Any]:  # noqa: N803 - boto3's names
        view = self._model().executions[executionArn]
        described: dict[str, Any] = {
            "executionArn": view.arn, "stateMachineArn": STATE_MACHINE_ARN, "name": view.arn.rsplit(":", 1)[-1],
            "status": view.status, "startDate": at(view.started), "input": json.dumps([view.record]),
        }
        if view.stopped is not None:  # AWS sets it for every stopped execution (moto does not for TIMED_OUT)
            described["stopDate"] = at(view.stopped)
        if view.error is not None:
            described["error"] = view.error
        if view.cause is not None:
            described["cause"] = view.cause
        return copy.deepcopy(described)

    def get_paginator(self, operation: str) -> Any:
        model = self._model

        class Paginator:
            def paginate(self, **kwargs: Any) -> Iterator[dict[str, Any]]:
                if operation == "get_execution_history":
                    yield {"events": copy.deepcopy(model().executions[kwargs["executionArn"]].history)}
                    return
                assert operation == "list_executions"
                listed = [view for view in model().executions.values() if view.status == kwargs["statusFilter"]]
                listed.sort(key=lambda view: view.started, reverse=True)
                yield {"executions": [
                    {"executionArn": v.arn, "stateMachineArn": STATE_MACHINE_ARN, "status": v.status,
                     "startDate": at(v.started), **({"stopDate": at(v.stopped)} if v.stopped is not None else {})}
                    for v in listed]}

        return Paginator()


class Gated:
    """A boto3 client whose every call is one gated step of the current actor."""

    def __init__(self, runner: Runner, service: str, client: Any, describe: Callable[[str, dict[str, Any]], str],
                 after: Callable[[str, dict[str, Any], Any], None] | None = None) -> None:
        self._runner, self._service, self._client = runner, service, client
        self._describe, self._after = describe, after

    def __getattr__(self, operation: str) -> Any:
        method = getattr(self._client, operation)
        if operation in ("exceptions", "meta") or not callable(method):
            return method

        def call(**kwargs: Any) -> Any:
            if operation == "receive_message":
                kwargs["WaitTimeSeconds"] = 0  # long polling would wait on moto's clock; an empty answer is the same
            gated = Call(self._service, operation, self._describe(operation, kwargs))

            def perform(decision: Decision) -> Any:
                if decision is Decision.REFUSED:
                    raise refusal(gated)
                value = method(**kwargs)
                if self._after is not None:
                    self._after(operation, kwargs, value)
                if decision is Decision.LOST:
                    raise lost_response(gated)
                return value

            return self._runner.gate(gated, perform)

        return call


def short(name: str) -> str:
    """A table, queue or function by the last part of its name (for schedules a person reads)."""
    return name.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1].split("-")[0][:24]


class Services:
    """One emulated account's queues, topic and clients for the explorer, over the account the handler tests use."""

    def __init__(self, runner: Runner, dynamodb: Any, tables: dict[str, str], functions: dict[str, str]) -> None:
        self.runner = runner
        self.model = Model()
        self.tables = tables  # role -> table name
        self.functions = functions  # function ARN -> Handler ("release_inventory.handler.handler")
        self.dynamodb = dynamodb
        self.sqs = boto3.client("sqs", region_name=REGION)
        self.sns = boto3.client("sns", region_name=REGION)
        self.source_url = self.sqs.create_queue(QueueName="source")["QueueUrl"]
        self.dlq_url = self.sqs.create_queue(QueueName="failure-dlq")["QueueUrl"]
        self.topic_arn = self.sns.create_topic(Name="alerts")["TopicArn"]
        self.sfn = StepFunctions(lambda: self.model)
        self.lambda_context: Any = None
        self._handlers: dict[str, Callable[..., Any]] = {}

    # -- the actors' clients ------------------------------------------------------------------------------------

    def gated_dynamodb(self) -> Gated:
        return Gated(self.runner, "dynamodb", self.dynamodb, _describe_dynamodb)

    def gated_sqs(self) -> Gated:
        return Gated(self.runner, "sqs", self.sqs, lambda _op, kw: short(kw.get("QueueUrl", "")), self._tap)

    def gated_sns(self) -> Gated:
        return Gated(self.runner, "sns", self.sns, lambda _op, _kw: "alerts")

    def gated_lambda(self) -> Gated:
        return Gated(self.runner, "lambda", LambdaFunctions(self), lambda _op, kw: short(kw.get("FunctionName", "")))

    def _tap(self, operation: str, kwargs: dict[str, Any], value: Any) -> None:
        if operation == "send_message" and kwargs.get("QueueUrl") == self.dlq_url:
            self.model.recorded.append(json.loads(kwargs["MessageBody"]))
        if operation == "send_message" and kwargs.get("QueueUrl") == self.source_url and self.runner.current:
            # A redrive: which record the copy was made of (the sender holds it; ff-ops adds no ffFirstMessageId).
            for entry in self.runner.current.log:
                if entry.call.operation != "receive_message" or not isinstance(entry.value, dict):
                    continue
                for message in entry.value.get("Messages", []):
                    record = json.loads(message["Body"]).get("record", {})
                    if record.get("body") == kwargs["MessageBody"]:
                        self.model.lineage[value["MessageId"]] = record["messageId"]

    def handler(self, handler_path: str) -> Callable[..., Any]:
        if handler_path not in self._handlers:
            module, name = handler_path.rsplit(".", 1)
            self._handlers[handler_path] = getattr(importlib.import_module(module), name)
        return self._handlers[handler_path]

    # -- raw reads for the books ----------------------------------------------------------------------------------

    def queue_bodies(self, url: str) -> list[dict[str, Any]]:
        """Every message in the queue, visible or not, read from moto's backend without receiving it."""
        queue = sqs_backends[ACCOUNT][REGION].queues[short_queue(url)]
        return [{"body": m.body, "id": m.id, "attributes": copy.deepcopy(m.message_attributes)}
                for m in queue._messages]

    def published(self) -> list[dict[str, Any]]:
        topic = sns_backends[ACCOUNT][REGION].topics[self.topic_arn]
        return [{"subject": n[2], "message": n[1]} for n in topic.sent_notifications]

    # -- snapshots ------------------------------------------------------------------------------------------------

    def snapshot(self) -> Any:
        tables = {name: copy.deepcopy(t.items) for name, t in dynamodb_backends[ACCOUNT][REGION].tables.items()}
        queues = {name: copy.deepcopy((q._messages, q._pending_messages, q.deleted_messages))
                  for name, q in sqs_backends[ACCOUNT][REGION].queues.items()}
        topic = list(sns_backends[ACCOUNT][REGION].topics[self.topic_arn].sent_notifications)
        return tables, queues, topic

    def restore(self, snapshot: Any) -> None:
        tables, queues, topic = snapshot
        for name, table in dynamodb_backends[ACCOUNT][REGION].tables.items():
            table.items = copy.deepcopy(tables[name])
        for name, queue in sqs_backends[ACCOUNT][REGION].queues.items():
            queue._messages, queue._pending_messages, queue.deleted_messages = copy.deepcopy(queues[name])
        sns_backends[ACCOUNT][REGION].topics[self.topic_arn].sent_notifications = list(topic)


def short_queue(url: str) -> str:
    return url.rstrip("/").rsplit("/", 1)[-1]


def _describe_dynamodb(operation: str, kwargs: dict[str, Any]) -> str:
    table = short(kwargs.get("TableName", "transaction"))
    key = kwargs.get("Key") or kwargs.get("Item") or {}
    first: Any = next(iter(key.values()), {}) if isinstance(key, dict) else {}
    value = next(iter(first.values()), "") if isinstance(first, dict) else ""
    stage = kwargs.get("ExpressionAttributeValues", {}).get(":stage", {}).get("S")
    return (f"{table}:{value}" if value else table) + (f" {stage}" if stage else "")


class LambdaFunctions:
    """Lambda Invoke (RequestResponse) of the compensation functions: the real handler runs inside the call, and an
    exception comes back as Lambda reports it (FunctionError, {errorType, errorMessage})."""

    def __init__(self, services: Services) -> None:
        self._services = services

    def invoke(self, FunctionName: str, Payload: bytes) -> dict[str, Any]:  # noqa: N803 - boto3's names
        handler = self._services.handler(self._services.functions[FunctionName])
        try:
            with redirect_stdout(io.StringIO()):
                result = handler(json.loads(Payload), self._services.lambda_context)
        except Exception as error:  # the Lambda runtime reports every exception as errorType
            body = {"errorType": type(error).__name__, "errorMessage": str(error)}
            return {"StatusCode": 200, "FunctionError": "Unhandled", "Payload": io.BytesIO(json.dumps(body).encode())}
        return {"StatusCode": 200, "Payload": io.BytesIO(json.dumps(result).encode())}


@contextmanager
def virtual_sqs_clock(model: Callable[[], Model]) -> Iterator[None]:
    """moto's SQS reads the explorer's clock: visibility timeouts lapse in virtual time, not in wall-clock time."""
    saved = sqs_models.unix_time, sqs_models.unix_time_millis  # type: ignore[attr-defined]
    sqs_models.unix_time = lambda *_a: model().clock  # type: ignore[attr-defined]
    sqs_models.unix_time_millis = lambda *_a: model().clock * 1000  # type: ignore[attr-defined]
    try:
        yield
    finally:
        sqs_models.unix_time, sqs_models.unix_time_millis = saved  # type: ignore[attr-defined]
