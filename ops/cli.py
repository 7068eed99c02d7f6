"""ff-ops: inspect the Fire-and-Forget stack's failures and redrive them. Commands parse and print; logic is in ops/."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as package_version
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from botocore.exceptions import BotoCoreError, ClientError
from rich.console import Console

from ops import render, report
from ops.aws import Clients, connect
from ops.discard import DiscardRequest, discard_failures
from ops.discard_output import document as discard_document
from ops.discard_output import render as render_discard
from ops.dlq import DEFAULT_VISIBILITY_TIMEOUT
from ops.errors import AwsError, ExitCode, OpsError, UsageError, translate
from ops.executions import UNSUCCESSFUL, ExecutionRedriveRequest, redrive_executions
from ops.failures import DEFAULT_LIMIT, find_failures, list_failures
from ops.options import selection
from ops.records import Selection
from ops.redrive import RedriveRequest, redrive_failures
from ops.smoke import DEFAULT_POLL_SECONDS, DEFAULT_TIMEOUT_SECONDS, SmokeRequest, new_run_id, run_smoke, smoke_clients
from ops.smoke_output import Progress as SmokeProgress
from ops.smoke_output import document as smoke_document
from ops.smoke_output import render as render_smoke
from ops.source_dlq import queue_arn, redrive_source_dlq
from ops.stack import DeployedStack, find_stack
from ops.status import collect_status
from ops.trace import DEFAULT_MAX_EXECUTIONS, TraceRequest
from ops.trace import trace as trace_order
from ops.trace_output import document as trace_document
from ops.trace_output import render as render_trace
from ops.trend_report import DEFAULT_MAX_EXECUTIONS as DEFAULT_MAX_TREND_EXECUTIONS
from ops.trend_report import collect as collect_trends
from stacks.config import DEFAULT_STACK_NAME

app = typer.Typer(no_args_is_help=True, add_completion=False,
                  help="Inspect the Fire-and-Forget stack's failures and redrive them without losing a message.")
failures_app = typer.Typer(no_args_is_help=True, help="The failure DLQ: orders whose saga failed.")
source_dlq_app = typer.Typer(no_args_is_help=True, help="The source DLQ: messages the pipe could not hand over.")
executions_app = typer.Typer(no_args_is_help=True, help="Executions of the order saga.")
app.add_typer(failures_app, name="failures")
app.add_typer(source_dlq_app, name="source-dlq")
app.add_typer(executions_app, name="executions")

StackName = Annotated[str, typer.Option("--stack-name", envvar="FF_STACK_NAME", help="CloudFormation stack name.")]
Region = Annotated[str | None, typer.Option(help="AWS region (default: AWS_REGION / the profile's region).")]
Profile = Annotated[str | None, typer.Option(help="AWS profile (default: AWS_PROFILE / the default chain).")]
AsJson = Annotated[bool, typer.Option("--json/--no-json", metavar="",
                                      help="Print one JSON document (docs/operator-cli.md).")]
# A flag takes no value: an empty metavar keeps Typer from showing `<bool>` as if it took one.
FLAG = ""
DryRun = Annotated[bool, typer.Option("--dry-run", metavar=FLAG, help="Show, change nothing.")]
OrderIds = Annotated[list[str] | None, typer.Option("--order-id", help="Only this order id (repeatable).")]
Errors = Annotated[list[str] | None, typer.Option("--error", help="Only this error name (repeatable).")]
Since = Annotated[str | None, typer.Option(help="Failed at or after: ISO 8601 time or an age like 30m, 6h, 2d.")]
Until = Annotated[str | None, typer.Option(help="Failed at or before: ISO 8601 time or an age like 30m, 6h, 2d.")]
Visibility = Annotated[int, typer.Option(min=5, max=600, help="Seconds a read message stays hidden at most "
                                                             "(restored at once when the command ends).")]


def _run(stack_name: str, region: str | None, profile: str | None, as_json: bool,
         body: Callable[[Clients, DeployedStack, Console], tuple[ExitCode, dict[str, Any] | None]]) -> None:
    """Resolve the stack, run `body`, print its JSON document if asked, and exit with its code."""
    out = Console(stderr=True) if as_json else Console()
    try:
        clients = connect(region=region, profile=profile)
        stack = find_stack(clients.cloudformation, stack_name)
        code, document = body(clients, stack, out)
    except KeyboardInterrupt:
        Console(stderr=True).print("Interrupted. Nothing was lost: messages read were made visible again, and a "
                                   "message sent but not yet deleted is a duplicate the handlers absorb.")
        raise typer.Exit(130) from None
    except (OpsError, ClientError, BotoCoreError) as error:
        failure = translate(error, f"stack {stack_name}") or AwsError(str(error))
        _fail(failure, as_json)
    if as_json and document is not None:
        typer.echo(json.dumps(document, indent=2, sort_keys=False))
    raise typer.Exit(int(code))


def _fail(failure: OpsError, as_json: bool) -> NoReturn:
    err = Console(stderr=True)
    err.print(f"[bold red]error:[/] {failure.message}", highlight=False)
    if failure.hint:
        err.print(f"hint: {failure.hint}", highlight=False)
    if as_json:
        typer.echo(json.dumps(report.error(failure), indent=2))
    raise typer.Exit(int(failure.exit_code))


def _now() -> datetime:
    return datetime.now(UTC)


def _version(value: bool) -> None:
    if value:
        try:
            typer.echo(f"ff-ops {package_version('fire-and-forget')}")
        except PackageNotFoundError:  # pragma: no cover - run from a checkout that was never installed
            typer.echo("ff-ops (not installed: no version)")
        raise typer.Exit(0)


@app.callback()
def _options(version: Annotated[bool, typer.Option("--version", metavar=FLAG, is_eager=True, callback=_version,
                                                   help="Print ff-ops' version and exit.")] = False) -> None:
    """Inspect the Fire-and-Forget stack's failures and redrive them without losing a message."""


