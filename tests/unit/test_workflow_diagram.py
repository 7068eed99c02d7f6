"""docs/workflow.png is generated from the ASL: its DOT text holds every state and every transition of the file."""

from __future__ import annotations

import re
from typing import Any

import pytest

from docs.diagrams.workflow import to_dot

# `"From" -> "To"` with an optional attribute list; labels are DOT strings with \n for line breaks.
EDGE = re.compile(r'^\s*"(?P<source>[^"]+)" -> "(?P<target>[^"]+)"(?: \[(?P<attributes>.*)\])?;$', re.MULTILINE)
NODE = re.compile(r'^\s*"(?P<name>[^"]+)" \[label="(?P<label>(?:[^"\\]|\\.)*)"', re.MULTILINE)


@pytest.fixture(scope="module")
def definition() -> dict[str, Any]:
    from stacks.config import AppConfig
    from stacks.orders.stack import render_definition

    loaded: dict[str, Any] = render_definition(AppConfig())
    return loaded


@pytest.fixture(scope="module")
def dot(definition: dict[str, Any]) -> str:
    return to_dot(definition)


def edges(dot: str) -> set[tuple[str, str, str]]:
    """(source, target, label) of every edge; the label is "" for a plain Next edge."""
    found = set()
    for match in EDGE.finditer(dot):
        label = re.search(r'label="((?:[^"\\]|\\.)*)"', match["attributes"] or "")
        found.add((match["source"], match["target"], label[1].replace("\\n", "\n") if label else ""))
    return found


def test_every_state_of_the_asl_is_a_node_and_nothing_else_is(definition: dict[str, Any], dot: str) -> None:
    nodes = {match["name"] for match in NODE.finditer(dot)} - {"__start__", "__end__"}
    assert nodes == set(definition["States"])


def test_every_next_edge_of_the_asl_is_drawn(definition: dict[str, Any], dot: str) -> None:
    expected = {(name, state["Next"], "") for name, state in definition["States"].items() if "Next" in state}
    expected |= {("__start__", definition["StartAt"], "")}
    expected |= {(name, "__end__", "") for name, state in definition["States"].items() if state.get("End")}
    assert expected <= edges(dot)
    assert ("ArrangeShipping", "__end__", "") in expected


def test_every_catch_edge_is_drawn_dashed_and_labelled_with_its_error_equals(
    definition: dict[str, Any], dot: str
) -> None:
    expected = {
        (name, catcher["Next"], "\n".join(catcher["ErrorEquals"]))
        for name, state in definition["States"].items()
        for catcher in state.get("Catch", [])
    }
    assert expected <= edges(dot)
    assert ("ReserveInventory", "ReserveInventoryRejected", "InvalidOrder\nOutOfStock\nOrderConflict") in expected
    dashed = {m["source"] + ">" + m["target"] for m in EDGE.finditer(dot) if "style=dashed" in (m["attributes"] or "")}
    assert dashed == {f"{source}>{target}" for source, target, _ in expected}


def test_no_edge_is_drawn_that_the_asl_does_not_have(definition: dict[str, Any], dot: str) -> None:
    states = definition["States"]
    allowed = {("__start__", definition["StartAt"])}
    for name, state in states.items():
        allowed |= {(name, state["Next"])} if "Next" in state else set()
        allowed |= {(name, "__end__")} if state.get("End") else set()
        allowed |= {(name, catcher["Next"]) for catcher in state.get("Catch", [])}
        # A Choice (the tail's AnnounceUnlessRetried) goes to each rule's Next and to its Default.
        allowed |= {(name, rule["Next"]) for rule in state.get("Choices", [])}
        allowed |= {(name, state["Default"])} if "Default" in state else set()
    assert any(state["Type"] == "Choice" for state in states.values())  # the Choice branch above is exercised
    assert {(source, target) for source, target, _ in edges(dot)} == allowed


def test_retry_policies_are_noted_on_their_states(definition: dict[str, Any], dot: str) -> None:
    labels = {match["name"]: match["label"] for match in NODE.finditer(dot)}
    for name, state in definition["States"].items():
        # One line per retrier, under the name (which may say Retry too: FailureRecordedForRetry).
        notes = labels[name].split("\\n")[1:]
        assert sum("etry" in line for line in notes) == len(state.get("Retry", [])), name
    retrier, throttle = definition["States"]["RefundPayment"]["Retry"]
    others = len(retrier["ErrorEquals"]) - 1
    assert f"Retry TransientError +{others} more: 6x, 2s x2.0 <=30s jitter" in labels["RefundPayment"]
    assert throttle["ErrorEquals"] == ["Lambda.TooManyRequestsException"]
    assert "Retry Lambda.TooManyRequestsException: 10x, 2s x2.0 <=30s jitter" in labels["RefundPayment"]


def test_a_choice_with_default_and_a_parallel_branch_are_drawn_too() -> None:
    # Given states the order saga does not use yet
    definition = {
        "StartAt": "Route",
        "States": {
            "Route": {
                "Type": "Choice",
                "Choices": [{"Variable": "$.rush", "BooleanEquals": True, "Next": "Both"}],
                "Default": "Done",
            },
            "Both": {
                "Type": "Parallel",
                "Next": "Done",
                "Branches": [{"StartAt": "Inner", "States": {"Inner": {"Type": "Pass", "End": True}}}],
            },
            "Done": {"Type": "Succeed"},
        },
    }
    # When the DOT text is generated
    found = edges(to_dot(definition))
    # Then the choice rule, the default and the branch entry are edges
    assert {("Route", "Both", "$.rush"), ("Route", "Done", "Default"), ("Both", "Both/1/Inner", "")} <= found
    assert ("Both/1/Inner", "Both/1/__end__", "") in found
