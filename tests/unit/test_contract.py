"""The names stacks/contract.py shares with src/fire_and_forget/rehearsal/ and src/fire_and_forget/cli/ are the ones the
order saga's ASL defines."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from fire_and_forget.runtime.tail import DUPLICATE_ENDS
from stacks.config import AppConfig
from stacks.orders.stack import render_definition


def _states(states: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every state of a definition, those inside Parallel branches and Map processors included."""
    for name, state in states.items():
        yield name, state
        for branch in state.get("Branches", []):
            yield from _states(branch["States"])
        if "ItemProcessor" in state:
            yield from _states(state["ItemProcessor"]["States"])


def test_duplicate_ends_are_the_sagas_succeed_states() -> None:
    # Given the order saga's definition, whose only Succeed states end an execution that another one owns
    definition = render_definition(AppConfig())

    # When its Succeed states are collected
    succeed = {name for name, state in _states(definition["States"]) if state["Type"] == "Succeed"}

    # Then they are exactly the quiet ends src/fire_and_forget/rehearsal/ and src/fire_and_forget/cli/ count as
    # duplicates
    assert succeed == DUPLICATE_ENDS