def _selection(order_ids: list[str] | None, errors: list[str] | None, since: str | None, until: str | None,
               as_json: bool) -> Selection:
    """The selection flags, checked before any AWS call."""
    try:
        return selection(order_ids, errors, since, until, _now())
    except OpsError as failure:
        _fail(failure, as_json)


@app.command()
def status(stack_name: StackName = DEFAULT_STACK_NAME, region: Region = None, profile: Profile = None,
           as_json: AsJson = False,
           hours: Annotated[float, typer.Option(min=0.1, help="Window for the execution counts.")] = 24) -> None:
    """Queue depths, oldest message ages, recent unsuccessful executions and the pipe's state."""

    def body(clients: Clients, stack: DeployedStack, out: Console) -> tuple[ExitCode, dict[str, Any] | None]:
        result = collect_status(clients, stack, _now(), timedelta(hours=hours))
        if not as_json:
            render.status(out, result)
        return ExitCode.OK, report.status(result)

    _run(stack_name, region, profile, as_json, body)


@failures_app.command("list")
def failures_list(stack_name: StackName = DEFAULT_STACK_NAME, region: Region = None, profile: Profile = None,
                  as_json: AsJson = False, order_id: OrderIds = None, error: Errors = None, since: Since = None,
                  until: Until = None,
                  limit: Annotated[int, typer.Option(min=1, help="Read at most N messages of the DLQ.")]
                  = DEFAULT_LIMIT,
                  visibility_timeout: Visibility = DEFAULT_VISIBILITY_TIMEOUT) -> None:
    """List the failure DLQ's records (read, then made visible again at once)."""
    chosen = _selection(order_id, error, since, until, as_json)

    def body(clients: Clients, stack: DeployedStack, out: Console) -> tuple[ExitCode, dict[str, Any] | None]:
        listing = list_failures(clients.sqs, stack.output("FailureDlqUrl"), chosen, limit=limit,
                                visibility_timeout=visibility_timeout)
        if not as_json:
            render.failures_list(out, listing)
        return ExitCode.OK, report.failures_list(stack.name, listing)

    _run(stack_name, region, profile, as_json, body)


@failures_app.command("show")
def failures_show(key: Annotated[str, typer.Argument(help="Order id, DLQ message id, source message id or "
                                                           "execution ARN.")],
                  stack_name: StackName = DEFAULT_STACK_NAME, region: Region = None, profile: Profile = None,
                  as_json: AsJson = False, visibility_timeout: Visibility = DEFAULT_VISIBILITY_TIMEOUT) -> None:
    """Everything recorded about one failure: error, cause, compensation, the original message."""

    def body(clients: Clients, stack: DeployedStack, out: Console) -> tuple[ExitCode, dict[str, Any] | None]:
        records = find_failures(clients.sqs, stack.output("FailureDlqUrl"), key,
                                visibility_timeout=visibility_timeout)
        if not as_json:
            for record in records:
                render.failure_detail(out, record)
        return ExitCode.OK, report.failures_show(stack.name, records)

    _run(stack_name, region, profile, as_json, body)


