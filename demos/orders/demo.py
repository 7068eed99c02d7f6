"""`make demo`: the whole pipeline offline, a realistic stream of orders, and an account of every message."""

from __future__ import annotations

import functools
import json
import random
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from demos.orders import long_running
from demos.orders.long_running import render as render_long_running
from demos.orders.outcomes import outcome_of
from demos.orders.quiet import quiet_logs
from demos.orders.report import next_steps, render, trend_page
from demos.orders.samples import OrderKind, SampleOrder, make_order, seed_inventory
from fire_and_forget.rehearsal import (
    PRICES,
    STACK_NAME,
    Fault,
    FaultKind,
    Ledger,
    Rehearsal,
    Units,
    Usage,
    account,
    add,
    advance_past_retries,
    caller_of,
    per_million,
    usage_of_execution,
)
from fire_and_forget.runtime.records import message_key
from fire_and_forget.runtime.tail import DUPLICATE_ENDS
from stacks.names import catalog_stack_name

app = typer.Typer(add_completion=False, help=__doc__)
CATALOG_STACK_NAME = catalog_stack_name(STACK_NAME)
ORDERS_TEMPLATE = f"{STACK_NAME}.template.json"
DEFAULT_REPORT = Path("demo-report.json")
CATALOG_REPORT = Path("demo-catalog-report.json")
# Failure-DLQ records the report shows: the first by order id, so that the same seed shows the same ones.
SAMPLE_SIZE = 5
# Off a terminal (CI, a pipe to a file) the progress bar is off: a line this often says the demo is still working.
PROGRESS_LINE_SECONDS = 5.0


class Example(StrEnum):
    """The app's two stacks, each an example of the same construct; `both` runs the orders, then the catalog, in one
    process (`make demo`: the second example pays no second start-up)."""

    ORDERS = "orders"
    CATALOG = "catalog"
    BOTH = "both"

# The default mix: mostly good orders, and every kind of trouble the pipeline must survive.
MIX = {
    OrderKind.VALID: 0.76,
    OrderKind.OUT_OF_STOCK: 0.06,
    OrderKind.DECLINED: 0.06,
    OrderKind.UNSERVED: 0.06,
    OrderKind.MALFORMED: 0.06,
}
RESEND_SHARE = 0.06  # a producer sends an earlier order again (a new SQS message, the same order)
SQS_DUPLICATE_SHARE = 0.05  # SQS delivers a message twice (the same messageId, two executions)


@dataclass
class Plan:
    samples: list[SampleOrder]
    resends: int
    sqs_duplicates: int
    aborted: list[str]  # order ids whose execution an operator aborts (chaos)


def plan(orders: int, seed: int, chaos: bool) -> Plan:
    """The same seed gives the same orders, duplicates and chaos."""
    rng = random.Random(seed)
    kinds = rng.choices(list(MIX), weights=list(MIX.values()), k=orders)
    samples = [make_order(kind, number, rng) for number, kind in enumerate(kinds, start=1)]
    resends = int(orders * RESEND_SHARE)
    valid = [s for s in samples if s.kind is OrderKind.VALID]
    for _ in range(resends):
        samples.insert(rng.randrange(len(samples) + 1), rng.choice(valid))
    once = sent_once(samples)
    aborted = rng.sample(once, k=min(3, len(once))) if chaos else []
    # (chaos_faults picks its orders from a generator of its own, among the orders no abort ends.)
    return Plan(samples, resends, int(orders * SQS_DUPLICATE_SHARE), aborted)


def sent_once(samples: Sequence[SampleOrder]) -> list[str]:
    """The valid orders the producer sends once, in the order they are sent.

    Faults and aborts go only on these. Two messages of one order race each other: the second is absorbed while the
    first attempt owns the work, and runs again once a failed first attempt has let go of it. Which happens depends
    on how the pipe's and the executions' threads interleave, not on the seed, so a fault on a resent order would
    change the run's outcome table with the machine's load."""
    ids = [s.order_id for s in samples if s.kind is OrderKind.VALID and s.order_id]
    sent = Counter(ids)
    return [order_id for order_id in ids if sent[order_id] == 1]


