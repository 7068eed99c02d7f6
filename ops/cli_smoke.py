"""ff-ops smoke: a valid, an invalid and a compensated order through the deployed stack, each outcome checked."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.console import Console

from ops.aws import Clients
from ops.cli_common import AsJson, Profile, Region, run
from ops.errors import ExitCode
from ops.smoke import DEFAULT_POLL_SECONDS, DEFAULT_TIMEOUT_SECONDS, SmokeRequest, new_run_id, run_smoke, smoke_clients
from ops.smoke_output import Progress as SmokeProgress
from ops.smoke_output import document as smoke_document
from ops.smoke_output import render as render_smoke
from ops.stack import DeployedStack
from stacks.config import DEFAULT_STACK_NAME


def register(app: typer.Typer) -> None:
    """Add `smoke` to ff-ops' commands, where the caller wants it in the help."""
    app.command()(smoke)


def smoke(
    stack_name: Annotated[
        str, typer.Option("--stack", "--stack-name", envvar="FF_STACK_NAME", help="CloudFormation stack name.")
    ] = DEFAULT_STACK_NAME,
    region: Region = None,
    profile: Profile = None,
    as_json: AsJson = False,
    timeout: Annotated[float, typer.Option(min=1, help="Seconds to wait for every outcome.")] = DEFAULT_TIMEOUT_SECONDS,
    poll_seconds: Annotated[float, typer.Option(min=0.0, help="Seconds between two looks.")] = DEFAULT_POLL_SECONDS,
    country: Annotated[str, typer.Option(help="A served country for the valid order (ISO 3166 alpha-2).")] = "US",
) -> None:
    """Send a valid, an invalid and a compensated order; check each outcome; remove what the run created."""

    def body(clients: Clients, stack: DeployedStack, out: Console) -> tuple[ExitCode, dict[str, Any] | None]:
        request = SmokeRequest(
            new_run_id(), timeout_seconds=timeout, poll_seconds=poll_seconds, country=country.upper()
        )
        result = run_smoke(smoke_clients(clients, profile), stack, request, progress=SmokeProgress(out))
        if not as_json:
            render_smoke(out, result)
        return (ExitCode.OK if result.passed else ExitCode.CHECK_FAILED), smoke_document(stack.name, result)

    run(stack_name, region, profile, as_json, body)
