"""Cold start of each saga handler against a boto3 + Powertools Logger baseline, measured side by side.

A cold start here is what the issue defines: importing the handler module plus parsing one sample order, timed
inside a fresh interpreter (interpreter start-up itself is the same for every case and left out). Each run is a new
subprocess; cases are interleaved round by round, in a rotating order, so drift on a busy machine hits all of them
alike. The bytecode cache lives in a temporary PYTHONPYCACHEPREFIX, warmed once per case before timing, as a
deployed asset would ship it. LAMBDA_TASK_ROOT and the function's environment are set, so Powertools and X-Ray take
their Lambda code paths.

    .venv/bin/python bench/coldstart.py --runs 20 [--max-ratio 1.5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
LAMBDAS = ROOT / "lambdas" / "orders"
EVENTS = ROOT / "tests" / "events"


@dataclass(frozen=True)
class Case:
    """One handler: the code a cold start runs (import + parse one sample order) and its environment."""

    name: str
    code: str
    event: str  # which sample event the parse step reads: "record" or "context"
    env: dict[str, str]
    root: Path = LAMBDAS  # the asset root on PYTHONPATH (another checkout's lambdas/ to compare revisions)


_IDEMPOTENCY = {"IDEMPOTENCY_TABLE_NAME": "Idempotency", "IDEMPOTENCY_EXPIRY_SECONDS": "1296000"}

CASES = (
    # The yardstick: a handler importing only boto3 and the Powertools Logger, parsing the body as plain JSON.
    Case(
        "baseline",
        "import boto3\nfrom aws_lambda_powertools import Logger\nlogger = Logger()\njson.loads(event['body'])",
        "record",
        {},
    ),
    Case(
        "reserve_inventory",
        "import reserve_inventory.handler\nfrom common.models import parse_order\nparse_order(event['body'])",
        "record",
        {
            "INVENTORY_TABLE_NAME": "Inventory",
            "RESERVATIONS_TABLE_NAME": "Reservations",
            "DELIVERIES_TABLE_NAME": "Deliveries",
            **_IDEMPOTENCY,
        },
    ),
    Case(
        "charge_payment",
        "import charge_payment.handler\nfrom common.order_context import charge_input\ncharge_input(event)",
        "context",
        {"PAYMENTS_TABLE_NAME": "Payments", "DEFAULT_CREDIT_LIMIT": "5000", **_IDEMPOTENCY},
    ),
    Case(
        "arrange_shipping",
        "import arrange_shipping.handler\nfrom common.order_context import shipping_input\nshipping_input(event)",
        "context",
        {"SHIPMENTS_TABLE_NAME": "Shipments", "SERVED_COUNTRIES": "JP,US,CA,GB,DE,FR,AU,NZ,SG", **_IDEMPOTENCY},
    ),
    Case(
        "refund_payment",
        "import refund_payment.handler\nfrom common.records import order_id_of\norder_id_of(event['body'])",
        "record",
        {"PAYMENTS_TABLE_NAME": "Payments", **_IDEMPOTENCY},
    ),
    Case(
        "release_inventory",
        "import release_inventory.handler\nfrom common.records import order_id_of\norder_id_of(event['body'])",
        "record",
        {"INVENTORY_TABLE_NAME": "Inventory", "RESERVATIONS_TABLE_NAME": "Reservations", **_IDEMPOTENCY},
    ),
    Case(
        "cancel_shipment",
        "import cancel_shipment.handler\nfrom common.records import order_id_of\norder_id_of(event['body'])",
        "record",
        {"SHIPMENTS_TABLE_NAME": "Shipments", **_IDEMPOTENCY},
    ),
)

# The child reads its event before the clocks start; json and time are loaded by then for every case alike. It
# reports wall time and its own CPU time: on a busy machine the wall clock also counts waiting for a CPU.
_CHILD = """\
import json, sys, time
event = json.loads(sys.argv[1])
wall, cpu = time.perf_counter(), time.process_time()
{code}
print((time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000)
"""


def sample_events() -> dict[str, dict[str, Any]]:
    """The canonical SQS record, and the order context ReserveInventory returns for it."""
    record: dict[str, Any] = json.loads((EVENTS / "sqs_record.json").read_text(encoding="utf-8"))
    order: dict[str, Any] = json.loads((EVENTS / "order.json").read_text(encoding="utf-8"))
    record["body"] = json.dumps(order)
    context = {
        "orderId": order["orderId"],
        "customerId": order["customerId"],
        "messageId": record["messageId"],
        "executionArn": "arn:aws:states:us-east-1:123456789012:execution:OrderSaga:coldstart",  # the attempt's own
        "order": order,
        "reservation": {
            "status": "RESERVED",
            "attemptId": record["messageId"],
            "items": order["items"],
        },
    }
    return {"record": record, "context": context}


def _environment(case: Case, pycache: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("POWERTOOLS_", "AWS_", "PYTHON"))}
    env.update(
        PYTHONPATH=f"{case.root}:{case.root.parent}",  # the handlers and the construct runtime, as in the asset
        PYTHONPYCACHEPREFIX=pycache,  # PYTHONDONTWRITEBYTECODE, like every PYTHON* variable, is dropped above
        LAMBDA_TASK_ROOT=str(case.root),
        AWS_LAMBDA_FUNCTION_NAME=f"OrderSaga-{case.name}",
        AWS_LAMBDA_FUNCTION_MEMORY_SIZE="256",
        AWS_REGION="us-east-1",
        AWS_DEFAULT_REGION="us-east-1",
        POWERTOOLS_SERVICE_NAME="order-saga",
        POWERTOOLS_METRICS_NAMESPACE="FireAndForget",
        POWERTOOLS_LOG_LEVEL="INFO",
        **case.env,
    )
    return env


def _run_once(case: Case, events: dict[str, dict[str, Any]], pycache: str) -> tuple[float, float]:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD.format(code=case.code), json.dumps(events[case.event])],
        env=_environment(case, pycache),
        cwd=tempfile.gettempdir(),  # not the repo root: nothing importable by accident
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{case.name} failed to start:\n{done.stderr}")
    wall, cpu = done.stdout.strip().splitlines()[-1].split()
    return float(wall), float(cpu)


def _p90(samples: Sequence[float]) -> float:
    return statistics.quantiles(samples, n=10, method="inclusive")[-1] if len(samples) > 1 else samples[0]


def measure(runs: int = 20, cases: Sequence[Case] = CASES) -> list[dict[str, Any]]:
    """Time every case ``runs`` times, interleaved; one row per case, the baseline first.

    Each row: ``handler``, ``median_ms``, ``p90_ms``, ``ratio`` (median over the baseline's median), the same
    median and ratio of CPU time as ``cpu_median_ms`` and ``cpu_ratio`` (steadier when other work shares the
    machine), and ``runs``.
    """
    events = sample_events()
    samples: dict[str, list[float]] = {case.name: [] for case in cases}
    cpu: dict[str, list[float]] = {case.name: [] for case in cases}
    with tempfile.TemporaryDirectory(prefix="coldstart-pycache-") as pycache:
        for case in cases:  # warm the bytecode cache: a deployed asset is compiled once, not per cold start
            _run_once(case, events, pycache)
        for round_ in range(runs):
            shift = round_ % len(cases)
            for case in [*cases[shift:], *cases[:shift]]:
                wall, used = _run_once(case, events, pycache)
                samples[case.name].append(wall)
                cpu[case.name].append(used)
    baseline = statistics.median(samples[cases[0].name])
    cpu_baseline = statistics.median(cpu[cases[0].name])
    return [
        {
            "handler": case.name,
            "median_ms": round(statistics.median(samples[case.name]), 1),
            "p90_ms": round(_p90(samples[case.name]), 1),
            "ratio": round(statistics.median(samples[case.name]) / baseline, 2),
            "cpu_median_ms": round(statistics.median(cpu[case.name]), 1),
            "cpu_ratio": round(statistics.median(cpu[case.name]) / cpu_baseline, 2),
            "runs": runs,
        }
        for case in cases
    ]


def markdown(rows: Sequence[dict[str, Any]]) -> str:
    lines = [
        "| handler | median ms | p90 ms | ratio to baseline | CPU median ms | CPU ratio |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {r['handler']} | {r['median_ms']:.1f} | {r['p90_ms']:.1f} | {r['ratio']:.2f}x"
        f" | {r['cpu_median_ms']:.1f} | {r['cpu_ratio']:.2f}x |"
        for r in rows
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=20, help="fresh interpreters per handler (default 20)")
    parser.add_argument("--max-ratio", type=float, help="exit 1 when a handler's ratio exceeds this (e.g. 1.5)")
    parser.add_argument("--only", nargs="*", help="handler names to measure besides the baseline")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON instead of a table")
    args = parser.parse_args(argv)
    cases = CASES if not args.only else [CASES[0], *(case for case in CASES[1:] if case.name in args.only)]
    rows = measure(args.runs, cases)
    print(json.dumps(rows, indent=2) if args.json else markdown(rows))
    over = [row for row in rows if args.max_ratio is not None and row["ratio"] > args.max_ratio]
    for row in over:
        print(f"{row['handler']}: {row['ratio']:.2f}x exceeds {args.max_ratio}x", file=sys.stderr)
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
