"""Emits "Step Functions Execution Status Change" events to the template's own rules, and delivers them.

moto's Step Functions emits no EventBridge events, so the rehearsal builds the event when an execution ends,
shaped as AWS documents it (https://docs.aws.amazon.com/step-functions/latest/dg/eventbridge-integration.html),
evaluates each rule's pattern with moto's EventPattern matcher, and delivers to the rule's SNS, SQS and Step
Functions targets, applying the input transformer
(https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_InputTransformer.html). A state machine target gets
StartExecution with the event as input, as EventBridge calls it; for an Express target the bus also waits for the
execution to end, so an announcement it publishes is there when the run ends. A target that refuses the event sends it
to the target's DLQ, as EventBridge does once its retries are spent.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from moto.events.models import EventPattern

STATUS_CHANGE = "Step Functions Execution Status Change"
# How long the bus waits for an Express target's execution (Express executions last at most 5 minutes; here the
# retry waits are compressed, so an announcement ends in well under a second).
EXPRESS_WAIT_SECONDS = 30.0
_PLACEHOLDER = re.compile(r"<([A-Za-z0-9_.-]+)>")


@dataclass(frozen=True)
class RuleDefinition:
    """An AWS::Events::Rule with its references resolved: the pattern and the targets' ARNs."""

    name: str
    pattern: dict[str, Any]
    targets: list[dict[str, Any]]


@dataclass
class Delivery:
    """One event handed to one target. `delivered` is EventBridge's view (the target accepted it); for a state
    machine target `execution` is what its execution ended as (a DescribeExecution response)."""

    rule: str
    target_arn: str
    event: dict[str, Any]
    payload: str
    delivered: bool
    execution: dict[str, Any] | None = None

    @property
    def alert_lost(self) -> bool:
        """An announcement that never reached the alerts topic: refused by an SNS or state machine target, or
        started but ended without publishing."""
        refused = not self.delivered and self.target_arn.startswith(("arn:aws:sns:", "arn:aws:states:"))
        return refused or (self.execution is not None and self.execution["status"] != "SUCCEEDED")


@dataclass
class EventBus:
    """The default bus as far as the rehearsal needs it."""

    rules: list[RuleDefinition]
    sns: Any
    sqs: Any
    queue_urls: dict[str, str]  # queue ARN -> URL
    faults: Any = None
    sfn: Any = None  # Step Functions client, for state machine targets
    # Called with each state machine target's finished execution (DescribeExecution), e.g. to publish its metrics.
    on_execution_finished: Callable[[dict[str, Any]], None] | None = None
    deliveries: list[Delivery] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)

    def put(self, event: dict[str, Any]) -> None:
        self.events.append(event)
        for rule in self.rules:
            if EventPattern.load(json.dumps(rule.pattern)).matches_event(event):  # type: ignore[arg-type]
                for target in rule.targets:
                    self._deliver(rule.name, target, event)

    def _deliver(self, rule: str, target: dict[str, Any], event: dict[str, Any]) -> None:
        payload = transform(event, target.get("InputTransformer"))
        arn: str = target["Arn"]
        # EventBridge retries a failed delivery up to MaximumRetryAttempts (185 by default, over up to 24 h);
        # the waits are compressed here, the attempts are not.
        attempts = 1 + int(target.get("RetryPolicy", {}).get("MaximumRetryAttempts", 185))
        for _ in range(attempts):
            try:
                if arn.startswith("arn:aws:sns:"):
                    self.sns.publish(TopicArn=arn, Message=payload)
                elif arn.startswith("arn:aws:states:"):
                    execution_arn = self._start_execution(arn, payload)
                else:
                    self.sqs.send_message(QueueUrl=self.queue_urls[arn], MessageBody=payload)
            except Exception:  # noqa: BLE001, S112 - a refused delivery is retried, then dead-lettered
                continue
            ended = self._finished(execution_arn) if arn.startswith("arn:aws:states:") else None
            self.deliveries.append(Delivery(rule, arn, event, payload, delivered=True, execution=ended))
            return
        dlq = target.get("DeadLetterConfig", {}).get("Arn")
        if dlq is None:
            raise RuntimeError(f"rule {rule} could not deliver to {arn} and has no DLQ")
        self.sqs.send_message(QueueUrl=self.queue_urls[dlq], MessageBody=json.dumps(event))
        self.deliveries.append(Delivery(rule, arn, event, payload, delivered=False))

    def _start_execution(self, state_machine_arn: str, payload: str) -> str:
        """StartExecution as EventBridge calls it; a fault on "StartAnnouncement" refuses it (e.g. AccessDenied)."""
        if self.faults is not None and self.faults.take("StartAnnouncement", payload) is not None:
            raise RuntimeError("StartExecution refused (injected)")
        started = self.sfn.start_execution(stateMachineArn=state_machine_arn, input=payload,
                                           name=f"event-{uuid.uuid4().hex}")
        return str(started["executionArn"])

    def _finished(self, execution_arn: str) -> dict[str, Any]:
        deadline = time.monotonic() + EXPRESS_WAIT_SECONDS
        while True:
            described: dict[str, Any] = self.sfn.describe_execution(executionArn=execution_arn)
            if described["status"] != "RUNNING":
                if self.on_execution_finished is not None:
                    self.on_execution_finished(described)
                return described
            if time.monotonic() > deadline:
                raise TimeoutError(f"{execution_arn} still running after {EXPRESS_WAIT_SECONDS} s")
            time.sleep(0.005)


