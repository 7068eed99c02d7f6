"""A team's own operator command, built from `fire_and_forget.cli`'s public names only, gets what ff-ops' read
commands have: the stack found by name, --output json|table|text and --query, the exit codes."""

from __future__ import annotations

import json
from typing import Any

import typer
from rich.console import Console
from typer.testing import CliRunner

from fire_and_forget.cli import (
    AsJson,
    Clients,
    DeployedStack,
    ExitCode,
    OutputOption,
    Profile,
    Query,
    Region,
    checked_presentation,
    run,
)
from fire_and_forget.rehearsal.rehearsal import Rehearsal
from fire_and_forget.runtime.outputs import Output

backlog = typer.Typer()


@backlog.command()
def depth(stack_name: str = "FireAndForget", region: Region = None, profile: Profile = None,
          as_json: AsJson = False, output: OutputOption = None, query: Query = None) -> None:
    """The source queue's visible messages."""
    shown = checked_presentation(as_json, output, query)

    def body(clients: Clients, stack: DeployedStack, out: Console) -> tuple[ExitCode, dict[str, Any] | None]:
        url = stack.output(Output.SOURCE_QUEUE_URL)
        attributes = clients.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])
        visible = int(attributes["Attributes"]["ApproximateNumberOfMessages"])
        out.print(f"{stack.name}: {visible} visible")
        return ExitCode.OK, {"schema": "team/backlog/v1", "stack": stack.name, "visible": visible}

    run(stack_name, region, profile, shown, body)


def test_an_own_command_prints_each_format_and_applies_the_query(aws: Rehearsal, cli: CliRunner) -> None:
    aws.sqs.send_message(QueueUrl=aws.outputs["SourceQueueUrl"], MessageBody="{}")
    table = cli.invoke(backlog, ["--stack-name", aws.stack.name])
    assert (table.exit_code, table.stdout.strip()) == (0, f"{aws.stack.name}: 1 visible")
    document = json.loads(cli.invoke(backlog, ["--stack-name", aws.stack.name, "--output", "json"]).stdout)
    assert document == {"schema": "team/backlog/v1", "stack": aws.stack.name, "visible": 1}
    text = cli.invoke(backlog, ["--stack-name", aws.stack.name, "--output", "text", "--query", "visible"])
    assert (text.exit_code, text.stdout.strip()) == (0, "1")


def test_an_own_command_refuses_a_bad_query_before_any_call_and_names_a_missing_stack(aws: Rehearsal,
                                                                                   cli: CliRunner) -> None:
    bad = cli.invoke(backlog, ["--query", "[[", "--output", "json"])
    assert bad.exit_code == ExitCode.USAGE
    missing = cli.invoke(backlog, ["--stack-name", "NoSuchStack", "--output", "json"])
    assert missing.exit_code == ExitCode.STACK_NOT_FOUND
