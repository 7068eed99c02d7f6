"""The emulation overhead: an order through the offline rehearsal against the same three handlers called directly.

Both sides run in one rehearsal (the synthesized template deployed into moto, tables seeded alike), one order at a
time, each order new:
- through the rehearsal: SendMessage, then `run()`: the pipe receives the message and starts the execution, moto's
  Step Functions interpreter runs the definition, each Task invokes its function through moto's Lambda API;
- directly: the record the pipe would deliver, handed to ReserveInventory's handler, its result to ChargePayment's,
  that result to ArrangeShipping's, in-process (`LambdaRuntime.call`: the function's environment and context, no
  Lambda API), on the same moto DynamoDB. That is the handlers' own work, the floor of this machine for an order.

The ratio of the medians (wall and CPU) is the price of emulating SQS, Pipes, Step Functions and Lambda around that
work; the goal is at most 3x.

    uv run python bench/overhead.py --orders 30
"""

from __future__ import annotations

import argparse
import hashlib
import random
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from demos.orders.samples import OrderKind, make_order, seed_inventory  # noqa: E402
from fire_and_forget.rehearsal import ACCOUNT, Rehearsal  # noqa: E402

GOAL = 3.0
SAGA = ("ReserveInventory", "ChargePayment", "ArrangeShipping")


@dataclass(frozen=True)
class Overhead:
    """Per-order wall and CPU seconds of each side, medians over `orders` orders each."""

    orders: int
    rehearsal_wall: float
    rehearsal_cpu: float
    direct_wall: float
    direct_cpu: float

    @property
    def wall_ratio(self) -> float:
        return self.rehearsal_wall / self.direct_wall

    @property
    def cpu_ratio(self) -> float:
        return self.rehearsal_cpu / self.direct_cpu


def _timed(work: Callable[[], None]) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    work()
    return time.perf_counter() - wall, time.process_time() - cpu


def _record(aws: Rehearsal, body: str) -> dict[str, Any]:
    """The SQS record the pipe hands the workflow for a message with this body (pipe.py's shape)."""
    return {
        "messageId": str(uuid.uuid4()),
        "receiptHandle": uuid.uuid4().hex,
        "body": body,
        "attributes": {"ApproximateReceiveCount": "1", "SentTimestamp": str(int(time.time() * 1000))},
        "messageAttributes": {},
        "md5OfBody": hashlib.md5(body.encode("utf-8")).hexdigest(),  # noqa: S324 - SQS's own checksum, not security
        "eventSource": "aws:sqs",
        "eventSourceARN": aws.pipe.definition.source_queue_arn,
        "awsRegion": aws.region,
    }


def saga_functions(aws: Rehearsal) -> dict[str, Any]:
    """The deployed functions of the saga's three steps (moto's LambdaFunction), by task name."""
    from moto.awslambda_simple.models import lambda_simple_backends

    backend = lambda_simple_backends[ACCOUNT][aws.region]
    return {task: backend.get_function(physical) for physical, task in aws.runtime.task_names.items()
            if task in SAGA}


def direct_order(aws: Rehearsal, functions: dict[str, Any], body: str) -> Any:
    """One order straight through the three handlers, each given the previous one's result, as the workflow's
    Payloads hand them on (statemachines/orders); returns ArrangeShipping's result."""
    result: Any = {"record": _record(aws, body),
                   "executionArn": f"arn:aws:states:{aws.region}:{ACCOUNT}:execution:direct:{uuid.uuid4()}"}
    for task in SAGA:
        result = aws.runtime.call(functions[task], result)
    return result


def measure(assembly: Path, orders: int = 30) -> Overhead:
    rng = random.Random(orders)
    with Rehearsal.start(assembly) as aws:
        seed_inventory(aws.dynamodb, aws.outputs["InventoryTableName"])
        functions = saga_functions(aws)
        numbers = iter(range(1, 2 * orders + 3))

        def through_rehearsal() -> None:
            aws.send(make_order(OrderKind.VALID, next(numbers), rng).body)
            executions = aws.run(timeout_seconds=600)
            if executions[-1].status != "SUCCEEDED":
                raise RuntimeError(f"an order through the rehearsal ended {executions[-1].status}")

        def direct() -> None:
            direct_order(aws, functions, make_order(OrderKind.VALID, next(numbers), rng).body)

        through_rehearsal()  # untimed: imports, caches and the interpreter's first parse on neither side
        direct()
        rehearsal_times, direct_times = [], []
        for _ in range(orders):  # interleaved, so drift on a busy machine hits both sides alike
            rehearsal_times.append(_timed(through_rehearsal))
            direct_times.append(_timed(direct))
    return Overhead(
        orders=orders,
        rehearsal_wall=statistics.median(wall for wall, _ in rehearsal_times),
        rehearsal_cpu=statistics.median(cpu for _, cpu in rehearsal_times),
        direct_wall=statistics.median(wall for wall, _ in direct_times),
        direct_cpu=statistics.median(cpu for _, cpu in direct_times),
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--assembly", type=Path, default=ROOT / "cdk.out")
    parser.add_argument("--orders", type=int, default=30)
    args = parser.parse_args(argv)
    result = measure(args.assembly, args.orders)
    print(f"per order, median of {result.orders}: rehearsal {result.rehearsal_wall * 1000:.1f} ms wall "
          f"({result.rehearsal_cpu * 1000:.1f} ms CPU), handlers directly {result.direct_wall * 1000:.1f} ms wall "
          f"({result.direct_cpu * 1000:.1f} ms CPU): {result.wall_ratio:.2f}x wall, {result.cpu_ratio:.2f}x CPU "
          f"(goal {GOAL:.0f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
