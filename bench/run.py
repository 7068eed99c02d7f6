"""`make bench`: measure transitions, cost, cold starts, synth, throughput and the AWS ceiling in one run.

    .venv/bin/python bench/run.py [--skip-suite] [--out docs/performance.md]

Writes docs/performance.md from this run's numbers only. Needs `make synth` (cdk.out/) first.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script: make the repository root importable (bench, offline, app)
    sys.path.insert(0, str(ROOT))

from bench import capacity, cli_startup, coldstart, demo_run, idle, machine, overhead, paths, synth, throughput  # noqa: E402
from bench.report import Run, render  # noqa: E402
from tests.support.mutation_table import carried_over  # noqa: E402


def _step(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--assembly", type=Path, default=ROOT / "cdk.out", help="the synthesized app (make synth)")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "performance.md", help="the report to write")
    parser.add_argument("--skip-suite", action="store_true", help="do not time the test suite (quick iterations)")
    parser.add_argument("--coldstart-runs", type=int, default=20, help="fresh interpreters per handler")
    parser.add_argument("--cli-runs", type=int, default=15, help="fresh processes per ff-ops command")
    parser.add_argument("--synth-rounds", type=int, default=5, help="timed synths of each app")
    parser.add_argument("--levels", type=int, nargs="+", default=[1, 10, 100], help="concurrent messages")
    parser.add_argument("--overhead-orders", type=int, default=30, help="orders on each side of the overhead ratio")
    parser.add_argument("--modes-products", type=int, default=40, help="product messages of the comparison of the"
                        " two modes (0: skip)")
    parser.add_argument("--demo-orders", type=int, default=100, help="orders of the demo's plan to cross-check the"
                        " weighted mix with (0: skip)")
    args = parser.parse_args(argv)
    if not (args.assembly / "FireAndForget.template.json").exists():
        print(f"No synthesized app in {args.assembly}: run `make synth` first.", file=sys.stderr)
        return 2
    # The interpreter logs every failed state at ERROR and the handlers log every order: the report is the output.
    logging.getLogger("moto.stepfunctions.parser").setLevel(logging.CRITICAL)
    logging.getLogger("order-saga").setLevel(logging.WARNING)
    # Powertools warns when a compensation with nothing to undo publishes no metric (pyproject filters it too).
    warnings.filterwarnings("ignore", "No application metrics to publish", UserWarning)

    started = time.perf_counter()
    host = machine.describe()
    _step("cold import of each handler against the boto3 + Logger baseline")
    cold = coldstart.measure(args.coldstart_runs)
    _step("ff-ops --version and --help against python -c pass")
    cli = cli_startup.measure(args.cli_runs)
    _step("state transitions and usage of each path (offline rehearsal)")
    results = paths.run_paths(args.assembly)
    _step("the callback step: an order per carrier behaviour, hours on the rehearsal's clock")
    with tempfile.TemporaryDirectory(prefix="bench-carrier-") as carrier_out:
        carrier_results = paths.run_carrier_paths(paths.carrier_assembly(Path(carrier_out)))
    _step(f"offline throughput at {', '.join(map(str, args.levels))} concurrent messages")
    levels = throughput.measure(args.assembly, args.levels)
    _step("a virtual idle day: what the schedules and the sweep cost with no traffic")
    at_idle = idle.measure(args.assembly)
    _step("emulation overhead: orders through the rehearsal against the three handlers called directly")
    emulation = overhead.measure(args.assembly, args.overhead_orders)
    demo = None
    if args.demo_orders:
        _step(f"the demo's plan, {args.demo_orders} orders, as a cross-check of the weighted mix")
        demo = demo_run.run_demo(args.assembly, args.demo_orders)
    modes_compared = None
    if args.modes_products:
        _step(f"the two modes, {args.modes_products} product messages and the same faults through each")
        from demos.catalog.modes import compare  # noqa: PLC0415

        modes_compared = compare(args.assembly, args.modes_products, seed=7)
    _step("what the quotas carry, and every load scenario, in the rehearsal")
    under_load = capacity.measure(args.assembly)
    _step("in-process synth: this app against a one-queue app")
    synth_times = synth.synth_times(args.synth_rounds)
    suite = None
    if not args.skip_suite:
        _step("the full test suite (python -m pytest -q -p no:randomly)")
        suite = synth.run_suite()

    run = Run(host, results, paths.demo_mix(results), demo, cold, synth_times, levels, suite, cli, emulation, at_idle,
              modes_compared, carrier=carrier_results, capacity=under_load)
    run.seconds = time.perf_counter() - started
    run.commit_after = machine.commit()
    previous = args.out.read_text(encoding="utf-8") if args.out.exists() else ""
    args.out.write_text(carried_over(render(run), previous), encoding="utf-8")  # make mutation's section stays
    _step(f"wrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out} "
          f"in {run.seconds:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