def status_change_event(execution: dict[str, Any], account: str, region: str) -> dict[str, Any]:
    """The event Step Functions sends when an execution's status changes (Standard workflows)."""

    def millis(value: datetime | None) -> int | None:
        return int(value.timestamp() * 1000) if value else None

    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": STATUS_CHANGE,
        "source": "aws.states",
        "account": account,
        "time": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": region,
        "resources": [execution["executionArn"]],
        "detail": {
            "executionArn": execution["executionArn"],
            "stateMachineArn": execution["stateMachineArn"],
            "name": execution["name"],
            "status": execution["status"],
            "startDate": millis(execution.get("startDate")),
            "stopDate": millis(execution.get("stopDate")),
            **_payloads(execution.get("input"), execution.get("output")),
            "error": execution.get("error"),
            "cause": execution.get("cause"),
        },
    }


# https://docs.aws.amazon.com/step-functions/latest/dg/eventbridge-integration.html ("EventBridge payloads"): if the
# combined escaped input and escaped output exceed 248 KB, the input is excluded; if the escaped output alone
# exceeds 248 KB, the output is excluded; `inputDetails` / `outputDetails` say whether each was included. This
# keeps the event under EventBridge's 256 KB event size. Read as KiB (248 x 1024 bytes of UTF-8), and "escaped"
# as the value's JSON string form inside the event.
PAYLOAD_LIMIT_BYTES = 248 * 1024


def _payloads(execution_input: str | None, output: str | None) -> dict[str, Any]:
    """detail.input / output and their details, each dropped (null, included false) when too large."""
    input_size, output_size = _escaped_size(execution_input), _escaped_size(output)
    keep_output = output_size <= PAYLOAD_LIMIT_BYTES
    keep_input = input_size + output_size <= PAYLOAD_LIMIT_BYTES  # as documented: the sum of both as they were
    return {
        "input": execution_input if keep_input else None,
        "output": output if keep_output else None,
        "inputDetails": {"included": keep_input},
        "outputDetails": {"included": keep_output} if output is not None else None,
    }


def _escaped_size(value: str | None) -> int:
    return 0 if value is None else len(json.dumps(value, ensure_ascii=False).encode("utf-8")) - 2


def transform(event: dict[str, Any], transformer: dict[str, Any] | None) -> str:
    """Apply an InputTransformer: look up each InputPathsMap path, fill the template's <placeholders>."""
    if transformer is None:
        return json.dumps(event)
    values = {name: _lookup(event, path) for name, path in transformer.get("InputPathsMap", {}).items()}

    def fill(match: re.Match[str]) -> str:
        value = values.get(match.group(1))
        if value is None:
            return "null"
        # Inside the template's JSON strings a value goes in as string content.
        return json.dumps(value)[1:-1] if isinstance(value, str) else json.dumps(value)

    template: str = transformer["InputTemplate"]
    return _PLACEHOLDER.sub(fill, template)


def _lookup(event: dict[str, Any], path: str) -> Any:
    value: Any = event
    for part in path.removeprefix("$.").split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value
