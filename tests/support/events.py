"""Canonical sample events under tests/events/, loaded and varied in one place."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

EVENTS = Path(__file__).resolve().parents[1] / "events"
INVALID_BODIES = EVENTS / "invalid"


def load(name: str) -> dict[str, Any]:
    """A JSON event from tests/events/, e.g. ``load("order")``; a fresh copy each call."""
    event: dict[str, Any] = json.loads((EVENTS / f"{name}.json").read_text(encoding="utf-8"))
    return event


def order(**overrides: Any) -> dict[str, Any]:
    """The canonical valid order with top-level fields replaced."""
    return {**load("order"), **copy.deepcopy(overrides)}


def sqs_record(body: str | dict[str, Any], message_id: str = "059f36b4-87a3-44ab-83d2-661975830a7d") -> dict[str, Any]:
    """The canonical SQS record as the pipe delivers it, carrying ``body`` (an order dict is JSON-encoded)."""
    text = body if isinstance(body, str) else json.dumps(body)
    record = load("sqs_record")
    record.update(messageId=message_id, body=text, md5OfBody=hashlib.md5(text.encode()).hexdigest())
    return record


def reserve_input(record: dict[str, Any], execution_arn: str | None = None) -> dict[str, Any]:
    """The ReserveInventory task input: the raw record plus the execution that runs it."""
    event = load("reserve_inventory_input")
    event["record"] = record
    if execution_arn is not None:
        event["executionArn"] = execution_arn
    return event


def compensation_input(record: dict[str, Any], execution_arn: str | None = None) -> dict[str, Any]:
    """A compensation's task input: ``$$.Execution.Input[0]`` as ``record``, ``$$.Execution.Id`` as executionArn
    (by default the execution of the canonical ReserveInventory input)."""
    return {"record": record, "executionArn": execution_arn or load("reserve_inventory_input")["executionArn"]}


def invalid_bodies() -> list[tuple[str, str]]:
    """(file name, body) for every malformed body of the corpus, sorted by name."""
    return [(path.name, path.read_text(encoding="utf-8")) for path in sorted(INVALID_BODIES.iterdir())]
