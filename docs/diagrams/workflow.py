"""The order saga as a state diagram, generated from its ASL (statemachines/orders/order_saga.asl.json, with the
pipeline's failure tail appended as deployed) so it cannot drift."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
ASL_FILE = REPO / "statemachines" / "orders" / "order_saga.asl.json"
OUTPUT = REPO / "docs" / "workflow.png"

# (shape, style, fill colour) per state type; Choice/Wait/Parallel/Map are here for the day the ASL uses them.
# Succeed and Fail are drawn with a double border: the execution ends there.
STYLES: dict[str, tuple[str, str, str]] = {
    "Task": ("box", "rounded,filled", "#ffe8cc"),
    "Pass": ("box", "filled,dashed", "#eeeeee"),
    "Choice": ("diamond", "filled", "#fff4b3"),
    "Wait": ("ellipse", "filled", "#e0f0ff"),
    "Parallel": ("box3d", "filled", "#e6e6ff"),
    "Map": ("box3d", "filled", "#e6e6ff"),
    "Succeed": ("box", "rounded,filled,bold", "#c8f0c8"),
    "Fail": ("box", "rounded,filled,bold", "#ffc8c8"),
}
CATCH_COLOUR = "#c0392b"
START, END = "__start__", "__end__"
LEGEND = (
    "\nsolid arrow: Next   red dashed arrow: Catch, labelled with its ErrorEquals\n"
    "orange: Task (its resource and Retry policies)   grey dashed: Pass   green: Succeed   red: Fail"
)


def quote(text: str) -> str:
    """A DOT double-quoted string."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def short_resource(resource: str) -> str:
    """`arn:aws:states:::lambda:invoke` -> `lambda:invoke`; other resources (an activity, a raw ARN) unchanged."""
    prefix = "arn:aws:states:::"
    return resource[len(prefix) :] if resource.startswith(prefix) else resource


def retry_note(retrier: dict[str, Any]) -> str:
    """One line per retrier: what it retries, how often, and its backoff."""
    errors = retrier["ErrorEquals"]
    what = errors[0] if len(errors) == 1 else f"{errors[0]} +{len(errors) - 1} more"
    attempts = retrier.get("MaxAttempts", 3)
    if attempts == 0:
        return f"no retry: {what}"
    backoff = f"{retrier.get('IntervalSeconds', 1)}s x{retrier.get('BackoffRate', 2.0)}"
    if "MaxDelaySeconds" in retrier:
        backoff += f" <={retrier['MaxDelaySeconds']}s"
    if retrier.get("JitterStrategy") == "FULL":
        backoff += " jitter"
    return f"Retry {what}: {attempts}x, {backoff}"


def node_label(name: str, state: dict[str, Any]) -> str:
    lines = [name]
    if state["Type"] == "Task":
        lines.append(short_resource(state["Resource"]))
    elif state["Type"] in ("Succeed", "Fail"):
        lines.append(state["Type"] + (f": {state['Error']}" if "Error" in state else ""))
    lines += [retry_note(retrier) for retrier in state.get("Retry", [])]
    return "\n".join(lines)


def transitions(state: dict[str, Any]) -> Iterator[tuple[str, str, str]]:
    """(kind, target, label) for every way out of a state: Next, End, Choice rules, Default and Catch."""
    if "Next" in state:
        yield "next", state["Next"], ""
    if state.get("End"):
        yield "next", END, ""
    for index, choice in enumerate(state.get("Choices", [])):
        yield "next", choice["Next"], choice.get("Variable", f"rule {index + 1}")
    if "Default" in state:
        yield "next", state["Default"], "Default"
    for catcher in state.get("Catch", []):
        yield "catch", catcher["Next"], "\n".join(catcher["ErrorEquals"])


def branches(state: dict[str, Any]) -> list[dict[str, Any]]:
    """The nested state machines of a Parallel (Branches) or Map (ItemProcessor, or the older Iterator)."""
    if state["Type"] == "Parallel":
        found: list[dict[str, Any]] = state["Branches"]
        return found
    if state["Type"] == "Map":
        return [state.get("ItemProcessor") or state["Iterator"]]
    return []


def machine_lines(machine: dict[str, Any], prefix: str, entry: str) -> list[str]:
    """Nodes and edges of one (possibly nested) state machine; `entry` is the node that points at StartAt."""
    lines = [f"  {quote(entry)} -> {quote(prefix + machine['StartAt'])};"]
    end = prefix + END
    for name, state in machine["States"].items():
        shape, style, fill = STYLES[state["Type"]]
        border = ", peripheries=2" if state["Type"] in ("Succeed", "Fail") else ""
        lines.append(
            f"  {quote(prefix + name)} [label={quote(node_label(name, state))}, shape={shape}, "
            f'style="{style}", fillcolor="{fill}"{border}];'
        )
        for kind, target, label in transitions(state):
            attributes = [f"label={quote(label)}"] if label else []
            if kind == "catch":
                attributes += ["style=dashed", f'color="{CATCH_COLOUR}"', f'fontcolor="{CATCH_COLOUR}"']
            suffix = f" [{', '.join(attributes)}]" if attributes else ""
            lines.append(f"  {quote(prefix + name)} -> {quote(end if target == END else prefix + target)}{suffix};")
        for index, branch in enumerate(branches(state)):
            inner = f"{prefix}{name}/{index + 1}/"
            lines.append(f"  subgraph {quote('cluster_' + inner)} {{ label={quote(f'{name} branch {index + 1}')};")
            lines.append(
                f'  {quote(inner + END)} [label="", shape=doublecircle, width=0.15, style=filled, fillcolor=black];'
            )
            lines += machine_lines(branch, inner, prefix + name)
            lines.append("  }")
    if any(target == END for state in machine["States"].values() for _, target, _ in transitions(state)) and not prefix:
        lines.append(f'  {quote(END)} [label="", shape=doublecircle, width=0.2, style=filled, fillcolor=black];')
    return lines


def to_dot(definition: dict[str, Any], title: str = "Order saga") -> str:
    """The DOT text of a state machine definition: Next edges solid, Catch edges dashed and labelled."""
    header = [
        "digraph workflow {",
        f"  label={quote(title + ' (generated from ' + ASL_FILE.relative_to(REPO).as_posix() + ')' + LEGEND)};",
        '  labelloc=t; fontname="Helvetica"; rankdir=TB; nodesep=0.4; ranksep=0.45;',
        '  node [fontname="Helvetica", fontsize=10]; edge [fontname="Helvetica", fontsize=9];',
        f'  {quote(START)} [label="", shape=circle, width=0.2, style=filled, fillcolor=black];',
    ]
    return "\n".join([*header, *machine_lines(definition, "", START), "}"]) + "\n"


def render(dot_text: str, output: Path) -> None:
    """Render DOT text to a PNG with graphviz's `dot`."""
    dot = shutil.which("dot")
    if dot is None:
        sys.exit("graphviz's `dot` is not installed: apt-get install graphviz (Debian/Ubuntu) or brew install graphviz")
    subprocess.run([dot, "-Tpng", "-Gdpi=110", "-o", str(output)], input=dot_text, text=True, check=True)


def main() -> None:
    from stacks.config import AppConfig
    from stacks.orders.stack import render_definition

    definition = render_definition(AppConfig())
    render(to_dot(definition), OUTPUT)
    print(f"wrote {OUTPUT.relative_to(REPO)}")


if __name__ == "__main__":
    main()