def chaos_faults(rng: random.Random, samples: list[SampleOrder], aborted: Sequence[str] = ()) -> list[Fault]:
    """Transient faults that retries absorb, one that only an automatic redrive absorbs, and a few that nothing
    absorbs, each on its own order: one sent once (sent_once), so the same seed gives the same outcome whatever order
    the executions' threads run in, and one no abort ends before the fault shows."""
    valid = [order_id for order_id in sent_once(samples) if order_id not in aborted]
    picked = rng.sample(valid, k=min(10, len(valid)))
    recover, doomed = picked[:6], picked[6:]
    # The order the redrive heals: one no other fault touches.
    healed = next((o for o in valid if o not in picked), None)
    faults = [
        # Absorbed by the Retry fields (each fewer times than MaxAttempts).
        Fault("ReserveInventory", FaultKind.SERVICE_ERROR, times=2, key=recover[0]),
        Fault("ChargePayment", FaultKind.THROTTLE, times=3, key=recover[1]),
        Fault("ArrangeShipping", FaultKind.TIMEOUT, times=1, key=recover[2]),
        Fault("ChargePayment", FaultKind.SERVICE_ERROR, times=1, key=recover[3]),
        # Absorbed by the pipe and SQS: the hand-over is refused twice, the message comes back, then starts.
        Fault("StartExecution", FaultKind.START_REFUSED, times=2, key=recover[4]),
    ]
    # Absorbed by HandleFailure's and NotifyFailure's retries, on the crashed order's failure (recorded and announced
    # at once): on whichever failure met them first, their retries would move between outcomes with the threads'
    # timing.
    recorded_by = doomed[1] if len(doomed) == 4 else None
    faults += [
        Fault("FailureDlq", FaultKind.UNAVAILABLE, times=2, key=recorded_by),
        Fault("AlertsTopic", FaultKind.UNAVAILABLE, times=2, key=recorded_by),
    ]
    if healed is not None:
        # Outlasts one execution's Retry (1 + 4 calls): compensated, recorded unannounced, healed by the first
        # automatic redrive once the demo's clock passes its cool-off.
        faults.append(Fault("ArrangeShipping", FaultKind.SERVICE_ERROR, times=5, key=healed))
    if len(doomed) == 4:
        faults += [
            Fault("ArrangeShipping", FaultKind.SERVICE_ERROR, key=doomed[0]),  # retries exhausted
            Fault("ChargePayment", FaultKind.CRASH, key=doomed[1]),  # a crash nobody retries
            Fault("ArrangeShipping", FaultKind.CRASH, key=doomed[2]),
            Fault("RefundPayment", FaultKind.CRASH, key=doomed[2]),  # and its compensation fails
            Fault("StartExecution", FaultKind.START_REFUSED, key=doomed[3]),  # never handed over
        ]
    return faults


@app.command()
def main(
    orders: Annotated[int, typer.Option(min=1, max=5000, help="How many orders to fire.")] = 300,
    chaos: Annotated[bool, typer.Option(help="Inject transient faults, timeouts, crashes and aborts.")] = False,
    seed: Annotated[int, typer.Option(help="Random seed: the same seed gives the same run.")] = 7,
    assembly: Annotated[Path, typer.Option(help="The synthesized cloud assembly.")] = Path("cdk.out"),
    report: Annotated[Path, typer.Option(help="Where to write the JSON report (the HTML page goes next to it).")]
    = Path("demo-report.json"),
    example: Annotated[Example, typer.Option(help="Which example's stack to push messages through.")]
    = Example.ORDERS,
    products: Annotated[int, typer.Option(min=1, max=500, help="Catalog example: product messages in the first wave.")]
    = 40,
    carrier: Annotated[bool, typer.Option(
        help="Orders example: also run one order per carrier behaviour through the app with the carrier's own "
             "confirmation (ff:carrierConfirmation), hours on the rehearsal's clock.")] = True,
    carrier_assembly: Annotated[Path | None, typer.Option(
        help="The app synthesized with ff:carrierConfirmation for --carrier; default: synthesized into "
             "<assembly>.carrier by the process that runs those orders beside the others.")] = None,
) -> None:
    """Deploy the synthesized app into the offline emulator and push orders (or, with --example catalog, product
    changes; with --example both, the orders and then the product changes) through it."""
    catalog_report = CATALOG_REPORT if report == DEFAULT_REPORT else report
    if example is Example.CATALOG:
        run_catalog(products=products, chaos=chaos, seed=seed, assembly=assembly, report=catalog_report)
        return
    # Started first, so that its child process synthesizes and runs beside the other orders (not without an app to
    # run them in: run_and_keep then says to synthesize one).
    carrier_orders = long_running.InBackground(assembly.with_name(assembly.name + ".carrier"), seed, carrier_assembly) \
        if carrier and (assembly / ORDERS_TEMPLATE).exists() else None
    if example is Example.ORDERS:
        run_and_keep(orders=orders, chaos=chaos, seed=seed, assembly=assembly, report=report, port=None,
                     carrier_orders=carrier_orders)
        return
    orders_balanced = _balanced(functools.partial(run_and_keep, orders=orders, chaos=chaos, seed=seed,
                                                  assembly=assembly, report=report, port=None,
                                                  carrier_orders=carrier_orders))
    catalog_balanced = _balanced(functools.partial(run_catalog, products=products, chaos=chaos, seed=seed,
                                                   assembly=assembly, report=report.parent / CATALOG_REPORT.name))
    if not (orders_balanced and catalog_balanced):
        raise typer.Exit(1)


