"""A carrier for the rehearsal: it reads the shipments BookCarrier hands it (the CarrierRequests queue) and answers
each, hours later on the rehearsal's clock, through the callback entry point's function URL, as a signed principal.

What it does with an order is its `Plan`: confirm after a while (sending heartbeats meanwhile), decline, stay
silent, confirm twice, or confirm after the saga stopped waiting. Each answer names the order and the request id the
request came with; a newer request for the same order (a retried or redriven hand-over) replaces the older one's
plan, as a carrier answering the latest booking would. Every request it took and every reply it got is
kept in `log`, so a test reads what the carrier saw apart from what the workflow did.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from fire_and_forget.rehearsal import Rehearsal

ENTRY_POINT = "CarrierAnswersEntryPoint"  # the function URL's logical id starts so (stacks/orders/stack.py)
REQUESTS_QUEUE = "SagaTasksCarrierRequests"
CARRIER_ROLE = "arn:aws:iam::210987654321:role/carrier-answers"  # the answerer the tests' app configures
HOUR = 3600.0


class Reply(StrEnum):
    CONFIRM = "confirm"
    DECLINE = "decline"
    SILENT = "silent"


@dataclass(frozen=True)
class Plan:
    """What the carrier does with one order: `reply` after `after_hours`, a heartbeat every `heartbeat_hours`
    meanwhile (0: none), and the same reply again `repeat_after_hours` later (None: once)."""

    reply: Reply = Reply.CONFIRM
    after_hours: float = 5.0
    heartbeat_hours: float = 4.0
    repeat_after_hours: float | None = None


@dataclass(frozen=True)
class Exchange:
    """One request to the entry point and what it answered."""

    at: datetime
    key: str
    request: str
    answer: str
    status: int
    verdict: str


@dataclass
class Carrier:
    aws: Rehearsal
    plans: dict[str, Plan] = field(default_factory=dict)
    default: Plan = field(default_factory=Plan)
    caller_arn: str = CARRIER_ROLE
    requests: list[tuple[datetime, dict[str, Any]]] = field(default_factory=list)
    log: list[Exchange] = field(default_factory=list)
    _due: list[tuple[datetime, int, dict[str, Any], dict[str, Any]]] = field(default_factory=list)
    _order: int = 0

    def run_for(self, hours: float) -> None:
        """Take the requests handed over so far, then move the clock `hours` on, answering each at its time (and
        taking the requests that come meanwhile, a retry's or a redrive's)."""
        end = self.aws.now() + timedelta(hours=hours)
        self._take_requests()
        while self._due and self._due[0][0] <= end:
            moment, _, request, body = self._due.pop(0)
            wait = (moment - self.aws.now()).total_seconds()
            if wait > 0:
                self.aws.advance(wait)
            self.answer(request, body)
            self.aws.run_until_quiet()
            self._take_requests()
        rest = (end - self.aws.now()).total_seconds()
        if rest > 0:
            self.aws.advance(rest)
        self._take_requests()

    def answer(self, request: dict[str, Any], body: dict[str, Any]) -> Exchange:
        """Send one answer to `request` (as taken from the queue) now, as the carrier's signed principal."""
        key = request["key"]
        reply = self.aws.call_function_url(ENTRY_POINT, {"key": key, "request": request["request"], **body},
                                           caller_arn=self.caller_arn, path="/answers")
        exchange = Exchange(self.aws.now(), key, request["request"], body["answer"], reply.status,
                            str(reply.body.get("verdict")))
        self.log.append(exchange)
        return exchange

    def replies(self, key: str) -> list[tuple[str, int]]:
        """(answer, HTTP status) of every request the carrier sent for `key`, in order."""
        return [(e.answer, e.status) for e in self.log if e.key == key]

    def _take_requests(self) -> None:
        url = self.aws.outputs.get("CarrierRequestsQueueUrl") or self._queue_url()
        while True:
            messages = self.aws.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
            if not messages:
                return
            for message in messages:
                request = json.loads(message["Body"])
                self.requests.append((self.aws.now(), request))
                self._schedule(request)
                self.aws.sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])

    def _schedule(self, request: dict[str, Any]) -> None:
        key = request["key"]
        plan = self.plans.get(key, self.default)
        now = self.aws.now()
        # A new request for the same order (a retried hand-over) replaces what was planned for the old one.
        self._due = [due for due in self._due if due[2]["key"] != key]
        if plan.heartbeat_hours:
            beat = plan.heartbeat_hours
            while beat < plan.after_hours:
                self._add(now + timedelta(hours=beat), request, {"answer": "heartbeat"})
                beat += plan.heartbeat_hours
        if plan.reply is Reply.SILENT:
            return
        body = {"answer": "success", "output": {"carrier": "booked", "pickupSlot": f"slot-{key}"}} \
            if plan.reply is Reply.CONFIRM else \
            {"answer": "failure", "error": "CarrierDeclined", "cause": "no pickup slot in the next 48 hours"}
        self._add(now + timedelta(hours=plan.after_hours), request, body)
        if plan.repeat_after_hours is not None:
            self._add(now + timedelta(hours=plan.after_hours + plan.repeat_after_hours), request, body)

    def _add(self, moment: datetime, request: dict[str, Any], body: dict[str, Any]) -> None:
        self._order += 1
        self._due.append((moment, self._order, request, body))
        self._due.sort(key=lambda due: (due[0], due[1]))

    def _queue_url(self) -> str:
        (logical_id,) = (lid for lid in self.aws.assembly.resources_of_type("AWS::SQS::Queue")
                         if lid.startswith(REQUESTS_QUEUE))
        return self.aws.stack.physical_ids[logical_id]
