"""What every ff-ops command shares: its option types, and one way to resolve the stack, run, print and exit."""

from __future__ import annotations

import json
from collections.abc import Callable, Collection
from datetime import UTC, datetime
from typing import Annotated, Any, NoReturn

import typer
from botocore.exceptions import BotoCoreError, ClientError
from rich.console import Console

from fire_and_forget.cli import report
from fire_and_forget.cli.aws import Clients, connect
from fire_and_forget.cli.errors import AwsError, ExitCode, OpsError, UsageError, translate
from fire_and_forget.cli.options import selection
from fire_and_forget.cli.output import OutputFormat, Presentation, presentation
from fire_and_forget.cli.stack import FIRE_AND_FORGET, KEY_FIELD_OUTPUT, DeployedStack, find_stack
from fire_and_forget.runtime.records import Selection

StackName = Annotated[str, typer.Option("--stack-name", envvar="FF_STACK_NAME", help="CloudFormation stack name.")]
Region = Annotated[str | None, typer.Option(help="AWS region (default: AWS_REGION / the profile's region).")]
Profile = Annotated[str | None, typer.Option(help="AWS profile (default: AWS_PROFILE / the default chain).")]
AsJson = Annotated[
    bool, typer.Option("--json/--no-json", metavar="", help="Print one JSON document (docs/operator-cli.md).")
]
# A read command's --output and --query, as the AWS CLI's (fire_and_forget/cli/output.py); --json is --output json.
OutputOption = Annotated[
    OutputFormat | None,
    typer.Option("--output", case_sensitive=False, help="table (the default), json (the document --json prints) or "
                 "text (its values, tab-separated, as the AWS CLI's text output)."),
]
Query = Annotated[
    str | None,
    typer.Option("--query", metavar="JMESPATH", help="A JMESPath expression applied to the JSON document, as the AWS "
                 "CLI's --query; for json and text output (--query alone means json)."),
]
# A flag takes no value: an empty metavar keeps Typer from showing `<bool>` as if it took one.
FLAG = ""


def command_group(help_text: str, **settings: Any) -> typer.Typer:
    """A group of ff-ops commands. Its help is Click's plain text, up to 120 columns wide: Typer's panels import rich's
    Markdown and Syntax (and markdown-it and Pygments), a third of `ff-ops --help`'s start-up, for boxes around the
    same words (bench/cli_startup.py)."""
    return typer.Typer(no_args_is_help=True, rich_markup_mode=None, context_settings={"max_content_width": 120},
                       help=help_text, **settings)
DryRun = Annotated[bool, typer.Option("--dry-run", metavar=FLAG, help="Show, change nothing.")]
# --order-id is --key's deprecated alias, kept for the runbooks of stacks deployed before MessageKeyField existed
# (CHANGELOG.md); it goes in the next minor version.
Keys = Annotated[
    list[str] | None,
    typer.Option(
        "--key",
        "--order-id",
        metavar="VALUE",
        help="Only the message whose key (its body's value of the field the stack's MessageKeyField output names) "
        "is VALUE (repeatable; --order-id is a deprecated alias).",
    ),
]
Errors = Annotated[list[str] | None, typer.Option("--error", help="Only this error name (repeatable).")]
States = Annotated[
    list[str] | None, typer.Option("--state", metavar="NAME", help="Only records failed in this state (repeatable).")
]
Since = Annotated[str | None, typer.Option(help="Failed at or after: ISO 8601 time or an age like 30m, 6h, 2d.")]
Until = Annotated[str | None, typer.Option(help="Failed at or before: ISO 8601 time or an age like 30m, 6h, 2d.")]
Visibility = Annotated[
    int,
    typer.Option(
        min=5, max=600, help="Seconds a read message stays hidden at most (restored at once when the command ends)."
    ),
]

# What a command does once the stack is found: its exit code and, for --json, its document.
Body = Callable[[Clients, DeployedStack, Console], tuple[ExitCode, dict[str, Any] | None]]


