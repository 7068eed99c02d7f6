"""A definition's states as a graph: where each state can go next, what reaches what, and a deployment's own cut of a
workflow file (states it leaves out)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any


def targets(state: dict[str, Any]) -> Iterator[str]:
    """Every state name a state can go to next."""
    for key in ("Next", "Default"):
        if isinstance(state.get(key), str):
            yield state[key]
    for rule in state.get("Choices", []):
        if isinstance(rule.get("Next"), str):
            yield rule["Next"]
    for catcher in state.get("Catch", []):
        if isinstance(catcher.get("Next"), str):
            yield catcher["Next"]


def reaches(states: dict[str, Any], start: str, goal: str) -> bool:
    seen: set[str] = set()
    todo = [start]
    while todo:
        name = todo.pop()
        if name == goal:
            return True
        if name in seen or name not in states:
            continue
        seen.add(name)
        todo.extend(targets(states[name]))
    return False


def without_states(definition: dict[str, Any], names: Iterable[str]) -> dict[str, Any]:
    """`definition` with each of `names` bypassed (whatever went to it goes to its Next instead) and every state
    nothing reaches any more dropped (its failure path, say): a workflow file with an optional step, deployed
    without it. Raises ValueError for a name that is not a state, or one without a Next to go to instead."""
    states: dict[str, Any] = {name: dict(state) for name, state in definition["States"].items()}
    start = definition["StartAt"]
    for name in names:
        if name not in states:
            raise ValueError(f"cannot leave out {name!r}: the workflow has no such state")
        instead = states.pop(name).get("Next")
        if not isinstance(instead, str):
            raise ValueError(f"cannot leave out {name!r}: only a state with a Next can be bypassed")
        start = instead if start == name else start
        for state in states.values():
            _redirect(state, name, instead)
    kept: dict[str, Any] = {}
    todo = [start]
    while todo:
        name = todo.pop()
        if name in kept or name not in states:
            continue
        kept[name] = states[name]
        todo.extend(targets(states[name]))
    return {**definition, "StartAt": start, "States": {name: states[name] for name in states if name in kept}}


def _redirect(state: dict[str, Any], old: str, new: str) -> None:
    for key in ("Next", "Default"):
        if state.get(key) == old:
            state[key] = new
    if "Choices" in state:
        state["Choices"] = [{**rule, "Next": new} if rule.get("Next") == old else rule for rule in state["Choices"]]
    if "Catch" in state:
        state["Catch"] = [{**c, "Next": new} if c.get("Next") == old else c for c in state["Catch"]]
