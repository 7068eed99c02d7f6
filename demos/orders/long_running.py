"""The demo's long-running orders: shipping confirmed by the carrier itself, hours later (ff:carrierConfirmation).

The order example is synthesized a second time with the carrier's confirmation on (BookCarrier waits on its task
token; the carrier answers through the callback entry point), in a separate process while the demo's other orders
run on this one, then deployed into its own rehearsal. One order per carrier behaviour is sent at once and the
rehearsal's clock runs until every one has ended: the carrier (demos/orders/carrier.py) confirms one after 5 hours
with a heartbeat at 4, declines one after 3 hours, and never answers the third, which the workflow gives up on at
each heartbeat timeout, the Redriver sends back after its cool-off, and which is undone and announced once the
automatic attempts are spent.

Each order's duration runs from the caller's SendMessage to the end of its last execution, on the rehearsal's clock:
hours past the source queue's visibility timeout and Lambda's 15 minutes, long after SQS deleted the message (the
pipe starts the execution in FIRE_AND_FORGET mode and the queue is empty from then on).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from demos.orders.carrier import CARRIER_ROLE, Carrier, Plan, Reply
from demos.orders.outcomes import outcome_of
from demos.orders.quiet import quiet_logs
from demos.orders.samples import OrderKind, make_order, seed_inventory
from fire_and_forget.rehearsal import Place, Rehearsal, account, caller_of, usage_of_execution
from fire_and_forget.runtime.outputs import Output

ROOT = Path(__file__).resolve().parents[2]
# `cdk synth -c ff:carrierConfirmation=true -c ff:carrierAnswererArn=... -c ff:executionTimeoutMinutes=3000`: the
# carrier's confirmation, the simulator's principal as the named answerer, and the workflow's timeout above the
# carrier's 48 hours (stacks/orders/stack.py refuses a shorter one).
CARRIER_CONTEXT: dict[str, Any] = {"ff:carrierConfirmation": True, "ff:carrierAnswererArn": CARRIER_ROLE,
                                   "ff:executionTimeoutMinutes": 3000}
# Each behaviour: what the report calls it, what the carrier does.
CARRIER_PLANS: tuple[tuple[str, Plan], ...] = (
    ("carrier confirms after 5 h (a heartbeat at 4 h)", Plan(Reply.CONFIRM, after_hours=5, heartbeat_hours=4)),
    ("carrier declines after 3 h", Plan(Reply.DECLINE, after_hours=3, heartbeat_hours=0)),
    ("carrier silent: asked 4 times, then undone", Plan(Reply.SILENT, heartbeat_hours=0)),
)
# The clock moves on by this much until every order has ended: nothing running, nothing waiting for an automatic
# retry (the silent order ends after four waits of 6 hours, BookCarrier's HeartbeatSeconds, and three cool-offs), and
# at most this far, past which an order still going is reported as such.
STEP_HOURS = 1.0
MAX_CLOCK_HOURS = 48.0
LAMBDA_LIMIT_SECONDS = 15 * 60


def synthesize(outdir: Path) -> Path:
    """The order example's stack with CARRIER_CONTEXT over cdk.json's context, synthesized into `outdir` as `cdk synth
    -c ...` would write it. Only that stack, and without the compliance packs: the app with every optional part, the
    carrier's confirmation among them, is checked by them in the suite (tests/support/cdk.py, FULL_CONTEXT)."""
    import aws_cdk as cdk

    from stacks.config import AppConfig
    from stacks.orders.stack import OrderStack

    context = json.loads((ROOT / "cdk.json").read_text(encoding="utf-8"))["context"] | CARRIER_CONTEXT
    app = cdk.App(context=context, outdir=str(outdir))
    config = AppConfig.from_context(app.node.get_all_context())
    OrderStack(app, config.stack_name, config=config)
    return Path(app.synth().directory)


