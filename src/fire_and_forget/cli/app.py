"""ff-ops: inspect a Fire-and-Forget pipeline's failures, redrive them. Commands parse and print; logic is in
fire_and_forget/cli/."""

from __future__ import annotations

import dataclasses
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from fire_and_forget import __version__
from fire_and_forget.cli import cli_common, cli_trace, render, report
from fire_and_forget.cli.aws import Clients
from fire_and_forget.cli.cli_common import (
    FLAG,
    AsJson,
    DryRun,
    OutputOption,
    Profile,
    Query,
    Region,
    StackName,
    checked_presentation,
    command_group,
    fail,
    run,
)
from fire_and_forget.cli.cli_failures import failures_app
from fire_and_forget.cli.errors import ExitCode, UsageError
from fire_and_forget.cli.executions import (
    UNSUCCESSFUL,
    ExecutionOutcome,
    ExecutionRedriveRequest,
    RedriveVerdict,
    claims_of,
    plan_executions,
    redrive_planned,
)
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
from fire_and_forget.cli.healing import policy_of
from fire_and_forget.cli.source_dlq import MoveResult, list_messages, queue_arn, redrive_source_dlq, running_task
from fire_and_forget.cli.stack import BOTH_MODES, DeployedStack
from fire_and_forget.cli.status import collect_status
from fire_and_forget.cli.trend_page import key_nouns
from fire_and_forget.cli.trend_report import DEFAULT_MAX_EXECUTIONS as DEFAULT_MAX_TREND_EXECUTIONS
from fire_and_forget.cli.trend_report import collect as collect_trends
from fire_and_forget.runtime.outputs import DEFAULT_STACK_NAME, Output
from fire_and_forget.runtime.status import State, read_status

app = command_group("Inspect a Fire-and-Forget pipeline's failed messages and redrive them without losing one.",
                    add_completion=False)
source_dlq_app = command_group("The source DLQ: messages the pipe could not hand over.")
executions_app = command_group("Executions of the pipeline's workflow.")
app.add_typer(failures_app, name="failures")
app.add_typer(source_dlq_app, name="source-dlq")
app.add_typer(executions_app, name="executions")


def _version(value: bool) -> None:
    if value:
        typer.echo(f"ff-ops {__version__}")  # the package's one version (tests/unit/test_package_boundaries.py)
        raise typer.Exit(0)


@app.callback()
def _options(version: Annotated[bool, typer.Option("--version", metavar=FLAG, is_eager=True, callback=_version,
                                                   help="Print ff-ops' version and exit.")] = False) -> None:
    """Inspect a Fire-and-Forget pipeline's failed messages and redrive them without losing one."""


@app.command()
def status(stack_name: StackName = DEFAULT_STACK_NAME, region: Region = None, profile: Profile = None,
           as_json: AsJson = False, output: OutputOption = None, query: Query = None,
           hours: Annotated[float, typer.Option(min=0.1, help="Window for the execution counts.")] = 24) -> None:
    """Queue depths, oldest message ages, recent unsuccessful executions (with their keys) and the pipe's state."""
    shown = checked_presentation(as_json, output, query)

    def body(clients: Clients, stack: DeployedStack, out: Console) -> tuple[ExitCode, dict[str, Any] | None]:
        result = collect_status(clients, stack, cli_common.now(), timedelta(hours=hours))
        if shown.is_table:
            render.status(out, result)
        return ExitCode.OK, report.status(result)

    run(stack_name, region, profile, shown, body, modes=BOTH_MODES)


cli_trace.register(app)


@app.command("message")
def message_status(message_id: Annotated[str, typer.Argument(help="The MessageId SendMessage returned to the caller.")],
                   stack_name: StackName = DEFAULT_STACK_NAME, region: Region = None, profile: Profile = None,
                   as_json: AsJson = False, output: OutputOption = None, query: Query = None) -> None:
    """Where a caller's message stands: accepted, in progress (its last stage), succeeded, failed (and whether an
    automatic redrive follows) or absorbed; a redriven message is followed to its latest attempt."""
    shown = checked_presentation(as_json, output, query)

    def body(clients: Clients, stack: DeployedStack, out: Console) -> tuple[ExitCode, dict[str, Any] | None]:
        found = read_status(clients.dynamodb, stack.output(Output.DELIVERIES_TABLE_NAME), message_id,
                            policy_of(stack))
        if shown.is_table:
            render.message_status(out, found)
        code = ExitCode.NOT_FOUND if found.state is State.UNKNOWN else ExitCode.OK
        return code, {"schema": "ff-ops/message/v1", "stack": stack.name, **found.as_json()}

    run(stack_name, region, profile, shown, body)