@failures_app.command("redrive")
def failures_redrive(stack_name: StackName = DEFAULT_STACK_NAME, region: Region = None, profile: Profile = None,
                     as_json: AsJson = False, order_id: OrderIds = None, error: Errors = None, since: Since = None,
                     until: Until = None,
                     all_: Annotated[bool, typer.Option("--all", metavar=FLAG, help="Every failure record.")] = False,
                     dry_run: DryRun = False,
                     max_: Annotated[int | None, typer.Option("--max", min=1, help="Redrive at most N.")] = None,
                     force: Annotated[bool, typer.Option(metavar=FLAG,
                                                         help="Redrive orders marked for manual repair too.")] = False,
                     visibility_timeout: Visibility = DEFAULT_VISIBILITY_TIMEOUT) -> None:
    """Send selected failed orders back to the source queue (original body and attributes), then delete them."""
    chosen = _selection(order_id, error, since, until, as_json)
    if chosen.is_everything != all_:
        _fail(UsageError("say which failures to redrive: --order-id, --error, --since/--until, or --all "
                         "(--all cannot be combined with the others)"), as_json)

    def body(clients: Clients, stack: DeployedStack, out: Console) -> tuple[ExitCode, dict[str, Any] | None]:
        dlq_url, source_url = stack.require("FailureDlqUrl", "SourceQueueUrl")
        request = RedriveRequest(chosen, dry_run=dry_run, max_messages=max_, force=force,
                                 visibility_timeout=visibility_timeout)
        progress = None if as_json else (lambda outcome: render.redrive_progress(out, outcome))
        result = redrive_failures(clients.sqs, dlq_url, source_url, request, progress)
        if not as_json:
            render.redrive_summary(out, result)
        return (ExitCode.OK if result.complete else ExitCode.INCOMPLETE), report.failures_redrive(stack.name, result)

    _run(stack_name, region, profile, as_json, body)


@failures_app.command("discard")
def failures_discard(stack_name: StackName = DEFAULT_STACK_NAME, region: Region = None, profile: Profile = None,
                     as_json: AsJson = False, order_id: OrderIds = None, error: Errors = None,
                     message_id: Annotated[list[str] | None, typer.Option(
                         "--message-id", help="Only this DLQ or source message id (repeatable).")] = None,
                     yes: Annotated[bool, typer.Option("--yes", "-y", metavar=FLAG,
                                                       help="Do not ask for confirmation.")] = False,
                     dry_run: DryRun = False,
                     log: Annotated[Path | None, typer.Option(
                         help="Append each record, as a JSON line, to this file before deleting it "
                              "(default: stderr).")] = None,
                     visibility_timeout: Visibility = DEFAULT_VISIBILITY_TIMEOUT) -> None:
    """Delete abandoned orders from the failure DLQ; each whole record is logged (JSON line) before it is deleted."""
    chosen = _selection(order_id, error, None, None, as_json)
    request = DiscardRequest(chosen, frozenset(message_id or ()), dry_run=dry_run,
                             visibility_timeout=visibility_timeout)
    if request.is_empty:
        _fail(UsageError("say which failures to discard: --order-id, --message-id or --error"), as_json)

    def confirm(records: list[Any]) -> bool:
        if yes:
            return True
        listed = ", ".join(r.order_id or r.message_id for r in records[:10]) + (" …" if len(records) > 10 else "")
        try:
            return typer.confirm(f"Delete {len(records)} failure record(s) from the failure DLQ ({listed})? "
                                 "Each is logged first", default=False, err=True)
        except typer.Abort:  # no answer (stdin closed): no
            return False

    def body(clients: Clients, stack: DeployedStack, out: Console) -> tuple[ExitCode, dict[str, Any] | None]:
        with ExitStack() as files:
            try:
                sink = files.enter_context(log.open("a", encoding="utf-8")) if log is not None else sys.stderr
            except OSError as error:
                raise UsageError(f"cannot write the log {log}: {error}", "give --log a writable file") from error
            result = discard_failures(clients.sqs, stack.output("FailureDlqUrl"), stack.name, request, sink, confirm)
        if not as_json:
            render_discard(out, result, log)
        return (ExitCode.OK if result.complete else ExitCode.INCOMPLETE), discard_document(stack.name, result, log)

    _run(stack_name, region, profile, as_json, body)