def _balanced(run: Callable[[], None]) -> bool:
    """Run one example: False if its account did not balance (exit 1), so that the next example still runs; any other
    stop (2: nothing synthesized to run) ends the demo."""
    try:
        run()
    except typer.Exit as stopped:
        if stopped.exit_code != 1:
            raise
        return False
    return True


def run_catalog(*, products: int, chaos: bool, seed: int, assembly: Path, report: Path) -> None:
    """The catalog example through the same rehearsal: its stack chosen, nothing else different."""
    from demos.catalog import demo as catalog_demo

    console = Console(highlight=False, width=None if sys.stdout.isatty() else 110)
    quiet_logs()
    if not (assembly / f"{CATALOG_STACK_NAME}.template.json").exists():
        console.print(f"[red]No synthesized catalog stack in {assembly}: run `make synth` first.[/red]")
        raise typer.Exit(2)
    with Rehearsal.start(assembly, stack_name=CATALOG_STACK_NAME) as aws:
        result = catalog_demo.run_catalog_demo(aws, console, products=products, chaos=chaos, seed=seed)
    report.write_text(json.dumps(result, indent=2, default=str), encoding="utf-8")
    catalog_demo.render(console, result)
    console.print(f"Report: {report} (JSON).")
    if not result["balanced"]:
        raise typer.Exit(1)


def run_and_keep(*, orders: int, chaos: bool, seed: int, assembly: Path, report: Path, port: int | None,
                 carrier_orders: long_running.InBackground | None = None) -> None:
    """The demo; with a port, its account then stays up as the practice account (demos/orders/practice.py); with
    `carrier_orders` (started in the background), the long-running orders' report after the others'."""
    console = Console(highlight=False, width=None if sys.stdout.isatty() else 110)
    quiet_logs()
    if not (assembly / ORDERS_TEMPLATE).exists():
        console.print(f"[red]No synthesized app in {assembly}: run `make synth` first.[/red]")
        raise typer.Exit(2)
    with Rehearsal.start(assembly) as aws:
        result = run_demo(aws, console, orders=orders, chaos=chaos, seed=seed)
        write_reports(result, report)
        render(console, result)
        next_steps(console, result, report, practising=port is not None)
        if port is not None:
            from demos.orders.practice import serve_until_interrupted

            # Unwrapped, unstyled: the export line is copied into a shell as it is.
            serve_until_interrupted(aws, port, lambda line: console.print(line, soft_wrap=True, markup=False))
    balanced = result["conservation"]["balanced"]
    if carrier_orders is not None:
        result["long_running"] = carrier_orders.result()
        write_reports(result, report)
        render_long_running(console, result["long_running"])
        balanced = balanced and result["long_running"]["conservation"]["balanced"]
    if not balanced:
        raise typer.Exit(1)


def run_demo(aws: Rehearsal, console: Console, *, orders: int, chaos: bool, seed: int) -> dict[str, Any]:
    """Fire the planned orders into a deployed rehearsal, wait for every outcome, and account for each message."""
    the_plan = plan(orders, seed, chaos)
    started = time.perf_counter()
    seed_inventory(aws.dynamodb, aws.outputs["InventoryTableName"])
    units = aws.capacity.snapshot()  # DynamoDB's request units from here on are the pipeline's (capacity.py)
    if chaos:
        for fault in chaos_faults(random.Random(seed + 1), the_plan.samples, the_plan.aborted):
            aws.faults.add(fault)
        for order_id in the_plan.aborted:
            aws.faults.add(Fault("ChargePayment", FaultKind.HANG, times=1, key=order_id))
    bodies = _fire(aws, the_plan, console)
    _process(aws, the_plan, console)
    _heal(aws, console)
    elapsed = time.perf_counter() - started
    units = aws.capacity.snapshot() - units
    ledger = account(aws, list(bodies))
    return summarize(aws, ledger, bodies, the_plan, elapsed, units, orders=orders, chaos=chaos, seed=seed)