@app.command("report")
def report_page(html: Annotated[Path, typer.Option("--html", help="Where to write the page (HTML, self-contained).")],
                stack_name: StackName = DEFAULT_STACK_NAME, region: Region = None, profile: Profile = None,
                as_json: AsJson = False, output: OutputOption = None, query: Query = None,
                hours: Annotated[float, typer.Option(min=0.0, help="Executions started in the last N hours.")] = 24.0,
                since: Annotated[datetime | None, typer.Option(
                    formats=["%Y-%m-%dT%H:%M:%S%z", "%Y-%m-%dT%H:%M:%S.%f%z", "%Y-%m-%dT%H:%M:%S"],
                    help="Executions started at or after this time (ISO 8601; UTC if no offset); overrides "
                         "--hours.")] = None,
                max_executions: Annotated[int, typer.Option(
                    min=1, help="Read at most the newest N executions.")] = DEFAULT_MAX_TREND_EXECUTIONS) -> None:
    """Write the failure-trend page: executions and failures over time, by error and by step, with the counts."""
    shown = checked_presentation(as_json, output, query)

    def body(clients: Clients, stack: DeployedStack, out: Console) -> tuple[ExitCode, dict[str, Any] | None]:
        until = cli_common.now()
        start = since.replace(tzinfo=since.tzinfo or UTC) if since else until - timedelta(hours=hours)
        trend = collect_trends(clients, stack, start, until, max_executions)
        html.write_text(trend.html(), encoding="utf-8")
        keys = trend.keys
        if shown.is_table:
            unsuccessful = sum(count for _, count in trend.errors)
            out.print(f"Wrote {html}: {len(trend.runs)} executions since {start.isoformat(timespec='seconds')}, "
                      f"{unsuccessful} unsuccessful, of {keys.total} {key_nouns(trend.key_field)[1]} "
                      f"({keys.ran_again} ran more than once)" + (" (the newest only)." if trend.truncated else "."),
                      soft_wrap=True, highlight=False)
        return ExitCode.OK, {"schema": "ff-ops/report/v1", "stack": stack.name, "html": str(html),
                             "since": report.json_time(start), "until": report.json_time(until),
                             "executions": len(trend.runs), "outcomes": dict(trend.outcomes),
                             "errors": dict(trend.errors), "keyField": trend.key_field,
                             "keys": {"total": keys.total, "outcomes": dict(keys.outcomes.most_common()),
                                        "ranMoreThanOnce": keys.ran_again,
                                        "succeededAfterRunningAgain": keys.succeeded_after_running_again},
                             "truncated": trend.truncated}

    run(stack_name, region, profile, shown, body)


@source_dlq_app.command("redrive")
def source_dlq_redrive(stack_name: StackName = DEFAULT_STACK_NAME, region: Region = None, profile: Profile = None,
                       as_json: AsJson = False,
                       all_: Annotated[bool, typer.Option(
                           "--all", metavar=FLAG, help="Every message of the source DLQ (required: a move task moves "
                                                       "them all).")] = False,
                       dry_run: DryRun = False, yes: Yes = False, rate: Rate = DEFAULT_RATE, log: AuditLog = None,
                       wait: Annotated[bool, typer.Option(metavar=FLAG, help="Follow the task until it ends.")]
                       = True,
                       poll_seconds: Annotated[float, typer.Option(
                           min=0.0, help="Seconds between two looks at the task.")] = 2.0) -> None:
    """List the source DLQ, then move it back to the source queue with SQS StartMessageMoveTask, and follow the task."""
    if not all_:
        fail(UsageError("say what to move: --all (SQS's move task moves every message of the source DLQ and takes "
                        "no other selection)", "`--all --dry-run` lists the messages it would move"), as_json)
    require_an_answer(yes, dry_run, as_json)
    options = WriteOptions(yes, dry_run, rate, log)

    def body(clients: Clients, stack: DeployedStack, out: Console) -> tuple[ExitCode, dict[str, Any] | None]:
        dlq_url, source_url = stack.require(Output.SOURCE_DLQ_URL, Output.SOURCE_QUEUE_URL)
        dlq_arn, destination_arn = queue_arn(clients.sqs, dlq_url), queue_arn(clients.sqs, source_url)
        with Guard.open("source-dlq redrive", options, clients, stack.name, out) as guard:
            listed = tuple(list_messages(clients.sqs, dlq_url, stack.key_field))
            running = running_task(clients.sqs, dlq_arn)
            planned = [Planned(m.message_id, m.key or "-", "", acts=True) for m in listed]
            # A move task already running is followed, not started: there is nothing to confirm.
            decision = Decision.GO if running and not dry_run else guard.decide("Move", "message(s)", planned)
            result = MoveResult(started=False, messages_before=len(listed), task=running, waited=False, listed=listed,
                                declined=decision is Decision.DECLINED)
            if decision is Decision.LOOK:
                guard.show("Move", planned)
            elif decision is Decision.GO:
                def started(handle: str, depth: int) -> None:
                    guard.audit("StartMessageMoveTask", {"sourceDlqArn": dlq_arn, "destinationArn": destination_arn,
                                                         "taskHandle": handle, "messages": depth}, "started")

                progress = None if as_json else (lambda task: render.move_progress(out, task))
                result = dataclasses.replace(redrive_source_dlq(
                    clients.sqs, dlq_url, dlq_arn, destination_arn, max_per_second=rate, wait=wait,
                    poll_seconds=poll_seconds, progress=progress, started=started), listed=listed)
            audit = guard.document()
        if not as_json:
            render.move_summary(out, result, dry_run)
        return guard.exit_code(result.succeeded), report.source_dlq_redrive(stack.name, dlq_arn, destination_arn,
                                                                             result, audit)

    run(stack_name, region, profile, as_json, body, modes=BOTH_MODES)


