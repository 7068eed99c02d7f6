"""The order example's smoke test (`make smoke`, or `python -m demos.orders.cli_smoke`): a valid, an invalid and a
compensated order through the order example's deployed stack, each outcome checked.

The smoke test is the order example's own, built on ff-ops' plumbing (clients, the stack's outputs, exit codes): its
messages are orders and its checks name the saga's states. Any other pipeline is refused before anything is sent
(exit code 2), with what to do instead.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.console import Console

from demos.orders.smoke import (
    DEFAULT_POLL_SECONDS,
    DEFAULT_TIMEOUT_SECONDS,
    SmokeRequest,
    new_run_id,
    run_smoke,
    smoke_clients,
)
from demos.orders.smoke_output import Progress as SmokeProgress
from demos.orders.smoke_output import document as smoke_document
from demos.orders.smoke_output import render as render_smoke
from fire_and_forget.cli import AsJson, Clients, DeployedStack, ExitCode, Profile, Region, UsageError, run
from fire_and_forget.runtime.outputs import DEFAULT_STACK_NAME

# What makes a stack the order example to the smoke test: its key field and the table it stocks for the valid order.
ORDER_KEY_FIELD = "orderId"
INVENTORY_OUTPUT = "InventoryTableName"


def refuse_other_pipelines(stack: DeployedStack) -> None:
    """Raise UsageError unless `stack` is the order example (key field orderId, an inventory table)."""
    problems = []
    if stack.key_field != ORDER_KEY_FIELD:
        problems.append(f"keys its messages by {stack.key_field}, not {ORDER_KEY_FIELD}")
    if not stack.outputs.get(INVENTORY_OUTPUT):
        problems.append(f"has no output {INVENTORY_OUTPUT}")
    if problems:
        raise UsageError(
            f"the smoke test checks the order example; stack {stack.name} is another pipeline "
            f"(it {' and '.join(problems)})",
            "for another pipeline, send one of its own messages to the source queue and follow it with "
            "`ff-ops trace KEY`; `ff-ops status` and `ff-ops failures list` show the rest",
        )


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
    """The order example's smoke test: send a valid, an invalid and a compensated order; check each outcome; remove
    what the run created. Refuses any other pipeline."""

    def body(clients: Clients, stack: DeployedStack, out: Console) -> tuple[ExitCode, dict[str, Any] | None]:
        refuse_other_pipelines(stack)
        request = SmokeRequest(
            new_run_id(), timeout_seconds=timeout, poll_seconds=poll_seconds, country=country.upper()
        )
        result = run_smoke(smoke_clients(clients, profile), stack, request, progress=SmokeProgress(out))
        if not as_json:
            render_smoke(out, result)
        return (ExitCode.OK if result.passed else ExitCode.CHECK_FAILED), smoke_document(stack.name, result)

    run(stack_name, region, profile, as_json, body)


app = typer.Typer(add_completion=False, help=__doc__)
app.command()(smoke)

if __name__ == "__main__":
    app()
