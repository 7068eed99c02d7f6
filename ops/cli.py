"""ff-ops: inspect the Fire-and-Forget stack's failures and redrive them. Commands parse and print; logic is in ops/."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, NoReturn

import typer
from botocore.exceptions import BotoCoreError, ClientError
from rich.console import Console

from ops import render, report
from ops.aws import Clients, connect
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
AsJson = Annotated[bool, typer.Option("--json", help="Print one JSON document (docs/operator-cli.md).")]
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
                  until: Until = None, limit: Annotated[int, typer.Option(min=1)] = DEFAULT_LIMIT,
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
                     all_: Annotated[bool, typer.Option("--all", help="Every failure record.")] = False,
                     dry_run: Annotated[bool, typer.Option("--dry-run", help="Show, change nothing.")] = False,
                     max_: Annotated[int | None, typer.Option("--max", min=1, help="Redrive at most N.")] = None,
                     force: Annotated[bool, typer.Option(help="Redrive orders marked for manual repair too.")] = False,
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


@source_dlq_app.command("redrive")
def source_dlq_redrive(stack_name: StackName = DEFAULT_STACK_NAME, region: Region = None, profile: Profile = None,
                       as_json: AsJson = False,
                       max_per_second: Annotated[int | None, typer.Option(min=1, max=500)] = None,
                       wait: Annotated[bool, typer.Option(help="Follow the task until it ends.")] = True,
                       poll_seconds: Annotated[float, typer.Option(min=0.0)] = 2.0) -> None:
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
                           help="Also executions whose order is in the failure DLQ (OrderFailed).")] = False,
                       dry_run: Annotated[bool, typer.Option("--dry-run", help="Show, change nothing.")] = False
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
