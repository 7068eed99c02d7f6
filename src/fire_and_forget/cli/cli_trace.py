"""ff-ops trace: every execution of one message's work (by key, message id or execution ARN), and where it is now."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.console import Console

from fire_and_forget.cli.aws import Clients
from fire_and_forget.cli.cli_common import (
    AsJson,
    OutputOption,
    Profile,
    Query,
    Region,
    StackName,
    Visibility,
    checked_presentation,
    run,
)
from fire_and_forget.cli.errors import ExitCode
from fire_and_forget.cli.stack import DeployedStack
from fire_and_forget.cli.trace import DEFAULT_MAX_EXECUTIONS, TraceRequest
from fire_and_forget.cli.trace import trace as trace_work
from fire_and_forget.cli.trace_output import document as trace_document
from fire_and_forget.cli.trace_output import render as render_trace
from fire_and_forget.runtime.dlq import DEFAULT_VISIBILITY_TIMEOUT
from fire_and_forget.runtime.outputs import DEFAULT_STACK_NAME, Output


def register(app: typer.Typer) -> None:
    """Add `trace` to ff-ops' commands, where the caller wants it in the help."""
    app.command()(trace)


def trace(
    key: Annotated[
        str,
        typer.Argument(
            metavar="KEY|MESSAGE_ID|EXECUTION_ARN",
            help="A message's key (its body's value of the field the stack's MessageKeyField output names), an SQS "
            "message id (source, redriven, or a failure-DLQ record's) or an execution ARN of the stack's workflow.",
        ),
    ],
    stack_name: StackName = DEFAULT_STACK_NAME,
    region: Region = None,
    profile: Profile = None,
    as_json: AsJson = False,
    output: OutputOption = None,
    query: Query = None,
    max_executions: Annotated[
        int, typer.Option(min=1, help="Read at most the newest N executions of the workflow.")
    ] = DEFAULT_MAX_EXECUTIONS,
    visibility_timeout: Visibility = DEFAULT_VISIBILITY_TIMEOUT,
) -> None:
    """Every execution of a message's work (by key, message id or execution ARN), where it is now, its alerts and
    console links."""
    shown = checked_presentation(as_json, output, query)

    def body(clients: Clients, stack: DeployedStack, out: Console) -> tuple[ExitCode, dict[str, Any] | None]:
        request = TraceRequest(key, max_executions, visibility_timeout, key_field=stack.key_field)
        found = trace_work(clients, stack, request)
        dlq = stack.output(Output.FAILURE_DLQ_URL)
        if shown.is_table:
            render_trace(out, dlq, found)
        return ExitCode.OK, trace_document(stack.name, dlq, found)

    run(stack_name, region, profile, shown, body)
