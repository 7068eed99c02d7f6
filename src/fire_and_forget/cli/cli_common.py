"""What every ff-ops command shares: its option types, and one way to resolve the stack, run, print and exit."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Annotated, Any, NoReturn

import typer
from botocore.exceptions import BotoCoreError, ClientError
from rich.console import Console

from fire_and_forget.cli import report
from fire_and_forget.cli.aws import Clients, connect
from fire_and_forget.cli.errors import AwsError, ExitCode, OpsError, translate
from fire_and_forget.cli.options import selection
from fire_and_forget.cli.stack import KEY_FIELD_OUTPUT, DeployedStack, find_stack
from fire_and_forget.runtime.records import Selection

StackName = Annotated[str, typer.Option("--stack-name", envvar="FF_STACK_NAME", help="CloudFormation stack name.")]
Region = Annotated[str | None, typer.Option(help="AWS region (default: AWS_REGION / the profile's region).")]
Profile = Annotated[str | None, typer.Option(help="AWS profile (default: AWS_PROFILE / the default chain).")]
AsJson = Annotated[
    bool, typer.Option("--json/--no-json", metavar="", help="Print one JSON document (docs/operator-cli.md).")
]
# A flag takes no value: an empty metavar keeps Typer from showing `<bool>` as if it took one.
FLAG = ""
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


def run(stack_name: str, region: str | None, profile: str | None, as_json: bool, body: Body) -> None:
    """Resolve the stack, run `body`, print its JSON document if asked, and exit with its code."""
    out = Console(stderr=True) if as_json else Console()
    try:
        clients = connect(region=region, profile=profile)
        stack = find_stack(clients.cloudformation, stack_name)
        if stack.key_field_assumed:
            Console(stderr=True).print(
                f"note: stack {stack.name} has no output {KEY_FIELD_OUTPUT} (deployed before it existed): "
                f"messages are keyed by their body's {stack.key_field}",
                highlight=False,
            )
        code, document = body(clients, stack, out)
    except KeyboardInterrupt:
        Console(stderr=True).print(
            "Interrupted. Nothing was lost: messages read were made visible again, and a "
            "message sent but not yet deleted is a duplicate the handlers absorb."
        )
        raise typer.Exit(130) from None
    except (OpsError, ClientError, BotoCoreError) as error:
        failure = translate(error, f"stack {stack_name}") or AwsError(str(error))
        fail(failure, as_json)
    if as_json and document is not None:
        typer.echo(json.dumps(document, indent=2, sort_keys=False))
    raise typer.Exit(int(code))


def fail(failure: OpsError, as_json: bool) -> NoReturn:
    """Print the error and its hint (and its JSON document if asked), and exit with its code."""
    err = Console(stderr=True)
    err.print(f"[bold red]error:[/] {failure.message}", highlight=False)
    if failure.hint:
        err.print(f"hint: {failure.hint}", highlight=False)
    if as_json:
        typer.echo(json.dumps(report.error(failure), indent=2))
    raise typer.Exit(int(failure.exit_code))


def now() -> datetime:
    """The current time; commands call it through this module, so that tests can fix it in one place."""
    return datetime.now(UTC)


def checked_selection(
    keys: list[str] | None, errors: list[str] | None, since: str | None, until: str | None, as_json: bool
) -> Selection:
    """The selection flags, checked before any AWS call."""
    try:
        return selection(keys, errors, since, until, now())
    except OpsError as failure:
        fail(failure, as_json)
