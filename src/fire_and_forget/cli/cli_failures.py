"""ff-ops failures: list, show, redrive and discard the failure DLQ's records."""

from __future__ import annotations

import dataclasses
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from fire_and_forget.cli import cli_common, render, report
from fire_and_forget.cli.aws import Clients
from fire_and_forget.cli.cli_common import (
    FLAG,
    AsJson,
    DryRun,
    Errors,
    Keys,
    OutputOption,
    Profile,
    Query,
    Region,
    Since,
    StackName,
    States,
    Until,
    Visibility,
    checked_presentation,
    checked_selection,
    fail,
    run,
)
from fire_and_forget.cli.discard import DiscardRequest, discard_failures
from fire_and_forget.cli.discard_output import document as discard_document
from fire_and_forget.cli.discard_output import render as render_discard
from fire_and_forget.cli.errors import ExitCode, OutputsMissing, UsageError
from fire_and_forget.cli.failures import DEFAULT_LIMIT, Page, Position, find_failures, list_failures
from fire_and_forget.cli.healing import policy_of, waiting_for
from fire_and_forget.cli.stack import HEALING_POLICY_OUTPUT, DeployedStack
from fire_and_forget.runtime.dlq import DEFAULT_VISIBILITY_TIMEOUT
from fire_and_forget.runtime.healing_policy import Disposition
from fire_and_forget.runtime.outputs import DEFAULT_STACK_NAME, Output
from fire_and_forget.runtime.records import FailureRecord
from fire_and_forget.runtime.redrive import RedriveRequest, redrive_failures

failures_app = typer.Typer(no_args_is_help=True, help="Failed messages in the failure DLQ.")


@failures_app.command("list")
def failures_list(
    stack_name: StackName = DEFAULT_STACK_NAME,
    region: Region = None,
    profile: Profile = None,
    as_json: AsJson = False,
    output: OutputOption = None,
    query: Query = None,
    key: Keys = None,
    error: Errors = None,
    state: States = None,
    disposition: Annotated[
        list[Disposition] | None,
        typer.Option(case_sensitive=False, metavar="DISPOSITION",
                     help="Only records that wait for this: " + ", ".join(d.value for d in Disposition)
                     + " (repeatable; the stack's HealingPolicy decides it, as the Redriver does)."),
    ] = None,
    since: Since = None,
    until: Until = None,
    max_: Annotated[
        int | None,
        typer.Option("--max", "--max-items", min=1, help="List at most N records; when more match, the output "
                     "gives the token --starting-token resumes from."),
    ] = None,
    starting_token: Annotated[
        str | None,
        typer.Option(metavar="TOKEN", help="List the records after the last one of the page that gave this token "
                     "(its nextToken)."),
    ] = None,
    limit: Annotated[int, typer.Option(min=1, help="Read at most N messages of the DLQ.")] = DEFAULT_LIMIT,
    visibility_timeout: Visibility = DEFAULT_VISIBILITY_TIMEOUT,
) -> None:
    """List the failure DLQ's records (read, then made visible again at once), a page at a time with --max."""
    shown = checked_presentation(as_json, output, query)
    chosen = checked_selection(key, error, since, until, shown, state)
    try:
        after = Position.from_token(starting_token) if starting_token is not None else None
    except UsageError as failure:
        fail(failure, shown)
    wanted = frozenset(disposition or ())

    def body(clients: Clients, stack: DeployedStack, out: Console) -> tuple[ExitCode, dict[str, Any] | None]:
        policy = policy_of(stack)
        if wanted and policy is None:
            raise OutputsMissing(
                f"stack {stack.name} has no output {HEALING_POLICY_OUTPUT} (deployed before self-healing): its "
                "records have no disposition to select by",
                "select with --error or --state instead, or deploy the current version of the app",
            )

        def keep(record: FailureRecord) -> bool:
            return not wanted or waiting_for(record, policy).disposition in wanted

        listing = list_failures(
            clients.sqs,
            stack.output(Output.FAILURE_DLQ_URL),
            chosen,
            limit=limit,
            visibility_timeout=visibility_timeout,
            key_field=stack.key_field,
            keep=keep,
            page=Page(max_, after),
        )
        if shown.is_table:
            waiting = [waiting_for(record, policy) for record in listing.records]
            render.failures_list(out, listing, waiting, cli_common.now())
        return ExitCode.OK, report.failures_list(stack.name, listing, policy)

    run(stack_name, region, profile, shown, body)


@failures_app.command("show")
def failures_show(
    key: Annotated[
        str,
        typer.Argument(
            help="The message's key (its body's value of the field the stack's MessageKeyField output names), "
            "its DLQ message id, source message id or execution ARN."
        ),
    ],
    stack_name: StackName = DEFAULT_STACK_NAME,
    region: Region = None,
    profile: Profile = None,
    as_json: AsJson = False,
    output: OutputOption = None,
    query: Query = None,
    visibility_timeout: Visibility = DEFAULT_VISIBILITY_TIMEOUT,
) -> None:
    """Everything recorded about one failure: error, cause, compensation, the original message."""
    shown = checked_presentation(as_json, output, query)

    def body(clients: Clients, stack: DeployedStack, out: Console) -> tuple[ExitCode, dict[str, Any] | None]:
        records = find_failures(
            clients.sqs,
            stack.output(Output.FAILURE_DLQ_URL),
            key,
            visibility_timeout=visibility_timeout,
            key_field=stack.key_field,
        )
        policy = policy_of(stack)
        if shown.is_table:
            for record in records:
                render.failure_detail(out, record, stack.key_field, waiting_for(record, policy), cli_common.now())
        return ExitCode.OK, report.failures_show(stack.name, stack.key_field, records, policy)

    run(stack_name, region, profile, shown, body)