def _most_first(counts: Counter[str]) -> dict[str, int]:
    """Most first, ties by name: the same run gives the same order whichever of its executions ended first."""
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


def write_reports(result: dict[str, Any], report: Path) -> None:
    """The JSON report, and the failure-trend page next to it (same name, .html)."""
    report.write_text(json.dumps(result, indent=2, default=str), encoding="utf-8")
    report.with_suffix(".html").write_text(trend_page(result), encoding="utf-8")


def _fire(aws: Rehearsal, the_plan: Plan, console: Console) -> dict[str, str]:
    """The callers: each drops its order on the source queue and moves on."""
    aws.pipe.duplicate_next = 0
    bodies = {aws.send(sample.body): sample.body for sample in the_plan.samples}
    aws.pipe.duplicate_next = the_plan.sqs_duplicates  # the first few batches are delivered twice
    console.print(f"Fired {len(bodies)} messages into the source queue "
                  f"({the_plan.resends} producer resends; SQS will deliver {the_plan.sqs_duplicates} twice).")
    return bodies


def _process(aws: Rehearsal, the_plan: Plan, console: Console) -> None:
    """Let the pipe hand everything over, abort what an operator aborts, and wait for every execution."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    expected = len(the_plan.samples) + the_plan.sqs_duplicates  # executions, if every hand-over succeeds
    pipe = threading.Thread(target=aws.drain, name="pipe", daemon=True)
    pipe.start()
    if the_plan.aborted:
        _abort_held(aws, the_plan.aborted)
    with Progress(TextColumn("executions"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, disable=not console.is_terminal) as progress:
        task = progress.add_task("run", total=expected)
        started = last_line = time.monotonic()
        while pipe.is_alive() or aws.running():
            done = len(aws.pipe.stats.started) - len(aws.running())
            total = max(expected, len(aws.pipe.stats.started))
            progress.update(task, completed=done, total=total)
            if not console.is_terminal and time.monotonic() - last_line >= PROGRESS_LINE_SECONDS:
                last_line = time.monotonic()
                console.print(f"executions: {done} of {total} finished ({last_line - started:.0f} s)")
            time.sleep(0.25)
        progress.update(task, completed=len(aws.pipe.stats.started), total=len(aws.pipe.stats.started))
    pipe.join()
    if not console.is_terminal:
        console.print(f"{len(aws.pipe.stats.started)} executions finished.")
    aws.run_until_quiet()  # emits the status-change events and drains anything the visibility timeout brought back


def _heal(aws: Rehearsal, console: Console) -> None:
    """Compressed time: move the clock past every cool-off, so that what waits for an automatic retry is redriven
    (and succeeds, or spends its attempts and is announced) and the demo ends quiet."""
    before = len(aws.executions())
    travelled = advance_past_retries(aws)
    if travelled:
        console.print(f"Advanced the rehearsal clock {travelled // 60} min past every cool-off: "
                      f"{len(aws.executions()) - before} automatic redrives ran.")


def _abort_held(aws: Rehearsal, order_ids: list[str]) -> None:
    deadline = time.monotonic() + 60
    while aws.runtime.hung < len(order_ids) and time.monotonic() < deadline:
        time.sleep(0.05)
    for execution in aws.executions():
        if execution.status == "RUNNING" and any(order_id in json.dumps(execution.input) for order_id in order_ids):
            aws.abort(execution.arn)
    aws.faults.release()


def summarize(aws: Rehearsal, ledger: Ledger, bodies: dict[str, str], the_plan: Plan, elapsed: float,
              dynamodb: Units, **options: Any) -> dict[str, Any]:
    """Everything the report shows, as data (also the JSON report); `dynamodb` is the request units the run's
    DynamoDB calls consumed, as the rehearsal's meter counted them."""
    from demos.orders.invariants import saga_violations

    executions = {e.arn: e for e in aws.executions()}
    by_message: dict[str, list[Any]] = {}
    for execution in executions.values():
        by_message.setdefault(caller_of(execution) or "", []).append(execution)  # redriven copies: the caller's
    outcomes: Counter[str] = Counter()
    transitions: dict[str, list[int]] = {}
    total = Usage()
    for message_id, fate in ledger.fates.items():
        outcome = outcome_of(fate.place, fate.manual_repair, fate.redrives)
        outcomes[outcome] += 1
        for execution in by_message.get(message_id, []):
            if execution.states and execution.states[-1] in DUPLICATE_ENDS:
                outcome_of_run = "duplicate delivery, ignored"
            else:
                outcome_of_run = outcome
            retries = len(aws.clock.for_execution(execution.arn))
            usage = usage_of_execution(execution.history, retries)
            add(total, usage)
            transitions.setdefault(outcome_of_run, []).append(usage.transitions)
    total.dynamodb_writes, total.dynamodb_reads = dynamodb.write, dynamodb.read
    failures = [json.loads(m["Body"]) for m in aws.messages("FailureDlqUrl")]
    notifications = aws.notifications()
    return {
        "options": options,
        "elapsed_seconds": round(elapsed, 2),
        "messages_in": len(bodies),
        "outcomes": _most_first(outcomes),
        "errors": _most_first(Counter(f.error for f in ledger.fates.values() if f.error)),
        "failure_dlq_sample": sorted(
            ({"orderId": _order_id(f["record"]["body"]), "error": f["failure"]["error"],
              "failedState": f["failure"]["state"], "manualRepair": f["manualRepair"]} for f in failures),
            key=lambda entry: (str(entry["orderId"]), entry["error"], entry["failedState"]),
        )[:SAMPLE_SIZE],
        "notifications": {"count": len(notifications),
                          "subjects": [s or t.splitlines()[0] for s, t in notifications[:5]],
                          "by_subject": _most_first(Counter(s or t.splitlines()[0] for s, t in notifications))},
        "timeline": timeline(executions.values(), failures),
        "conservation": {
            "in": len(bodies),
            "accounted": sum(1 for f in ledger.fates.values() if len(f.places) == 1),
            "lost": len(ledger.lost),
            "in_two_places": len(ledger.in_two_places),
            "announced_twice": len(ledger.announced_twice),
            "unannounced_failures": len(ledger.unannounced_failures),
            "waiting_for_retry": len(ledger.waiting),
            "overdue_retries": len(ledger.overdue_retries),
            "redriven_automatically": sum(1 for f in ledger.fates.values() if f.redrives),
            "balanced": ledger.balanced,
            "saga_violations": saga_violations(aws, ledger, bodies),
        },
        "transitions_per_outcome": {
            k: {"mean": round(sum(v) / len(v), 2), "min": min(v), "max": max(v)} for k, v in sorted(transitions.items())
        },
        "cost_per_million_orders_usd": round(per_million(total, len(bodies)), 2),
        "usage": vars(total),
        "price_sources": sorted({p.source for p in PRICES.values()}),
    }


