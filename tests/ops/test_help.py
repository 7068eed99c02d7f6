"""ff-ops' help tells the truth: flags take no value, every option has help, --version, readable `failures show`."""

from __future__ import annotations

from importlib.metadata import version
from typing import Any

import typer
from typer.main import get_command
from typer.testing import CliRunner

from fire_and_forget.cli.app import app
from fire_and_forget.cli.trace import COMPENSATIONS_OUTPUT
from fire_and_forget.rehearsal.rehearsal import Rehearsal
from stacks.orders.stack import COMPENSATIONS as SAGA_COMPENSATIONS
from tests.ops.helpers import failed_orders


def _commands() -> dict[str, typer.core.TyperCommand]:
    """Every leaf command by its full name ("failures redrive")."""
    found: dict[str, typer.core.TyperCommand] = {}

    def walk(group: object, prefix: str) -> None:
        for name, command in getattr(group, "commands", {}).items():
            if hasattr(command, "commands"):
                walk(command, f"{prefix}{name} ")
            else:
                found[f"{prefix}{name}"] = command

    walk(get_command(app), "")
    return found


def test_json_is_a_flag_with_a_negative_form_on_every_command(cli: CliRunner) -> None:
    for name, command in _commands().items():
        (option,) = [p for p in command.params if "--json" in p.opts]
        assert option.secondary_opts == ["--no-json"], name
        assert (
            "<bool>"
            not in cli.invoke(app, [*name.split(), "--help"], terminal_width=200)
            .output.split("--json")[1]
            .split("\n")[0]
        ), name


def test_every_option_and_argument_has_help() -> None:
    missing = [
        f"{name} {param.name}"
        for name, command in _commands().items()
        for param in command.params
        if not getattr(param, "help", None)
    ]
    assert missing == []


def test_version_prints_the_package_version(cli: CliRunner) -> None:
    result = cli.invoke(app, ["--version"])

    assert result.exit_code == 0 and result.output.strip() == f"ff-ops {version('fire-and-forget')}"


def test_trace_learns_the_compensations_from_the_stack(template: dict[str, Any]) -> None:
    # ff-ops knows no workflow: the order stack tells it which states undo, in the saga's order.
    assert template["Outputs"][COMPENSATIONS_OUTPUT]["Value"] == ",".join(SAGA_COMPENSATIONS)


def test_failures_show_prints_readable_values_not_python_reprs(aws: Rehearsal, cli: CliRunner) -> None:
    (order_id,) = failed_orders(aws, 1, first=7301)

    result = cli.invoke(app, ["failures", "show", order_id])

    assert result.exit_code == 0, result.output
    for python in ("{'", "': ", "False}", "True}", "[]", "None"):
        assert python not in result.output, python
    assert "tenant" in result.output and "acme" in result.output
