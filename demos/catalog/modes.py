"""`python -m demos.catalog.modes`: the article's comparison, measured. The same product messages and the same faults go
through the catalog workflow in both modes, each on its own offline rehearsal and its clock:
- FIRE_AND_FORGET (the FireAndForget-Catalog stack of `cdk.out`): a Standard workflow, the message deleted when the
  execution starts, recovery in and around the workflow (failure DLQ, automatic redrive);
- REQUEST_RESPONSE (stacks/catalog/request_response.py, synthesized here): an Express workflow the pipe waits for, the
  message deleted when the execution succeeded, recovery by the source queue (visibility timeout, maxReceiveCount,
  source DLQ).

The faults: a share of the valid products time out on every attempt of their first execution (a fault that
outlasts the workflow's Retry), and SQS delivers a share of the messages twice (a receive while the first execution
runs). Every figure is read from the rehearsal (executions, queues, tables, the pipe's deletions, the clock); the
account groups executions by the caller's messageId (a redriven copy carries it), not by what a handler returned.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from demos.catalog.samples import plan_products
from fire_and_forget.rehearsal import (
    DuplicateTiming,
    Fault,
    FaultKind,
    Rehearsal,
    Usage,
    add,
    advance_past_retries,
    caller_of,
    per_million,
    usage_of_execution,
)
from fire_and_forget.runtime.healing_policy import first_message_id
from fire_and_forget.runtime.outputs import Output
from fire_and_forget.runtime.tail import DUPLICATE_ENDS, DUPLICATE_OF_COMPLETED_DELIVERY, DUPLICATE_RETURNED_TO_QUEUE

CATALOG_STACK = "FireAndForget-Catalog"
OUTLASTING_SHARE = 0.1  # valid products whose first execution times out on every attempt
ATTEMPTS = 5  # IndexProduct's try and four retries (statemachines/catalog/index_product.asl.json)
DUPLICATE_SHARE = 0.08
STANDARD_MAX_SECONDS = 365 * 24 * 3600  # a Standard execution runs up to a year (Step Functions quotas)
# Where a caller's message can end.
PROCESSED, FAILURE_DLQ, SOURCE_DLQ, NOWHERE = "processed", "failure DLQ", "source DLQ", "unaccounted"


@dataclass(frozen=True)
class Message:
    body: str
    product_id: str | None


def messages(products: int, seed: int) -> tuple[list[Message], set[str]]:
    """The first wave of the catalog demo's plan (demos/catalog/samples.py) and the products whose first execution
    the fault outlasts, the same for both modes."""
    plan = plan_products(products, seed)
    sent = [Message(sample.body, sample.product_id) for sample in plan.first]
    valid = sorted({m.product_id for m in sent if m.product_id is not None})
    outlasted = set(random.Random(seed).sample(valid, k=max(1, int(len(valid) * OUTLASTING_SHARE))))
    return sent, outlasted


def run_mode(aws: Rehearsal, sent: list[Message], outlasted: set[str]) -> dict[str, Any]:
    """Send, let the mode recover what it recovers by itself, and measure."""
    for product_id in sorted(outlasted):
        aws.faults.add(Fault("IndexProduct", FaultKind.TIMEOUT, times=ATTEMPTS, key=product_id))
    aws.pipe.duplicate_next = max(1, int(len(sent) * DUPLICATE_SHARE))
    aws.pipe.duplicate_timing = DuplicateTiming.NEXT_POLL
    sent_at = aws.now()
    message_ids = [aws.send(message.body) for message in sent]
    units = aws.capacity.snapshot()
    aws.run_until_quiet()
    advance_past_retries(aws)
    return measure(aws, message_ids, sent_at, aws.capacity.snapshot() - units)


def measure(aws: Rehearsal, message_ids: list[str], sent_at: datetime, dynamodb: Any) -> dict[str, Any]:
    executions = aws.executions()
    described = {e.arn: aws.sfn.describe_execution(executionArn=e.arn) for e in executions}
    # A duplicate ends absorbed (it succeeds and is deleted), or, in REQUEST_RESPONSE while its first execution has
    # not completed the delivery, fails and returns to the queue: which of the two the threads' timing decides.
    absorbed_ends = DUPLICATE_ENDS | {DUPLICATE_OF_COMPLETED_DELIVERY}
    duplicate_ends = absorbed_ends | {DUPLICATE_RETURNED_TO_QUEUE}
    by_caller: dict[str, list[Any]] = {}
    for execution in executions:
        by_caller.setdefault(caller_of(execution) or "", []).append(execution)
    in_source_dlq = {m["MessageId"] for m in aws.messages(Output.SOURCE_DLQ_URL)}
    in_failure_dlq = set()
    if Output.FAILURE_DLQ_URL in aws.outputs:
        in_failure_dlq = {first_message_id(json.loads(m["Body"])["record"])
                          for m in aws.messages(Output.FAILURE_DLQ_URL)}
    places: Counter[str] = Counter()
    waits: list[float] = []
    healed_after: list[float] = []
    given_up_after: list[float] = []  # the last attempt of a message that ended in a DLQ
    total = Usage()
    for message_id in message_ids:
        runs = sorted(by_caller.get(message_id, []), key=lambda e: described[e.arn]["startDate"])
        processed = any(e.status == "SUCCEEDED" and e.states and e.states[-1] not in duplicate_ends for e in runs)
        where = [place for place, there in ((PROCESSED, processed), (FAILURE_DLQ, message_id in in_failure_dlq),
                                            (SOURCE_DLQ, message_id in in_source_dlq)) if there]
        places[where[0] if len(where) == 1 else (NOWHERE if not where else "in two places")] += 1
        owners = [e for e in runs if not (e.states and e.states[-1] in duplicate_ends)]
        for before, after in zip(owners, owners[1:], strict=False):
            waits.append((described[after.arn]["startDate"] - described[before.arn]["stopDate"]).total_seconds())
        if processed and len(owners) > 1:
            healed_after.append((described[owners[-1].arn]["stopDate"] - sent_at).total_seconds())
        if where in ([FAILURE_DLQ], [SOURCE_DLQ]) and owners:
            given_up_after.append((described[owners[-1].arn]["stopDate"] - sent_at).total_seconds())
        for execution in runs:
            # An Express execution bills its duration, Retry waits included: priced at each wait's mean over its
            # jitter, so that the figure is the same in every run (the draw itself changes from run to run).
            retries = aws.clock.for_execution(execution.arn)
            add(total, usage_of_execution(execution.history, len(retries), express=aws.express,
                                          waited_seconds=sum(wait.expected_seconds for wait in retries)))
    total.dynamodb_writes, total.dynamodb_reads = dynamodb.write, dynamodb.read
    sent = set(message_ids)
    deleted = [(moment - sent_at).total_seconds() for message_id, moment in aws.pipe.stats.deleted_at.items()
               if message_id in sent]
    per_message = Counter(caller_of(e) for e in executions)
    definition = aws.stack.definitions[aws.pipe.definition.target_arn]
    return {
        "mode": aws.pipe.definition.invocation_type,
        "workflow": "EXPRESS" if aws.express else "STANDARD",
        "stack": aws.stack.name,
        "messages": len(message_ids),
        "places": dict(places),
        "executions": len(executions),
        "executions_per_message": {"mean": round(len(executions) / len(message_ids), 2),
                                   "max": max(per_message.values(), default=0)},
        "duplicates_absorbed": sum(1 for e in executions if e.states and e.states[-1] in absorbed_ends),
        "duplicates_returned": sum(1 for e in executions if e.states and e.states[-1] == DUPLICATE_RETURNED_TO_QUEUE),
        "deleted_after_send_seconds": {"median": _median(deleted), "max": max(deleted, default=0.0)},
        "wait_before_next_attempt_seconds": {"median": _median(waits), "max": max(waits, default=0.0)},
        "healed_after_seconds": {"count": len(healed_after), "max": max(healed_after, default=0.0)},
        "given_up_after_seconds": {"count": len(given_up_after), "max": max(given_up_after, default=0.0)},
        "longest_processing_seconds": min(int(definition.get("TimeoutSeconds", STANDARD_MAX_SECONDS)),
                                          STANDARD_MAX_SECONDS),
        "visibility_timeout_seconds": aws.visibility_timeout(Output.SOURCE_QUEUE_URL),
        "alerts": len(aws.notifications()),
        "transitions": total.transitions,
        "cost_per_million_messages_usd": round(per_million(total, len(message_ids)), 2),
    }


def _median(values: list[float]) -> float:
    return round(statistics.median(values), 1) if values else 0.0


def request_response_assembly() -> Path:
    """The REQUEST_RESPONSE variant of the catalog, synthesized into a directory of its own (a few seconds)."""
    import aws_cdk as cdk  # noqa: PLC0415 - the CDK starts Node: only when the comparison runs

    from stacks.catalog.request_response import build  # noqa: PLC0415

    app = cdk.App(outdir=tempfile.mkdtemp(prefix="rr-cdk.out-"))
    build(app)
    return Path(app.synth().directory)


def order_saga_fit(mode: str) -> dict[str, Any]:
    """The order saga's longest run in `mode` against that mode's workflow timeout, from its definition as the mode
    renders it (fire_and_forget.construct.longest_run): in REQUEST_RESPONSE the construct refuses it when it does
    not fit, and the comparison says so instead of running it."""
    from fire_and_forget.construct import PipelineSettings, longest_run, render_definition  # noqa: PLC0415
    from stacks.orders.stack import ASL_FILE, CLAIMS_DELIVERY, COMPENSATIONS, left_out  # noqa: PLC0415

    definition = render_definition(
        ASL_FILE, PipelineSettings(), compensations=COMPENSATIONS, claims_delivery=CLAIMS_DELIVERY,
        leave_out=left_out(PipelineSettings()),
        invocation_type="REQUEST_RESPONSE" if mode == "REQUEST_RESPONSE" else "FIRE_AND_FORGET")
    return {"longest_run_seconds": longest_run(definition, {}).seconds, "timeout_seconds": definition["TimeoutSeconds"]}


def compare(assembly: Path, products: int, seed: int, request_response: Path | None = None) -> list[dict[str, Any]]:
    """Both modes, one after the other, on the same messages and faults; `request_response` is the variant's
    assembly when it is already synthesized."""
    from stacks.catalog.request_response import STACK_NAME  # noqa: PLC0415

    sent, outlasted = messages(products, seed)
    results = []
    for directory, stack in ((assembly, CATALOG_STACK),
                             (request_response or request_response_assembly(), STACK_NAME)):
        with Rehearsal.start(directory, stack_name=stack) as aws:
            result = run_mode(aws, sent, outlasted)
        results.append(result | {"order_saga": order_saga_fit(result["mode"])})
    return results


ROWS = (
    ("workflow", "workflow", str),
    ("message deleted from the source queue, after send (median / max)", "deleted_after_send_seconds", "span"),
    ("where each message ended", "places", "places"),
    ("executions per message (mean / max)", "executions_per_message", "runs"),
    ("duplicate deliveries absorbed", "duplicates_absorbed", str),
    ("duplicate receives failed while the first execution ran (returned to the queue)", "duplicates_returned", str),
    ("a failed message waited before its next attempt (median / max)", "wait_before_next_attempt_seconds", "span"),
    ("messages healed by a later attempt, the last done after", "healed_after_seconds", "healed"),
    ("messages that ended in a DLQ, the last attempt of one after", "given_up_after_seconds", "healed"),
    ("longest processing the mode holds", "longest_processing_seconds", "seconds"),
    ("the order saga (3 steps, 3 compensations, their retries) in this mode", "order_saga", "fit"),
    ("source queue visibility timeout", "visibility_timeout_seconds", "seconds"),
    ("failures announced one by one on the alerts topic", "alerts", str),
    ("billed state transitions", "transitions", str),
    ("cost per 1M messages, list prices", "cost_per_million_messages_usd", "usd"),
)


def render(console: Console, results: list[dict[str, Any]]) -> None:
    table = Table(title=f"The two modes, the same {results[0]['messages']} product messages and faults "
                        "(measured on the rehearsal's clock)")
    table.add_column("")
    for result in results:
        table.add_column(result["mode"])
    for label, key, kind in ROWS:
        table.add_row(label, *[cell(result[key], kind) for result in results])
    console.print(table)


def cell(value: Any, kind: Any) -> str:
    """One figure of the table, as printed."""
    if kind == "span":
        return f"{value['median']:,.0f} s / {value['max']:,.0f} s"
    if kind == "places":
        return ", ".join(f"{count} {place}" for place, count in sorted(value.items()))
    if kind == "runs":
        return f"{value['mean']} / {value['max']}"
    if kind == "healed":
        return f"{value['count']}, after {value['max']:,.0f} s" if value["count"] else "none"
    if kind == "seconds":
        return f"{value:,} s"
    if kind == "fit":
        seconds, timeout = value["longest_run_seconds"], value["timeout_seconds"]
        verdict = "runs" if seconds is not None and seconds <= timeout else "refused at synth"
        longest = "without bound" if seconds is None else f"{seconds:,.0f} s"
        return f"{verdict}: longest run {longest}, timeout {timeout:,} s"
    if kind == "usd":
        return f"${value:,.2f}"
    return str(kind(value))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--assembly", type=Path, default=Path("cdk.out"), help="the synthesized app (make synth)")
    parser.add_argument("--products", type=int, default=40)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--report", type=Path, default=None, help="write the results as JSON here")
    args = parser.parse_args(argv)
    results = compare(args.assembly, args.products, args.seed)
    render(Console(), results)
    if args.report is not None:
        args.report.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0 if all(set(r["places"]) <= {PROCESSED, FAILURE_DLQ, SOURCE_DLQ} for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