def run(stack_name: str, region: str | None, profile: str | None, as_json: bool | Presentation, body: Body, *,
        modes: Collection[str] = (FIRE_AND_FORGET,)) -> None:
    """Resolve the stack, run `body`, print its document as asked (a write command's `--json` flag, or a read
    command's checked_presentation), and exit with its code. Off the table format, messages go to stderr. A stack
    whose invocation type is not one of `modes` is refused before any other call (exit code 2)."""
    shown = as_json if isinstance(as_json, Presentation) else Presentation(
        OutputFormat.JSON if as_json else OutputFormat.TABLE)
    out = Console() if shown.is_table else Console(stderr=True)
    try:
        clients = connect(region=region, profile=profile)
        stack = find_stack(clients.cloudformation, stack_name)
        if stack.invocation_type not in modes:
            raise _wrong_mode(stack)
        if stack.key_field_assumed:
            Console(stderr=True).print(
                f"note: stack {stack.name} has no output {KEY_FIELD_OUTPUT} (deployed before it existed): "
                f"messages are keyed by their body's {stack.key_field}",
                highlight=False,
            )
        code, document = body(clients, stack, out)
        printed = None if shown.is_table or document is None else shown.render(document)
    except KeyboardInterrupt:
        Console(stderr=True).print(
            "Interrupted. Nothing was lost: messages read were made visible again, and a "
            "message sent but not yet deleted is a duplicate the handlers absorb."
        )
        raise typer.Exit(130) from None
    except (OpsError, ClientError, BotoCoreError) as error:
        failure = translate(error, f"stack {stack_name}") or AwsError(str(error))
        fail(failure, shown)
    if printed is not None:
        typer.echo(printed)
    raise typer.Exit(int(code))


def _wrong_mode(stack: DeployedStack) -> UsageError:
    """This command reads what the stack's mode does not have: the failure DLQ, the Reconciler's records, Standard
    executions (Step Functions' ListExecutions, DescribeExecution, GetExecutionHistory and RedriveExecution support
    no Express workflow)."""
    if stack.request_response:
        return UsageError(
            f"stack {stack.name} runs REQUEST_RESPONSE (an Express workflow the pipe waits for): this command reads "
            "the failure DLQ and Standard executions, which that mode does not have",
            "its failed messages wait in the source DLQ (`ff-ops source-dlq redrive --dry-run` lists them) and "
            "`ff-ops status` counts its failed executions; each execution's error is in the workflow's log group",
        )
    return UsageError(f"stack {stack.name} runs {stack.invocation_type}: this command does not apply to it")


def fail(failure: OpsError, as_json: bool | Presentation) -> NoReturn:
    """Print the error and its hint, and with json output its error document (never queried), and exit with its
    code."""
    err = Console(stderr=True)
    err.print(f"[bold red]error:[/] {failure.message}", highlight=False)
    if failure.hint:
        err.print(f"hint: {failure.hint}", highlight=False)
    if as_json is True or (isinstance(as_json, Presentation) and as_json.format is OutputFormat.JSON):
        typer.echo(json.dumps(report.error(failure), indent=2))
    raise typer.Exit(int(failure.exit_code))


def checked_presentation(as_json: bool, output: OutputFormat | None, query: str | None) -> Presentation:
    """A read command's --json, --output and --query, checked before any AWS call (fire_and_forget/cli/output.py)."""
    try:
        return presentation(as_json, output, query)
    except OpsError as failure:  # json asked for, or implied by a --query alone: the error document too
        fail(failure, as_json or output is OutputFormat.JSON or (output is None and query is not None))


def now() -> datetime:
    """The current time; commands call it through this module, so that tests can fix it in one place."""
    return datetime.now(UTC)


def checked_selection(
    keys: list[str] | None, errors: list[str] | None, since: str | None, until: str | None,
    as_json: bool | Presentation, states: list[str] | None = None,
) -> Selection:
    """The selection flags, checked before any AWS call."""
    try:
        return selection(keys, errors, since, until, now(), states)
    except OpsError as failure:
        fail(failure, as_json)