@app.command()
def trace(key: Annotated[str, typer.Argument(metavar="ORDER_ID|MESSAGE_ID",
                                             help="An order id or an SQS message id (source or redriven).")],
          stack_name: StackName = DEFAULT_STACK_NAME, region: Region = None, profile: Profile = None,
          as_json: AsJson = False,
          max_executions: Annotated[int, typer.Option(
              min=1, help="Read at most the newest N executions of the saga.")] = DEFAULT_MAX_EXECUTIONS,
          visibility_timeout: Visibility = DEFAULT_VISIBILITY_TIMEOUT) -> None:
    """Every execution of an order or message, where it is now, its compensations, alerts and console links."""

    def body(clients: Clients, stack: DeployedStack, out: Console) -> tuple[ExitCode, dict[str, Any] | None]:
        found = trace_order(clients, stack, TraceRequest(key, max_executions, visibility_timeout))
        dlq = stack.output("FailureDlqUrl")
        if not as_json:
            render_trace(out, dlq, found)
        return ExitCode.OK, trace_document(stack.name, dlq, found)

    _run(stack_name, region, profile, as_json, body)


@app.command("report")
def report_page(html: Annotated[Path, typer.Option("--html", help="Where to write the page (HTML, self-contained).")],
                stack_name: StackName = DEFAULT_STACK_NAME, region: Region = None, profile: Profile = None,
                as_json: AsJson = False,
                hours: Annotated[float, typer.Option(min=0.0, help="Executions started in the last N hours.")] = 24.0,
                since: Annotated[datetime | None, typer.Option(
                    formats=["%Y-%m-%dT%H:%M:%S%z", "%Y-%m-%dT%H:%M:%S.%f%z", "%Y-%m-%dT%H:%M:%S"],
                    help="Executions started at or after this time (ISO 8601; UTC if no offset); overrides "
                         "--hours.")] = None,
                max_executions: Annotated[int, typer.Option(
                    min=1, help="Read at most the newest N executions.")] = DEFAULT_MAX_TREND_EXECUTIONS) -> None:
    """Write the failure-trend page: executions and failures over time, by error and by step, with the counts."""

    def body(clients: Clients, stack: DeployedStack, out: Console) -> tuple[ExitCode, dict[str, Any] | None]:
        start = since.replace(tzinfo=since.tzinfo or UTC) if since else _now() - timedelta(hours=hours)
        trend = collect_trends(clients, stack, start, max_executions)
        html.write_text(trend.html(), encoding="utf-8")
        if not as_json:
            unsuccessful = sum(count for status, count in trend.outcomes if status != "SUCCEEDED")
            out.print(f"Wrote {html}: {len(trend.timeline)} executions since {start.isoformat(timespec='seconds')}, "
                      f"{unsuccessful} unsuccessful" + (" (the newest only)." if trend.truncated else "."))
        return ExitCode.OK, {"schema": "ff-ops/report/v1", "stack": stack.name, "html": str(html),
                             "since": start.isoformat(), "executions": len(trend.timeline),
                             "outcomes": dict(trend.outcomes), "errors": dict(trend.errors),
                             "truncated": trend.truncated}

    _run(stack_name, region, profile, as_json, body)


