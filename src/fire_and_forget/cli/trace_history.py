"""What an execution's history says of it: the states it entered, one after another, each with its task attempts,
errors and result (`ff-ops trace` and the trend report read it)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

_TASK_END = {
    "TaskSucceeded": "succeeded",
    "TaskFailed": "failed",
    "TaskTimedOut": "timed-out",
    "TaskSubmitFailed": "failed",
    "TaskStartFailed": "failed",
}


@dataclass(frozen=True)
class StateVisit:
    """One entry into a state: how many attempts its task took, the errors of the failed ones, how it ended."""

    name: str
    entered_at: datetime | None
    attempts: int = 0  # Task states only: 1 + the retries
    errors: tuple[str, ...] = ()
    outcome: str | None = None  # succeeded | failed | timed-out; None for a state that is not a Task
    output: Any = None  # the task's result (the Lambda's Payload, SNS's MessageId)

    @property
    def retries(self) -> int:
        return max(0, self.attempts - 1)


def visits(events: list[Any]) -> list[StateVisit]:
    """The states an execution entered, one after another, each with its task attempts, errors and result."""
    found: list[StateVisit] = []
    current: dict[str, Any] | None = None

    def close() -> None:
        if current is not None:
            found.append(
                StateVisit(
                    current["name"],
                    current["at"],
                    current["attempts"],
                    tuple(current["errors"]),
                    current["outcome"],
                    current["output"],
                )
            )

    for event in events:
        kind = event["type"]
        if kind.endswith("StateEntered"):
            close()
            current = {
                "name": event["stateEnteredEventDetails"]["name"],
                "at": event.get("timestamp"),
                "attempts": 0,
                "errors": [],
                "outcome": None,
                "output": None,
            }
        elif current is None:
            continue
        elif kind == "TaskScheduled":
            current["attempts"] += 1
        elif kind in _TASK_END:
            current["outcome"] = _TASK_END[kind]
            details: dict[str, Any] = next((v for k, v in event.items() if k.endswith("EventDetails")), {})
            if kind == "TaskSucceeded":
                current["output"] = _json(details.get("output"))
            else:
                current["errors"].append(details.get("error") or kind)
    close()
    return found


def _json(text: Any) -> Any:
    try:
        return json.loads(text) if isinstance(text, str) else text
    except ValueError:
        return text
