"""Parsing what operators type: times ("2d", ISO 8601) and the selection of failure records."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from fire_and_forget.cli.errors import UsageError
from fire_and_forget.runtime.records import Selection, parse_time

_AGE = re.compile(r"^(\d+)([smhd])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


def parse_when(text: str, now: datetime) -> datetime:
    """`30m`, `6h`, `2d` (that long ago) or an ISO 8601 time (UTC when it has no offset)."""
    age = _AGE.match(text.strip())
    if age:
        return now - timedelta(**{_UNITS[age.group(2)]: int(age.group(1))})
    parsed = parse_time(text.strip())
    if parsed is None:
        raise UsageError(f"not a time: {text!r}", "use an ISO 8601 time (2026-11-29T10:00:00Z) or an age: 30m, 6h, 2d")
    return parsed.astimezone(UTC)


def selection(keys: list[str] | None, errors: list[str] | None, since: str | None, until: str | None,
              now: datetime, states: list[str] | None = None) -> Selection:
    return Selection(
        keys=frozenset(keys or ()),
        errors=frozenset(errors or ()),
        states=frozenset(states or ()),
        since=parse_when(since, now) if since else None,
        until=parse_when(until, now) if until else None,
    )