@source_dlq_app.command("redrive")
def source_dlq_redrive(stack_name: StackName = DEFAULT_STACK_NAME, region: Region = None, profile: Profile = None,
                       as_json: AsJson = False,
                       max_per_second: Annotated[int | None, typer.Option(
                           min=1, max=500, help="Messages moved per second at most (default: SQS's own rate, "
                                                "up to 500).")] = None,
                       wait: Annotated[bool, typer.Option(metavar=FLAG, help="Follow the task until it ends.")]
                       = True,
                       poll_seconds: Annotated[float, typer.Option(
                           min=0.0, help="Seconds between two looks at the task.")] = 2.0) -> None:
    """Move the source DLQ back to the source queue with SQS StartMessageMoveTask, and follow the task."""

    def body(clients: Clients, stack: DeployedStack, out: Console) -> tuple[ExitCode, dict[str, Any] | None]:
        dlq_url, source_url = stack.require("SourceDlqUrl", "SourceQueueUrl")
        dlq_arn, destination_arn = queue_arn(clients.sqs, dlq_url), queue_arn(clients.sqs, source_url)
        progress = None if as_json else (lambda task: render.move_progress(out, task))
        result = redrive_source_dlq(clients.sqs, dlq_url, dlq_arn, destination_arn, max_per_second=max_per_second,
                                    wait=wait, poll_seconds=poll_seconds, progress=progress)
        if not as_json:
            render.move_summary(out, result)
        code = ExitCode.OK if result.succeeded else ExitCode.INCOMPLETE
        return code, report.source_dlq_redrive(stack.name, dlq_arn, destination_arn, result)

    _run(stack_name, region, profile, as_json, body)


@executions_app.command("redrive")
def executions_redrive(stack_name: StackName = DEFAULT_STACK_NAME, region: Region = None, profile: Profile = None,
                       as_json: AsJson = False,
                       execution_arn: Annotated[list[str] | None, typer.Option(
                           help="Only this execution (repeatable); default: every one of the last 14 days.")] = None,
                       status_: Annotated[list[str] | None, typer.Option(
                           "--status", help="FAILED, TIMED_OUT or ABORTED (repeatable; default all three).")] = None,
                       include_recorded: Annotated[bool, typer.Option(
                           metavar=FLAG, help="Also executions whose order is in the failure DLQ (OrderFailed).")]
                       = False,
                       dry_run: DryRun = False
                       ) -> None:
    """RedriveExecution for the saga's FAILED, TIMED_OUT and ABORTED executions of the last 14 days."""
    statuses = tuple(s.upper() for s in status_ or UNSUCCESSFUL)
    if not set(statuses) <= set(UNSUCCESSFUL):
        _fail(UsageError(f"--status must be one of {', '.join(UNSUCCESSFUL)}"), as_json)

    def body(clients: Clients, stack: DeployedStack, out: Console) -> tuple[ExitCode, dict[str, Any] | None]:
        arn = stack.output("StateMachineArn")
        request = ExecutionRedriveRequest(arn, _now(), statuses, tuple(execution_arn or ()), include_recorded,
                                          dry_run)
        outcomes = redrive_executions(clients.sfn, request)
        if not as_json:
            render.executions_summary(out, outcomes, dry_run)
        code = ExitCode.OK if report.executions_complete(outcomes) else ExitCode.INCOMPLETE
        return code, report.executions_redrive(stack.name, arn, dry_run, outcomes)

    _run(stack_name, region, profile, as_json, body)


@app.command()
def smoke(stack_name: Annotated[str, typer.Option("--stack", "--stack-name", envvar="FF_STACK_NAME",
                                                  help="CloudFormation stack name.")] = DEFAULT_STACK_NAME,
          region: Region = None, profile: Profile = None, as_json: AsJson = False,
          timeout: Annotated[float, typer.Option(min=1, help="Seconds to wait for every outcome.")]
          = DEFAULT_TIMEOUT_SECONDS,
          poll_seconds: Annotated[float, typer.Option(min=0.0, help="Seconds between two looks.")]
          = DEFAULT_POLL_SECONDS,
          country: Annotated[str, typer.Option(help="A served country for the valid order (ISO 3166 alpha-2).")]
          = "US") -> None:
    """Send a valid, an invalid and a compensated order; check each outcome; remove what the run created."""

    def body(clients: Clients, stack: DeployedStack, out: Console) -> tuple[ExitCode, dict[str, Any] | None]:
        request = SmokeRequest(new_run_id(), timeout_seconds=timeout, poll_seconds=poll_seconds,
                               country=country.upper())
        result = run_smoke(smoke_clients(clients, profile), stack, request, progress=SmokeProgress(out))
        if not as_json:
            render_smoke(out, result)
        return (ExitCode.OK if result.passed else ExitCode.CHECK_FAILED), smoke_document(stack.name, result)

    _run(stack_name, region, profile, as_json, body)


def main() -> None:  # pragma: no cover - `python -m ops.cli`
    sys.exit(app())


if __name__ == "__main__":  # pragma: no cover
    main()
