"""Faults in the AWS services the workflow and the operator tools call: the failure DLQ and the source DLQ (SQS), the
alerts topic (SNS) and every table the stack names in an output (DynamoDB); plus SQS's documented message limits
(fire_and_forget/rehearsal/sqs_rules.py) on every SendMessage.

A fault strikes before the call (UNAVAILABLE: nothing happens, a 5xx), after it (RESPONSE_LOST: the call took effect,
then a 5xx, so the caller's retry repeats it), or holds it (HANG: the call waits until the rehearsal releases it, then
runs). An SNS fault can be scoped to one piece of work: an alert names its execution, and the execution's input holds
the work's key.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from moto.core.exceptions import JsonRESTError
from moto.dynamodb.models import DynamoDBBackend
from moto.sns.models import SNSBackend
from moto.sqs.models import SQSBackend
from moto.stepfunctions.parser.models import stepfunctions_parser_backends

from fire_and_forget.rehearsal.faults import FaultKind, FaultPlan
from fire_and_forget.rehearsal.sqs_rules import install_sqs_rules
from fire_and_forget.runtime.outputs import Output

_EXECUTION_ARN = re.compile(r"arn:aws:states:[^:\s\"]+:\d+:execution:[^:\s\"]+:[A-Za-z0-9_-]+")
# DeleteMessage fault targets, by the output that names the queue.
DELETE_TARGETS = {Output.FAILURE_DLQ_URL: "FailureDlqDelete", Output.SOURCE_DLQ_URL: "SourceDlqDelete"}
SEND_TARGETS = {Output.FAILURE_DLQ_URL: "FailureDlq", Output.SOURCE_QUEUE_URL: "SourceQueue"}
# The single-item DynamoDB calls a fault on a table strikes (its target: the output key without "Name", e.g.
# "SearchIndexTable" for the output SearchIndexTableName), whoever makes them: a handler or a workflow's service task.
TABLE_OUTPUT_SUFFIX = "TableName"
DYNAMODB_CALLS = ("put_item", "get_item", "update_item", "delete_item")


class _Unavailable(JsonRESTError):
    def __init__(self, service: str, after: bool = False) -> None:
        what = "its response was lost after it took effect" if after else "unavailable"
        super().__init__("ServiceUnavailable", f"{service} is {what} (injected)")
        self.code = 503


def install_service_faults(faults: FaultPlan, outputs: dict[str, str], account: str = "123456789012",
                           region: str = "us-east-1") -> Callable[[], None]:
    """Patch SendMessage, DeleteMessage, Publish and the single-item DynamoDB calls; returns the undo function."""
    undo_rules = install_sqs_rules()
    undo_tables = _install_table_faults(faults, outputs)
    send_message, delete_message, publish = SQSBackend.send_message, SQSBackend.delete_message, SNSBackend.publish
    # SendMessage to the failure DLQ (HandleFailure's, the Reconciler's) and to the source queue (a resend by the
    # Redriver or ff-ops, or a caller's: add a SourceQueue fault after the caller's send).
    send_targets = {outputs[key].rsplit("/", 1)[1]: target for key, target in SEND_TARGETS.items()
                    if key in outputs}
    delete_targets = {outputs[key].rsplit("/", 1)[1]: target for key, target in DELETE_TARGETS.items()
                      if key in outputs}
    topic_arn = outputs[Output.ALERTS_TOPIC_ARN]
    strike = _Striker(faults)

    def faulty_send_message(self: SQSBackend, queue_name: str, message_body: str, *args: Any, **kwargs: Any) -> Any:
        def call() -> Any:
            return send_message(self, queue_name, message_body, *args, **kwargs)

        target = send_targets.get(queue_name)
        return call() if target is None else strike(target, message_body, "SQS", call)

    def faulty_delete_message(self: SQSBackend, queue_name: str, receipt_handle: str) -> None:
        def call() -> None:
            delete_message(self, queue_name, receipt_handle)

        target = delete_targets.get(queue_name)
        if target is None:
            return call()
        body = next((m.body for m in self.get_queue(queue_name)._messages if m.had_receipt_handle(receipt_handle)), "")
        return strike(target, body, "SQS", call)  # type: ignore[no-any-return]

    def faulty_publish(self: SNSBackend, message: str, arn: str | None = None, *args: Any, **kwargs: Any) -> Any:
        def call() -> Any:
            return publish(self, message, arn, *args, **kwargs)

        if arn != topic_arn:
            return call()
        return strike("AlertsTopic", [message, *_execution_inputs(message, account, region)], "SNS", call)

    SQSBackend.send_message = faulty_send_message  # type: ignore[method-assign]
    SQSBackend.delete_message = faulty_delete_message  # type: ignore[method-assign]
    SNSBackend.publish = faulty_publish  # type: ignore[method-assign]

    def undo() -> None:
        SQSBackend.send_message = send_message  # type: ignore[method-assign]
        SQSBackend.delete_message = delete_message  # type: ignore[method-assign]
        SNSBackend.publish = publish  # type: ignore[method-assign]
        undo_tables()
        undo_rules()

    return undo


def table_fault_targets(outputs: dict[str, str]) -> dict[str, str]:
    """Table name -> fault target, for every table the stack names in an output (`XTableName` -> "XTable")."""
    return {name: key.removesuffix("Name") for key, name in outputs.items() if key.endswith(TABLE_OUTPUT_SUFFIX)}


def _install_table_faults(faults: FaultPlan, outputs: dict[str, str]) -> Callable[[], None]:
    """A fault on "XTable" makes DynamoDB fail (UNAVAILABLE: a 503 before the call; RESPONSE_LOST: after it) the
    single-item calls on that table; scoped to a key, it strikes only calls whose key or item holds it."""
    targets = table_fault_targets(outputs)
    strike = _Striker(faults)
    originals = {name: getattr(DynamoDBBackend, name) for name in DYNAMODB_CALLS}

    def faulty(name: str) -> Callable[..., Any]:
        original = originals[name]

        def call_with_faults(self: DynamoDBBackend, table_name: str, *args: Any, **kwargs: Any) -> Any:
            def call() -> Any:
                return original(self, table_name, *args, **kwargs)

            target = targets.get(table_name)
            if target is None:
                return call()
            return strike(target, _plain_attributes(args[0] if args else {}), "DynamoDB", call)

        return call_with_faults

    for name in DYNAMODB_CALLS:
        setattr(DynamoDBBackend, name, faulty(name))

    def undo() -> None:
        for name, original in originals.items():
            setattr(DynamoDBBackend, name, original)

    return undo


def _plain_attributes(attributes: Any) -> dict[str, Any]:
    """{"id": {"S": "k-1"}} as {"id": "k-1"}: what a fault's key scope searches."""
    if not isinstance(attributes, dict):
        return {}
    return {key: next(iter(value.values()), None) if isinstance(value, dict) else value
            for key, value in attributes.items()}


class _Striker:
    """Runs one service call under the fault the plan holds for its target, if any."""

    def __init__(self, faults: FaultPlan) -> None:
        self._faults = faults

    def __call__(self, target: str, payload: Any, service: str, call: Callable[[], Any]) -> Any:
        kind = self._faults.take(target, payload)
        if kind is FaultKind.UNAVAILABLE:
            raise _Unavailable(service)
        if kind is FaultKind.HANG:
            self._faults.hold(target)
            try:
                return call()
            finally:
                self._faults.hold_completed(target)
        result = call()
        if kind is FaultKind.RESPONSE_LOST:
            raise _Unavailable(service, after=True)
        return result


def _execution_inputs(message: str, account: str, region: str) -> list[Any]:
    """The inputs of the executions an alert names: where an SNS fault finds the key it is scoped to."""
    arns = set(_EXECUTION_ARN.findall(message))
    if not arns:
        return []
    backend = stepfunctions_parser_backends[account][region]
    return [execution.input_data for execution in backend._get_executions() if execution.execution_arn in arns]
