"""What `smoke` observes of its own orders: their executions (found by SQS message id) and failure-DLQ records.

A pipe cannot name the executions it starts, so the smoke finds its orders' executions the way an operator would: it
lists the state machine's executions started since the run began (newest first, as ListExecutions returns them),
describes each one once, and keeps those whose input's first record carries one of its SQS message ids. Its failure-DLQ
records are recognised by the source message id *and* the run id attribute it sent; every other message it reads there
is made visible again at once (src/fire_and_forget/runtime/dlq.py), never deleted.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from fire_and_forget.runtime.dlq import HeldMessages
from fire_and_forget.runtime.records import FailureRecord, UnrecognizedMessage, parse
from fire_and_forget.runtime.tail import DUPLICATE_ENDS

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_stepfunctions import SFNClient

TERMINAL = frozenset({"SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED"})
# Names from statemachines/order_saga.asl.json: the task that writes the failure record and the one that alerts.
RECORD_STATE = "HandleFailure"
ALERT_STATE = "NotifyFailure"


@dataclass
class ExecutionView:
    """One execution as the smoke last saw it; the history is read once, when the execution has ended."""

    arn: str
    status: str = "RUNNING"
    error: str | None = None
    entered: list[str] = field(default_factory=list)  # state names, in the order they were entered
    exited: set[str] = field(default_factory=set)  # states that completed (a task that failed never exits)
    alert_message_id: str | None = None  # the SNS MessageId NotifyFailure's publish returned

    @property
    def ended(self) -> bool:
        return self.status in TERMINAL

    @property
    def duplicate(self) -> bool:
        return bool(DUPLICATE_ENDS & set(self.entered))

    @property
    def current_state(self) -> str | None:
        return self.entered[-1] if self.entered else None


@dataclass
class Tracked:
    """One smoke order: what was sent, the executions that took it, and its failure record once found."""

    case: str
    order_id: str
    message_id: str
    body: str
    executions: dict[str, ExecutionView] = field(default_factory=dict)
    record: FailureRecord | None = None

    @property
    def execution(self) -> ExecutionView | None:
        """The execution that owns the order: a duplicate delivery's quiet execution only when it is the one."""
        views = list(self.executions.values())
        return next((v for v in views if not v.duplicate), views[0] if views else None)

    @property
    def settled(self) -> bool:
        """Nothing more will change: the execution ended, and its failure record (if it wrote one) was found."""
        view = self.execution
        return view is not None and view.ended and (RECORD_STATE not in view.exited or self.record is not None)


@dataclass
class Watch:
    """Polls the state machine and the failure DLQ for a run's orders."""

    sfn: SFNClient
    sqs: SQSClient
    state_machine_arn: str
    failure_dlq_url: str
    run_attribute: str
    run_id: str
    since: datetime  # executions that started before this cannot be ours
    visibility_timeout: int = 30
    foreign_seen: set[str] = field(default_factory=set)  # other DLQ messages read (and made visible again)
    deleted: int = 0
    _not_ours: set[str] = field(default_factory=set)

    def poll(self, orders: list[Tracked]) -> None:
        """One look: new executions of our messages, the state of those still running, our failure records."""
        self._find_executions(orders)
        for order in orders:
            for view in order.executions.values():
                if not view.ended:
                    self._refresh(view)
        if any(o.record is None and (v := o.execution) is not None and RECORD_STATE in v.exited for o in orders):
            self._collect_records(orders)

    def describe_stuck(self, orders: list[Tracked]) -> None:
        """For executions still running at the deadline: the states they entered so far (to say where they hang)."""
        for order in orders:
            for view in order.executions.values():
                if not view.ended:
                    self._read_history(view)

    def _find_executions(self, orders: list[Tracked]) -> None:
        by_message = {o.message_id: o for o in orders}
        known = {arn for o in orders for arn in o.executions} | self._not_ours
        for page in self.sfn.get_paginator("list_executions").paginate(
            stateMachineArn=self.state_machine_arn, PaginationConfig={"PageSize": 100}
        ):
            for item in page["executions"]:
                arn = item["executionArn"]
                if arn in known or item["startDate"] < self.since:
                    continue
                message_id = _message_id(self.sfn.describe_execution(executionArn=arn).get("input"))
                order = by_message.get(message_id) if message_id is not None else None
                if order is None:
                    self._not_ours.add(arn)
                else:
                    order.executions[arn] = ExecutionView(arn)
            if page["executions"] and page["executions"][-1]["startDate"] < self.since:
                break  # newest first: the rest started before the run

    def _refresh(self, view: ExecutionView) -> None:
        described = self.sfn.describe_execution(executionArn=view.arn)
        view.status, view.error = described["status"], described.get("error")
        if view.ended:
            self._read_history(view)

    def _read_history(self, view: ExecutionView) -> None:
        entered: list[str] = []
        exited: set[str] = set()
        alert: str | None = None
        current: str | None = None
        for page in self.sfn.get_paginator("get_execution_history").paginate(
            executionArn=view.arn, PaginationConfig={"PageSize": 1000}
        ):
            for event in page["events"]:
                if "stateEnteredEventDetails" in event:
                    current = event["stateEnteredEventDetails"]["name"]
                    entered.append(current)
                elif "stateExitedEventDetails" in event:
                    exited.add(event["stateExitedEventDetails"]["name"])
                elif current == ALERT_STATE and "taskSucceededEventDetails" in event:
                    alert = _sns_message_id(event["taskSucceededEventDetails"].get("output"))
        view.entered, view.exited, view.alert_message_id = entered, exited, alert

    def _collect_records(self, orders: list[Tracked]) -> None:
        by_message = {o.message_id: o for o in orders}
        with HeldMessages(self.sqs, self.failure_dlq_url, visibility_timeout=self.visibility_timeout) as held:
            while batch := held.receive():
                for message in batch:
                    parsed = parse(message)
                    order = self._owner(parsed, by_message)
                    if order is None or not isinstance(parsed, FailureRecord):
                        self.foreign_seen.add(message["MessageId"])
                        continue
                    order.record = parsed
                    self.sqs.delete_message(
                        QueueUrl=self.failure_dlq_url, ReceiptHandle=held.receipt(message["MessageId"])
                    )
                    held.forget(message["MessageId"])
                    self.deleted += 1

    def _owner(self, record: FailureRecord | UnrecognizedMessage, by_message: dict[str, Tracked]) -> Tracked | None:
        """The order of this run a failure record belongs to: one of its message ids, and its run id attribute."""
        if not isinstance(record, FailureRecord) or record.source_message_id is None:
            return None
        attribute = record.message_attributes.get(self.run_attribute)
        if not isinstance(attribute, dict) or attribute.get("stringValue") != self.run_id:
            return None
        return by_message.get(record.source_message_id)


def _message_id(execution_input: str | None) -> str | None:
    """The SQS message id of the pipe's first record in an execution's input (a JSON array of records)."""
    try:
        records = json.loads(execution_input or "null")
    except ValueError:
        return None
    first: Any = records[0] if isinstance(records, list) and records else None
    value = first.get("messageId") if isinstance(first, dict) else None
    return value if isinstance(value, str) else None


def _sns_message_id(output: str | None) -> str | None:
    try:
        document = json.loads(output or "null")
    except ValueError:
        return None
    value = document.get("MessageId") if isinstance(document, dict) else None
    return value if isinstance(value, str) else None
