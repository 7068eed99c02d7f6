"""`make practice`: the demo's offline deployment kept alive as a local AWS endpoint, for `ff-ops` and the runbook.

The account lives in this process (the real handlers, the pipe emulator and the status-change events run here);
src/fire_and_forget/rehearsal/practice_gateway.py serves it on 127.0.0.1. A background thread pumps the pipe after each
request the account answers, so that an order `ff-ops failures redrive` sends back to the source queue really runs, and
its execution's end is announced; with no request, nothing can have changed, and the account waits without working.
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import boto3
import typer

from fire_and_forget.rehearsal import STACK_NAME, Gateway, Rehearsal

DEFAULT_PORT = 4566
# What ff-ops needs besides the endpoint: any credentials (moto does not check them) and the region.
FAKE_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "practice", "AWS_SECRET_ACCESS_KEY": "practice"}

app = typer.Typer(no_args_is_help=True, add_completion=False, help=__doc__)
log = logging.getLogger("practice")


def environment(endpoint: str, region: str) -> dict[str, str]:
    """The variables that point boto3 (every ff-ops client) at the practice account."""
    return {
        "AWS_ENDPOINT_URL": endpoint,
        **FAKE_CREDENTIALS,
        "AWS_REGION": region,
        "AWS_DEFAULT_REGION": region,
        "FF_STACK_NAME": STACK_NAME,
    }


class PracticeAccount:
    """A deployed rehearsal served on a local endpoint, its pipe pumped until `close`."""

    def __init__(self, aws: Rehearsal, port: int = 0) -> None:
        self.aws = aws
        self._work = threading.Event()  # set by each answered request, and by close
        self._stop = threading.Event()
        self.gateway = Gateway(aws.sqs, port=port, on_request=self._work.set)
        self._pump = threading.Thread(target=self._pump_loop, name="practice-pipe", daemon=True)
        self.pump_errors: list[str] = []
        self.rounds = 0  # how many times the pump has run the account to quiet

    @property
    def endpoint(self) -> str:
        return self.gateway.endpoint

    @property
    def environment(self) -> dict[str, str]:
        return environment(self.endpoint, self.aws.region)

    def open(self) -> None:
        self.aws.publish_pipe()
        # The demo's injected faults are over: the practice starts after the outage, when the fixes are in.
        self.aws.faults.clear()
        self.aws.faults.release()
        self.gateway.__enter__()
        self._pump.start()

    def close(self) -> None:
        self._stop.set()
        self._work.set()
        self._pump.join(timeout=30)
        self.gateway.__exit__()

    def settle(self, timeout_seconds: float = 60.0) -> None:
        """Wait until the source queue is drained and every execution has ended and been announced."""
        self.aws.run_until_quiet(timeout_seconds)

    def _pump_loop(self) -> None:
        while True:
            self._work.wait()
            if self._stop.is_set():
                return
            self._work.clear()  # a request answered from here on sets it again: one more round after this one
            self.rounds += 1
            try:
                self.aws.run_until_quiet(timeout_seconds=600)
            except Exception as error:  # keep pumping: a failed poll is retried on the next round, like the pipe
                self.pump_errors.append(repr(error))
                log.warning("the practice pipe failed a round: %r", error)


@contextmanager
def practice_account(aws: Rehearsal, port: int = 0) -> Iterator[PracticeAccount]:
    account = PracticeAccount(aws, port)
    account.open()
    try:
        yield account
    finally:
        account.close()


def instructions(account: PracticeAccount) -> list[str]:
    """How to point ff-ops at the account, as lines to print."""
    exports = " ".join(f"{key}={value}" for key, value in account.environment.items())
    return [
        f"Practice account: {account.endpoint} (stack {STACK_NAME}, region {account.aws.region}). "
        "The demo's injected faults are over. In another shell:",
        f"  export {exports}",
        "  .venv/bin/ff-ops status                       # or: make ops ARGS=status",
        "  .venv/bin/ff-ops failures list",
        "  .venv/bin/python -m demos.orders.practice restock SKU-SOLD-OUT  # the fix for OutOfStock (runbook R1)",
        "  .venv/bin/ff-ops failures redrive --error OutOfStock",
        "Every procedure of docs/runbook.md works here, the aws CLI's too (it reads AWS_ENDPOINT_URL), except "
        "RedriveExecution (moto has none: R3 says what to do) and the CloudWatch alarms (none here).",
        "Ctrl-C stops the account; nothing is kept.",
    ]


@app.command()
def restock(
    sku: Annotated[str, typer.Argument(help="The SKU to restock, e.g. SKU-SOLD-OUT.")],
    units: Annotated[int, typer.Option(min=1, help="Units available afterwards.")] = 100,
) -> None:
    """Set a SKU's stock in the practice account's inventory table (reads AWS_ENDPOINT_URL like ff-ops)."""
    session = boto3.Session()
    outputs = {
        o["OutputKey"]: o["OutputValue"]
        for o in session.client("cloudformation").describe_stacks(StackName=STACK_NAME)["Stacks"][0].get("Outputs", [])
        if "OutputKey" in o
    }
    table = outputs["InventoryTableName"]
    session.client("dynamodb").put_item(TableName=table, Item={"sku": {"S": sku}, "available": {"N": str(units)}})
    typer.echo(f"{sku}: {units} units available in {table}.")


@app.command()
def start(
    ctx: typer.Context,
    orders: Annotated[int, typer.Option(min=1, max=5000, help="How many orders the demo fires.")] = 300,
    chaos: Annotated[bool, typer.Option(help="The demo injects faults, crashes and aborts.")] = False,
    seed: Annotated[int, typer.Option(help="Random seed: the same seed gives the same run.")] = 7,
    port: Annotated[int, typer.Option(min=0, max=65535, help="Local port (0: any free one).")] = DEFAULT_PORT,
    assembly: Annotated[Path, typer.Option(help="The synthesized cloud assembly.")] = Path("cdk.out"),
    report: Annotated[Path, typer.Option(help="Where to write the JSON report.")] = Path("demo-report.json"),
) -> None:
    """Run the demo, then keep its account alive on 127.0.0.1:PORT until Ctrl-C."""
    from demos.orders.demo import run_and_keep

    run_and_keep(orders=orders, chaos=chaos, seed=seed, assembly=assembly, report=report, port=port)


def serve_until_interrupted(
    aws: Rehearsal, port: int, say: Any, ready: threading.Event | None = None, stop: threading.Event | None = None
) -> None:
    """Serve the account, print how to reach it, and block until Ctrl-C or SIGTERM (or `stop`, for tests)."""
    if threading.current_thread() is threading.main_thread():
        # A shell starting us in the background ignores SIGINT for us; `kill PID` should stop cleanly too.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, _interrupt)
    try:
        with practice_account(aws, port) as account:
            for line in instructions(account):
                say(line)
            sys.stdout.flush()
            if ready is not None:
                ready.set()
            (stop or threading.Event()).wait()
    except KeyboardInterrupt:
        say("Stopping the practice account.")
        sys.stdout.flush()


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


if __name__ == "__main__":  # pragma: no cover - `python -m demos.orders.practice`
    app()
