"""ff-ops failures: list, show, redrive and discard the failure DLQ's records."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Annotated, Any

import typer
from botocore.exceptions import ClientError
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
    command_group,
    fail,
    run,
)
from fire_and_forget.cli.discard import Discarded, DiscardRequest, DiscardVerdict, discard_failures
from fire_and_forget.cli.discard_output import document as discard_document
from fire_and_forget.cli.discard_output import render as render_discard
from fire_and_forget.cli.errors import ExitCode, OutputsMissing, UsageError
from fire_and_forget.cli.failures import DEFAULT_LIMIT, Page, Position, find_failures, list_failures
from fire_and_forget.cli.guard import (
    DEFAULT_RATE,
    AuditLog,
    Decision,
    Guard,
    Planned,
    Rate,
    WriteOptions,
    Yes,
    require_an_answer,
)
from fire_and_forget.cli.healing import policy_of, waiting_for
from fire_and_forget.cli.stack import HEALING_POLICY_OUTPUT, DeployedStack
from fire_and_forget.runtime.dlq import DEFAULT_VISIBILITY_TIMEOUT
from fire_and_forget.runtime.healing_policy import Disposition
from fire_and_forget.runtime.outputs import DEFAULT_STACK_NAME, Output
from fire_and_forget.runtime.records import FailureRecord
from fire_and_forget.runtime.redrive import Action, Outcome, RedriveReport, RedriveRequest, redrive_failures
from fire_and_forget.runtime.status import read_status, redrive_links, resolve_ticket

failures_app = command_group("Failed messages in the failure DLQ.")


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
    yes: Yes = False,
    rate: Rate = DEFAULT_RATE,
    log: AuditLog = None,
    visibility_timeout: Visibility = DEFAULT_VISIBILITY_TIMEOUT,
) -> None:
    """List the selected failed messages, then send them back to the source queue (original body and attributes) and
    delete them from the failure DLQ."""
    chosen = checked_selection(key, error, since, until, as_json)
    if chosen.is_everything != all_:
        fail(
            UsageError(
                "say which failures to redrive: --key, --error, --since/--until, or --all "
                "(--all cannot be combined with the others)"
            ),
            as_json,
        )
    require_an_answer(yes, dry_run, as_json)
    options = WriteOptions(yes, dry_run, rate, log)

    def body(clients: Clients, stack: DeployedStack, out: Console) -> tuple[ExitCode, dict[str, Any] | None]:
        dlq_url, source_url = stack.require(Output.FAILURE_DLQ_URL, Output.SOURCE_QUEUE_URL)
        listed: dict[str, FailureRecord] = {}  # the records the list shows, by DLQ message id

        def note(record: FailureRecord) -> bool:
            listed[record.message_id] = record
            return True

        request = RedriveRequest(chosen, dry_run=True, max_messages=max_, force=force,
                                 visibility_timeout=visibility_timeout, key_field=stack.key_field, choose=note)
        with Guard.open("failures redrive", options, clients, stack.name, out) as guard:
            result = redrive_failures(clients.sqs, dlq_url, source_url, request)
            decision = guard.decide("Redrive", "failure record(s)", [_planned(o) for o in result.outcomes])
            if decision is Decision.GO:
                # Each copy sent back is linked to its caller's message, for `ff-ops message` and the caller's
                # own reads (runtime/status.py); a link the policy refuses is left out, never the redrive.
                links = redrive_links(clients.dynamodb, stack.output(Output.DELIVERIES_TABLE_NAME))
                confirmed = dataclasses.replace(request, dry_run=False, choose=lambda r: r.message_id in listed,
                                                pace=guard.pace, sent=links)
                result = redrive_failures(clients.sqs, dlq_url, source_url, confirmed,
                                          _audited(guard, listed, None if as_json else out))
            else:
                result = _unacted(result, decision, dry_run, None if as_json else out)
            audit = guard.document()
        if not as_json:
            render.redrive_summary(out, result)
        return guard.exit_code(result.complete), report.failures_redrive(stack.name, result, audit)

    run(stack_name, region, profile, as_json, body)


# What each outcome of a redrive did to the queues, for its audit line (fire_and_forget/runtime/redrive.py).
ACTED = {
    Action.REDRIVEN: "SendMessage+DeleteMessage",
    Action.SENT_NOT_DELETED: "SendMessage+DeleteMessage",
    Action.SEND_FAILED: "SendMessage",
    Action.COPY_DELETED: "DeleteMessage",
}


def _planned(outcome: Outcome) -> Planned:
    return Planned(outcome.message_id, outcome.key or "-", outcome.error or "",
                   outcome.action is Action.WOULD_REDRIVE, outcome.reason)


def _audited(guard: Guard, listed: dict[str, FailureRecord], out: Console | None) -> Callable[[Outcome], None]:
    """Print each outcome as it comes, and write the audit line of each one that sent or deleted a message."""

    def done(outcome: Outcome) -> None:
        if out is not None:
            render.redrive_progress(out, outcome)
        if outcome.action in ACTED:
            record = listed.get(outcome.message_id)
            target = {"messageId": outcome.message_id, "key": outcome.key, "error": outcome.error,
                      "newMessageId": outcome.new_message_id}
            guard.audit(ACTED[outcome.action], target, outcome.action.value, outcome.reason,
                        forced=record is not None and record.manual_repair)

    return done


def _unacted(result: RedriveReport, decision: Decision, dry_run: bool, out: Console | None) -> RedriveReport:
    """The list's report as the command's: each item as it was listed, or declined."""
    if decision is Decision.DECLINED:
        return dataclasses.replace(result, dry_run=False, outcomes=[
            dataclasses.replace(o, action=Action.DECLINED) if o.action is Action.WOULD_REDRIVE else o
            for o in result.outcomes])
    if out is not None:
        for outcome in result.outcomes:
            render.redrive_progress(out, outcome)
    return dataclasses.replace(result, dry_run=dry_run)


def _resolve_discarded_ticket(clients: Clients, stack: DeployedStack, caller_message_id: str, guard: Guard) -> None:
    """A discarded message needs no person any more: its OpsCenter ticket, if the stack opened one, is resolved. A
    ticket that cannot be resolved (an operator's older policy) is left open and audited, never the discard undone."""
    table = stack.optional(Output.DELIVERIES_TABLE_NAME)
    if table is None:  # a stack from before the message status: no row, no ticket
        return
    try:
        status = read_status(clients.dynamodb, table, caller_message_id)
        if status.ticket is None:
            return
        resolve_ticket(clients.ssm, clients.dynamodb, table, status, "discarded by an operator (ff-ops failures "
                                                                     "discard)")
    except ClientError as error:
        guard.audit("UpdateOpsItem", {"messageId": caller_message_id}, "failed", str(error))
        return
    guard.audit("UpdateOpsItem", {"messageId": caller_message_id, "ticket": status.ticket}, "resolved", None)


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
    yes: Yes = False,
    dry_run: DryRun = False,
    rate: Rate = DEFAULT_RATE,
    log: AuditLog = None,
    visibility_timeout: Visibility = DEFAULT_VISIBILITY_TIMEOUT,
) -> None:
    """Delete abandoned messages from the failure DLQ, after a list; each whole record is logged (JSON line) before
    it is deleted."""
    chosen = checked_selection(key, error, None, None, as_json)
    request = DiscardRequest(
        chosen, frozenset(message_id or ()), dry_run=True, visibility_timeout=visibility_timeout
    )
    if request.is_empty:
        fail(UsageError("say which failures to discard: --key, --message-id or --error"), as_json)
    require_an_answer(yes, dry_run, as_json)
    options = WriteOptions(yes, dry_run, rate, log)

    def body(clients: Clients, stack: DeployedStack, out: Console) -> tuple[ExitCode, dict[str, Any] | None]:
        keyed = dataclasses.replace(request, key_field=stack.key_field)
        dlq_url = stack.output(Output.FAILURE_DLQ_URL)
        with Guard.open("failures discard", options, clients, stack.name, out) as guard:
            result = discard_failures(clients.sqs, dlq_url, stack.name, keyed, guard.sink)
            decision = guard.decide("Discard", "failure record(s)", [
                Planned(o.message_id, o.key or "-", o.error, True,
                        f"+{len(o.copies)} record(s) of the same execution" if o.copies else None)
                for o in result.outcomes])
            if decision is Decision.GO:
                def done(outcome: Discarded) -> None:
                    guard.audit("DeleteMessage", {"messageId": outcome.message_id, "key": outcome.key,
                                                  "error": outcome.error, "copies": list(outcome.copies)},
                                outcome.verdict.value, outcome.reason)
                    if outcome.verdict is DiscardVerdict.DISCARDED and outcome.caller_message_id is not None:
                        _resolve_discarded_ticket(clients, stack, outcome.caller_message_id, guard)

                confirmed = dataclasses.replace(keyed, dry_run=False,
                                                message_ids=frozenset(o.message_id for o in result.outcomes))
                result = discard_failures(clients.sqs, dlq_url, stack.name, confirmed, guard.sink,
                                          now=cli_common.now, pace=guard.pace, done=done)
            elif decision is Decision.DECLINED:
                result = dataclasses.replace(result, dry_run=False, outcomes=[
                    dataclasses.replace(o, verdict=DiscardVerdict.DECLINED) for o in result.outcomes])
            else:
                result = dataclasses.replace(result, dry_run=dry_run)
            audit = guard.document()
        if not as_json:
            render_discard(out, result, log)
        return guard.exit_code(result.complete), discard_document(stack.name, result, log, audit)

    run(stack_name, region, profile, as_json, body)