@executions_app.command("redrive")
def executions_redrive(stack_name: StackName = DEFAULT_STACK_NAME, region: Region = None, profile: Profile = None,
                       as_json: AsJson = False,
                       execution_arn: Annotated[list[str] | None, typer.Option(
                           help="This execution (repeatable).")] = None,
                       status_: Annotated[list[str] | None, typer.Option(
                           "--status", help="Every execution of the last 14 days that ended FAILED, TIMED_OUT or "
                                            "ABORTED, as named (repeatable).")] = None,
                       all_: Annotated[bool, typer.Option(
                           "--all", metavar=FLAG, help="Every FAILED, TIMED_OUT and ABORTED execution of the last 14 "
                                                       "days.")] = False,
                       include_recorded: Annotated[bool, typer.Option(
                           metavar=FLAG, help="Also executions whose message is in the failure DLQ (FailureRecorded).")]
                       = False,
                       force: Annotated[bool, typer.Option(
                           metavar=FLAG, help="Also executions a person aborted (never one the Reconciler claimed).")]
                       = False,
                       dry_run: DryRun = False, yes: Yes = False, rate: Rate = DEFAULT_RATE, log: AuditLog = None
                       ) -> None:
    """RedriveExecution for selected FAILED, TIMED_OUT and ABORTED executions of the last 14 days, after a list."""
    statuses = tuple(s.upper() for s in status_ or UNSUCCESSFUL)
    if not set(statuses) <= set(UNSUCCESSFUL):
        fail(UsageError(f"--status must be one of {', '.join(UNSUCCESSFUL)}"), as_json)
    if not (execution_arn or status_ or all_) or (all_ and (execution_arn or status_)):
        fail(UsageError("say which executions to redrive: --execution-arn ARN, --status STATUS (both repeatable), or "
                        "--all (every FAILED, TIMED_OUT and ABORTED one of the last 14 days); --all cannot be "
                        "combined with the others"), as_json)
    require_an_answer(yes, dry_run, as_json)
    options = WriteOptions(yes, dry_run, rate, log)

    def body(clients: Clients, stack: DeployedStack, out: Console) -> tuple[ExitCode, dict[str, Any] | None]:
        arn = stack.output(Output.STATE_MACHINE_ARN)
        claims = claims_of(clients.dynamodb, stack)
        request = ExecutionRedriveRequest(arn, cli_common.now(), statuses, tuple(execution_arn or ()), include_recorded,
                                          dry_run, force)
        with Guard.open("executions redrive", options, clients, stack.name, out) as guard:
            outcomes = plan_executions(clients.sfn, claims, request)
            decision = guard.decide("Redrive", "execution(s)", [_planned(o) for o in outcomes])
            if decision is Decision.GO:
                def done(o: ExecutionOutcome) -> None:
                    guard.audit("RedriveExecution", {"executionArn": o.execution_arn, "status": o.status},
                                o.verdict.value, o.reason, o.forced)

                outcomes = redrive_planned(clients.sfn, claims, request, outcomes, guard.pace, done)
            elif decision is Decision.DECLINED:
                outcomes = [dataclasses.replace(o, verdict=RedriveVerdict.DECLINED)
                            if o.verdict is RedriveVerdict.WOULD_REDRIVE else o for o in outcomes]
            audit = guard.document()
        if not as_json:
            render.executions_summary(out, outcomes, dry_run)
        return guard.exit_code(report.executions_complete(outcomes)), report.executions_redrive(
            stack.name, arn, dry_run, outcomes, audit)

    run(stack_name, region, profile, as_json, body)


def _planned(outcome: ExecutionOutcome) -> Planned:
    stopped = outcome.stop_date.isoformat(timespec="seconds") if outcome.stop_date else "-"
    return Planned(outcome.execution_arn, outcome.execution_arn.rsplit(":", 1)[1],
                   f"{outcome.status} {outcome.error or '-'} stopped {stopped}",
                   outcome.verdict is RedriveVerdict.WOULD_REDRIVE, outcome.reason)


def main() -> None:  # pragma: no cover - `python -m fire_and_forget.cli.app`
    sys.exit(app())


if __name__ == "__main__":  # pragma: no cover
    main()