def timeline(executions: Iterable[Any], failures: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each execution: its start (ISO 8601, UTC), final status, the order it works for (orderId, else the caller's
    message id), whether it ended as a duplicate delivery, and for an unsuccessful one the error and the step that
    failed (from its failure record when HandleFailure wrote one, else from the execution)."""
    recorded = {f["record"].get("messageId"): f["failure"] for f in failures if isinstance(f.get("record"), dict)}
    rows = []
    for e in sorted((e for e in executions if e.history), key=lambda e: e.history[0]["timestamp"]):
        error, step = None, None
        if e.status != "SUCCEEDED":
            failure = recorded.get(e.message_id) if e.error == "FailureRecorded" else None
            error = failure["error"] if failure else (e.error or e.status)
            step = failure["state"] if failure else _last_task(e.states)
        record = e.input[0] if isinstance(e.input, list) and e.input and isinstance(e.input[0], dict) else {}
        body = record.get("body") if isinstance(record.get("body"), str) else None
        rows.append({"start": e.history[0]["timestamp"].isoformat(), "status": e.status, "error": error, "step": step,
                     "messageId": e.message_id, "order": message_key(body, "orderId") or caller_of(e),
                     "duplicate": bool(e.states) and e.states[-1] in DUPLICATE_ENDS})
    return rows


def _last_task(states: list[str]) -> str | None:
    """The step an execution stopped in: its last state entered."""
    return states[-1] if states else None


def _order_id(body: str) -> str:
    try:
        value = json.loads(body)
    except ValueError:
        return "(not JSON)"
    return str(value.get("orderId", "(none)")) if isinstance(value, dict) else "(not an object)"


if __name__ == "__main__":
    sys.exit(app())