class InBackground:
    """The long-running orders in a child process, started now: it synthesizes the carrier variant of the app (unless
    given one) and runs them, on another core while the demo's other orders run on this one; `result()` waits for it
    and reads what `run_long_running` returned. What the child prints goes to a log beside the assembly."""

    def __init__(self, outdir: Path, seed: int, assembly: Path | None = None) -> None:
        self.log = outdir.with_name(outdir.name + ".log")
        self.report = outdir.with_name(outdir.name + ".json")
        self.report.unlink(missing_ok=True)
        self._log = self.log.open("w", encoding="utf-8")
        environment = dict(os.environ)
        node = ROOT / ".tools" / "node" / "bin"  # the project's Node when `make install` had to provide one
        if (node / "node").exists():
            environment["PATH"] = os.pathsep.join((str(node), environment.get("PATH", "")))
        command = [sys.executable, "-m", "demos.orders.long_running", str(outdir), str(self.report), str(seed)]
        # At a lower priority: on two cores the demo's own orders keep their pace, and this still ends before them.
        self._process = subprocess.Popen([*command, *([str(assembly)] if assembly else [])], cwd=ROOT,
                                         env=environment, stdout=self._log, stderr=subprocess.STDOUT,
                                         preexec_fn=lambda: os.nice(10))

    def result(self) -> dict[str, Any]:
        """What the child's run returned; a child that failed raises with the end of what it printed."""
        status = self._process.wait()
        self._log.close()
        if status != 0 or not self.report.exists():
            output = self.log.read_text(encoding="utf-8").strip().splitlines()
            raise RuntimeError(f"the long-running orders did not run (exit {status}; {self.log}):\n"
                               + "\n".join(output[-20:]))
        result: dict[str, Any] = json.loads(self.report.read_text(encoding="utf-8"))
        return result


@dataclass(frozen=True)
class LongOrder:
    """One order sent for a carrier behaviour."""

    behaviour: str
    order_id: str
    message_id: str


def run_long_running(assembly: Path, seed: int) -> dict[str, Any]:
    """Send one order per carrier behaviour into the carrier variant of the app, run the clock until every one
    ended, and account for each: where it ended, how long it took, how many executions and billed transitions."""
    with Rehearsal.start(assembly) as aws:
        seed_inventory(aws.dynamodb, aws.outputs["InventoryTableName"])
        aws.seed_ids(seed)  # the silent order's cool-offs are drawn from its message id: the same hours every run
        rng = random.Random(seed)
        sent_at = aws.now()  # the clock stands still while the orders are sent and handed over
        orders, plans = [], {}
        for number, (behaviour, plan) in enumerate(CARRIER_PLANS, start=1):
            sample = make_order(OrderKind.VALID, 9000 + number, rng)
            assert sample.order_id is not None  # a valid order has one
            orders.append(LongOrder(behaviour, sample.order_id, aws.send(sample.body)))
            plans[sample.order_id] = plan
        aws.run()
        source = aws.sqs.get_queue_attributes(QueueUrl=aws.outputs[Output.SOURCE_QUEUE_URL],
                                              AttributeNames=["All"])["Attributes"]
        left_in_source = sum(int(source[name]) for name in ("ApproximateNumberOfMessages",
                                                            "ApproximateNumberOfMessagesNotVisible"))
        waiting = len(aws.running())
        carrier = Carrier(aws, plans=plans)
        ledger = account(aws, [order.message_id for order in orders])
        while aws.running() or any(fate.place is Place.WAITING for fate in ledger.fates.values()):
            if aws.now() - sent_at >= timedelta(hours=MAX_CLOCK_HOURS):
                break  # reported: still running, not balanced
            carrier.run_for(STEP_HOURS)
            ledger = account(aws, [order.message_id for order in orders])
        still_running = len(aws.running())
        by_caller: dict[str, list[Any]] = {}
        for execution in aws.executions():
            by_caller.setdefault(caller_of(execution) or "", []).append(execution)
        rows = []
        for order in orders:
            executions = sorted(by_caller.get(order.message_id, []), key=lambda e: e.history[0]["timestamp"])
            fate = ledger.fates[order.message_id]
            ended = max((e.history[-1]["timestamp"] for e in executions), default=sent_at)
            rows.append({
                "orderId": order.order_id,
                "carrier": order.behaviour,
                "outcome": outcome_of(fate.place, fate.manual_repair, fate.redrives),
                "error": fate.error,
                "executions": len(executions),
                "hours": round((ended - sent_at).total_seconds() / 3600, 2),
                "transitions": sum(usage_of_execution(e.history, len(aws.clock.for_execution(e.arn))).transitions
                                   for e in executions),
                "carrierRequests": sum(1 for _, request in carrier.requests if request["key"] == order.order_id),
                "carrierAnswers": [f"{answer} {status}" for answer, status in carrier.replies(order.order_id)],
                "announced": fate.announcements,
            })
        return {
            "clock_hours": round((aws.now() - sent_at).total_seconds() / 3600, 2),
            "orders": rows,
            "after_hand_over": {"executions_waiting": waiting, "messages_left_in_source_queue": left_in_source},
            "source_visibility_timeout_seconds": aws.visibility_timeout(Output.SOURCE_QUEUE_URL),
            "still_running": still_running,
            "conservation": {"in": len(orders),
                             "accounted": sum(1 for fate in ledger.fates.values() if len(fate.places) == 1),
                             "announced_twice": len(ledger.announced_twice),
                             "unannounced_failures": len(ledger.unannounced_failures),
                             "balanced": ledger.balanced and still_running == 0},
            "outcomes": dict(Counter(row["outcome"] for row in rows)),
        }


