"""`--output json|table|text` and `--query` on every read command, as the AWS CLI's; `--json` is `--output json`, and
the write commands keep only `--json` (fire_and_forget/cli/output.py, docs/operator-cli.md "Output formats")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.main import get_command
from typer.testing import CliRunner

from fire_and_forget.cli.app import app
from fire_and_forget.cli.errors import ExitCode
from fire_and_forget.cli.output import text_lines
from fire_and_forget.rehearsal.rehearsal import Rehearsal
from tests.ops.helpers import failed_orders, ff_ops

READ_COMMANDS = {"status", "trace", "report", "message", "failures list", "failures show"}
WRITE_COMMANDS = {"failures redrive", "failures discard", "source-dlq redrive", "executions redrive"}


def _leaves() -> dict[str, Any]:
    """Every leaf command by its full name ("failures list")."""
    found: dict[str, Any] = {}

    def walk(group: Any, prefix: str) -> None:
        for name, command in group.commands.items():
            if hasattr(command, "commands"):
                walk(command, f"{prefix}{name} ")
            else:
                found[f"{prefix}{name}"] = command

    walk(get_command(app), "")
    return found


def test_every_read_command_takes_output_and_query_and_the_write_commands_only_json() -> None:
    commands = _leaves()
    assert set(commands) == READ_COMMANDS | WRITE_COMMANDS  # a new command is sorted into one of the two here
    options = {name: {opt for param in command.params for opt in param.opts} for name, command in commands.items()}
    for name in READ_COMMANDS:
        assert {"--output", "--query", "--json"} <= options[name], name
    for name in WRITE_COMMANDS:
        assert "--json" in options[name] and not {"--output", "--query"} & options[name], name


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--query", "failures[?"], "is not a valid JMESPath expression"),
        (["--output", "table", "--query", "read"], "--query applies to the JSON document"),
        (["--json", "--output", "text"], "--json is --output json"),
    ],
)
def test_a_bad_output_choice_is_a_usage_error_before_any_aws_call(cli: CliRunner, args: list[str],
                                                                  message: str) -> None:
    # No deployment: the options are checked first, so no stack is looked for
    result = cli.invoke(app, ["failures", "list", "--region", "eu-west-3", *args], env={"COLUMNS": "200"})

    assert result.exit_code == ExitCode.USAGE and message in result.stderr, result.output


@pytest.mark.parametrize("output", [["--output", "json"], []], ids=["json", "implied by --query"])
def test_an_invalid_query_with_json_output_prints_the_error_document(cli: CliRunner, output: list[str]) -> None:
    result = cli.invoke(app, ["status", *output, "--query", "executions.[", "--region", "eu-west-3"])

    document = json.loads(result.stdout)
    assert result.exit_code == ExitCode.USAGE and document["error"]["type"] == "UsageError"
    assert "not a valid JMESPath expression" in document["error"]["message"]


def test_an_invalid_query_with_text_output_prints_nothing_on_stdout(cli: CliRunner) -> None:
    result = cli.invoke(app, ["status", "--output", "text", "--query", "executions.[", "--region", "eu-west-3"])

    assert result.exit_code == ExitCode.USAGE and result.stdout == "" and "JMESPath" in result.stderr


def test_every_read_command_applies_the_query_to_its_document(aws: Rehearsal, cli: CliRunner, tmp_path: Path) -> None:
    (order_id,) = failed_orders(aws, 1, first=7701)
    newest = ["--max-executions", "1"]  # this test's execution is the newest: no need to read the others
    commands = {
        "status": ["status"],
        "trace": ["trace", order_id, *newest],
        "report": ["report", "--html", str(tmp_path / "trend.html"), *newest],
        "failures list": ["failures", "list"],
        "failures show": ["failures", "show", order_id],
        "message": ["message", aws.sent[-1]],
    }
    assert set(commands) == READ_COMMANDS
    for name, args in commands.items():
        result = cli.invoke(app, [*args, "--output", "text", "--query", "[schema, stack]"])
        assert result.exit_code == 0, (name, result.output)
        assert result.stdout == f"ff-ops/{name.replace(' ', '-')}/v1\tFireAndForget\n", name


def test_a_query_alone_prints_json(aws: Rehearsal, cli: CliRunner) -> None:
    (order_id,) = failed_orders(aws, 1, first=7703)

    result = cli.invoke(app, ["failures", "list", "--query", "failures[].key"])

    assert result.exit_code == 0 and json.loads(result.stdout) == [order_id]


def test_json_is_output_json_and_text_holds_the_same_values(aws: Rehearsal, cli: CliRunner) -> None:
    (order_id,) = failed_orders(aws, 1, first=7702)

    _, flag = ff_ops(cli, "failures", "list")
    option = json.loads(cli.invoke(app, ["failures", "list", "--output", "json"]).stdout)
    text = cli.invoke(app, ["failures", "list", "--output", "text",
                            "--query", "failures[].[key, messageId, failedState]"]).stdout

    assert {k: v for k, v in flag.items() if k != "approximateDepth"} == \
        {k: v for k, v in option.items() if k != "approximateDepth"}
    (failure,) = flag["failures"]
    assert text.splitlines() == [f"{order_id}\t{failure['messageId']}\tReserveInventory"]


def test_a_query_that_does_not_fit_the_document_is_a_usage_error(aws: Rehearsal, cli: CliRunner) -> None:
    result = cli.invoke(app, ["failures", "list", "--query", "abs(stack)"])

    assert result.exit_code == ExitCode.USAGE and "cannot be applied" in result.stderr, result.output


def test_text_output_follows_the_aws_cli_layout() -> None:
    document = {
        "schema": "ff-ops/x/v1",
        "read": 2,
        "truncated": False,
        "nextToken": None,
        "failures": [{"key": "ord-1", "error": "OutOfStock", "copies": ["m-2"]}, {"key": "ord-3", "cause": "c"}],
        "scan": {"executionsScanned": 1},
    }

    assert list(text_lines(document)) == [
        "None\t2\tff-ops/x/v1\tFalse",  # the top level's scalars, by key: nextToken, read, schema, truncated
        "FAILURES\t\tOutOfStock\tord-1",  # one set of columns for the list's objects: cause, error, key
        "COPIES\tm-2",  # a list of scalars under its name: one line per value
        "FAILURES\tc\t\tord-3",
        "SCAN\t1",
    ]
    assert list(text_lines([["a", 1, True], ["b", 2, None]])) == ["a\t1\tTrue", "b\t2\tNone"]  # a list of lists
    assert list(text_lines(["x", "y"])) == ["x\ty"]  # a bare list of scalars: one line
