"""The raw SQS record the pipe hands to the state machine, and what the tasks read from it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, NamedTuple

from common.errors import InvalidOrder


class SqsRecord(NamedTuple):
    message_id: str
    body: str


def sqs_record(event: Mapping[str, Any]) -> SqsRecord:
    """The SQS record under ``event["record"]``; a task input without one is rejected, not crashed on."""
    record = event.get("record") if isinstance(event, Mapping) else None
    if not isinstance(record, Mapping):
        raise InvalidOrder("task input has no 'record' object (the raw SQS record the pipe delivered)")
    message_id = record.get("messageId")
    body = record.get("body")
    if not isinstance(message_id, str) or not message_id:
        raise InvalidOrder("SQS record has no messageId")
    if not isinstance(body, str):
        raise InvalidOrder("SQS record has no string body")
    return SqsRecord(message_id=message_id, body=body)


def order_id_of(body: str) -> str | None:
    """Best-effort orderId for compensations: no full validation, so undo works even for a half-valid body.

    Compensations run on every failure path, including InvalidOrder; a body without a usable orderId cannot
    have reserved or charged anything, so None means "nothing to undo".
    """
    try:
        parsed = json.loads(body)
    except (ValueError, RecursionError):
        return None
    order_id = parsed.get("orderId") if isinstance(parsed, dict) else None
    return order_id if isinstance(order_id, str) and order_id else None