@failures_app.command("redrive")
def failures_redrive(
    stack_name: StackName = DEFAULT_STACK_NAME,
    region: Region = None,
    profile: Profile = None,
    as_json: AsJson = False,
    key: Keys = None,
    error: Errors = None,
    since: Since = None,
    until: Until = None,
    all_: Annotated[bool, typer.Option("--all", metavar=FLAG, help="Every failure record.")] = False,
    dry_run: DryRun = False,
    max_: Annotated[int | None, typer.Option("--max", min=1, help="Redrive at most N.")] = None,
    force: Annotated[bool, typer.Option(metavar=FLAG, help="Redrive messages marked for manual repair too.")] = False,
    visibility_timeout: Visibility = DEFAULT_VISIBILITY_TIMEOUT,
) -> None:
    """Send selected failed messages back to the source queue (original body and attributes), then delete them."""
    chosen = checked_selection(key, error, since, until, as_json)
    if chosen.is_everything != all_:
        fail(
            UsageError(
                "say which failures to redrive: --key, --error, --since/--until, or --all "
                "(--all cannot be combined with the others)"
            ),
            as_json,
        )

    def body(clients: Clients, stack: DeployedStack, out: Console) -> tuple[ExitCode, dict[str, Any] | None]:
        dlq_url, source_url = stack.require(Output.FAILURE_DLQ_URL, Output.SOURCE_QUEUE_URL)
        request = RedriveRequest(
            chosen,
            dry_run=dry_run,
            max_messages=max_,
            force=force,
            visibility_timeout=visibility_timeout,
            key_field=stack.key_field,
        )
        progress = None if as_json else (lambda outcome: render.redrive_progress(out, outcome))
        result = redrive_failures(clients.sqs, dlq_url, source_url, request, progress)
        if not as_json:
            render.redrive_summary(out, result)
        return (ExitCode.OK if result.complete else ExitCode.INCOMPLETE), report.failures_redrive(stack.name, result)

    run(stack_name, region, profile, as_json, body)


@failures_app.command("discard")
def failures_discard(
    stack_name: StackName = DEFAULT_STACK_NAME,
    region: Region = None,
    profile: Profile = None,
    as_json: AsJson = False,
    key: Keys = None,
    error: Errors = None,
    message_id: Annotated[
        list[str] | None, typer.Option("--message-id", help="Only this DLQ or source message id (repeatable).")
    ] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", metavar=FLAG, help="Do not ask for confirmation.")] = False,
    dry_run: DryRun = False,
    log: Annotated[
        Path | None,
        typer.Option(help="Append each record, as a JSON line, to this file before deleting it (default: stderr)."),
    ] = None,
    visibility_timeout: Visibility = DEFAULT_VISIBILITY_TIMEOUT,
) -> None:
    """Delete abandoned messages from the failure DLQ; each whole record is logged (JSON line) before it is deleted."""
    chosen = checked_selection(key, error, None, None, as_json)
    request = DiscardRequest(
        chosen, frozenset(message_id or ()), dry_run=dry_run, visibility_timeout=visibility_timeout
    )
    if request.is_empty:
        fail(UsageError("say which failures to discard: --key, --message-id or --error"), as_json)

    def confirm(records: list[Any]) -> bool:
        if yes:
            return True
        listed = ", ".join(r.key or r.message_id for r in records[:10]) + (" …" if len(records) > 10 else "")
        try:
            return typer.confirm(
                f"Delete {len(records)} failure record(s) from the failure DLQ ({listed})? Each is logged first",
                default=False,
                err=True,
            )
        except typer.Abort:  # no answer (stdin closed): no
            return False

    def body(clients: Clients, stack: DeployedStack, out: Console) -> tuple[ExitCode, dict[str, Any] | None]:
        with ExitStack() as files:
            try:
                sink = files.enter_context(log.open("a", encoding="utf-8")) if log is not None else sys.stderr
            except OSError as error:
                raise UsageError(f"cannot write the log {log}: {error}", "give --log a writable file") from error
            keyed = dataclasses.replace(request, key_field=stack.key_field)
            dlq_url = stack.output(Output.FAILURE_DLQ_URL)
            result = discard_failures(clients.sqs, dlq_url, stack.name, keyed, sink, confirm)
        if not as_json:
            render_discard(out, result, log)
        return (ExitCode.OK if result.complete else ExitCode.INCOMPLETE), discard_document(stack.name, result, log)

    run(stack_name, region, profile, as_json, body)