def render(console: Console, result: dict[str, Any]) -> None:
    """The long-running orders' section of the demo's report."""
    console.print()
    console.rule(f"Orders the carrier confirms itself: {len(result['orders'])} orders, "
                 f"{result['clock_hours']:g} h on the rehearsal's clock")
    hand_over = result["after_hand_over"]
    console.print(f"Sent at once; the pipe started {hand_over['executions_waiting']} executions and SQS deleted their "
                  f"messages (source queue after the hand-over: {hand_over['messages_left_in_source_queue']} "
                  "messages). From then on only the workflow and the healing around it protect them.")
    table = Table(title="Each order, from its SendMessage to the end of its last execution (hours on the clock)")
    for column in ("carrier", "outcome", "hours", "executions", "transitions", "carrier's answers (HTTP)",
                   "announced"):
        table.add_column(column, justify="right" if column in ("hours", "executions", "transitions", "announced")
                         else "left")
    for row in result["orders"]:
        table.add_row(row["carrier"], row["outcome"] + (f" ({row['error']})" if row["error"] else ""),
                      f"{row['hours']:.2f}", str(row["executions"]), str(row["transitions"]),
                      ", ".join(row["carrierAnswers"]) or "none", str(row["announced"]))
    console.print(table)
    longest = max(row["hours"] for row in result["orders"]) * 3600
    visibility = result["source_visibility_timeout_seconds"]
    console.print(f"The longest ran {longest / 3600:.2f} h: {longest / visibility:.0f}x the source queue's visibility "
                  f"timeout ({visibility} s) and {longest / LAMBDA_LIMIT_SECONDS:.0f}x Lambda's 15 minutes.")
    c = result["conservation"]
    verdict = "[green]BALANCED[/green]" if c["balanced"] else "[red]NOT BALANCED[/red]"
    console.print(f"Conservation: {c['in']} in = {c['accounted']} accounted for; announced twice "
                  f"{c['announced_twice']}, failures unannounced {c['unannounced_failures']}, still running "
                  f"{result['still_running']} -> {verdict}")


def _child(outdir: str, report: str, seed: str, assembly: str | None = None) -> None:
    """InBackground's child: synthesize into `outdir` unless given `assembly`, run, write the result to `report`."""
    quiet_logs()
    result = run_long_running(Path(assembly) if assembly else synthesize(Path(outdir)), int(seed))
    Path(report).write_text(json.dumps(result, indent=2, default=str), encoding="utf-8")


if __name__ == "__main__":
    _child(*sys.argv[1:])
