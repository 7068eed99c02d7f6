"""Renders one benchmark run as docs/performance.md: every number comes from the run passed in."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bench.capacity import (
    FUNCTION_SECONDS,
    INVOCATIONS_PER_ORDER,
    LAMBDA_DEFAULT,
    OVERLOAD,
    REGIONS,
    SCALE,
    TRANSITIONS_PER_SECOND,
    Capacity,
    quoted,
)
from bench.ceiling import PIPES_CONCURRENCY, PIPES_QUOTAS, QUOTAS, SFN_QUOTAS, ceiling
from bench.cli_startup import BUDGET_SECONDS as CLI_BUDGET_SECONDS
from bench.cli_startup import Startup
from bench.demo_run import DemoRun
from bench.idle import (
    ALARM_METRIC_MONTH,
    COMPOSITE_ALARM_MONTH,
    DASHBOARD_MONTH,
    KMS_KEY_MONTH,
    SCHEDULER_INVOCATION,
    Idle,
)
from bench.overhead import GOAL as OVERHEAD_GOAL
from bench.overhead import Overhead
from bench.paths import ANCHORS, DUPLICATE, RESEND, SCENARIOS, CarrierPathResult, MixResult, PathResult
from bench.synth import SuiteRun, SynthTimes
from bench.throughput import Level
from fire_and_forget.rehearsal import MAX_IN_FLIGHT, cost

MAX_COLD_RATIO = 1.5


@dataclass
class Run:
    """Everything one `make bench` measured; a section whose benchmark was skipped is None."""

    machine: dict[str, str]
    paths: dict[str, PathResult]
    mix: MixResult
    demo: DemoRun | None
    coldstart: list[dict[str, Any]]
    synth: SynthTimes
    throughput: list[Level]
    suite: SuiteRun | None
    cli: list[Startup] | None = None
    overhead: Overhead | None = None
    idle: Idle | None = None
    modes: list[dict[str, Any]] | None = None  # demos/catalog/modes.py's results, FIRE_AND_FORGET first
    carrier: dict[str, CarrierPathResult] | None = None  # the callback step's paths (bench/paths.py)
    capacity: Capacity | None = None  # what the quotas carry, run in the rehearsal (bench/capacity.py)
    seconds: float = 0.0
    commit_after: str = ""  # the checkout may move under a long run: say so


def render(run: Run) -> str:
    sections = [_header(run), _transitions(run), _cost(run), _callback(run), _modes(run), _idle(run), _coldstart(run),
                _cli(run),
                _synth(run), _throughput(run), _overhead(run), _ceiling(run), _capacity(run)]
    return "\n\n".join(sections) + "\n"


def _table(head: Sequence[str], rows: Sequence[Sequence[object]], align: str = "") -> str:
    align = align or "l" + "r" * (len(head) - 1)
    rule = ["---:" if a == "r" else "---" for a in align]
    return "\n".join("| " + " | ".join(str(c) for c in row) + " |" for row in [head, rule, *rows])


def _header(run: Run) -> str:
    m = run.machine
    moved = run.commit_after not in ("", m["commit"])
    commit = f"{m['commit']} at start, {run.commit_after} at end" if moved else m["commit"]
    happy = run.paths["happy path"]
    fastest = max(run.throughput, key=lambda level: level.orders_per_second)
    bound = ceiling(QUOTAS[0], run.mix.transitions_per_message, run.mix.executions_per_message)
    return "\n".join([
        "# Performance and cost",
        "",
        "Written by `make bench` (`bench/run.py`): do not edit by hand, run it again. Every figure below was measured",
        "in the one run described here, side by side with its yardstick; the only figures not measured are the",
        "published anchors, AWS list prices and AWS quotas, each quoted with its source.",
        "",
        _table(["machine", ""], [
            ["CPU", m["cpu"]], ["cores", m["cores"]], ["Python", m["python"]], ["OS", m["os"]],
            ["date", m["date"]], ["load average at start (1 min)", m["load"]], ["commit", commit],
            ["`bench/run.py` took", f"{run.seconds:.0f} s" + ("" if run.suite else " (suite skipped)")],
        ], "ll"),
        "",
        "**Headlines.** "
        f"The happy path bills {happy.usage.transitions} state transitions (published anchors: "
        + ", ".join(f"{name} {value}" for name, value in ANCHORS) + "). "
        f"The demo's default mix costs ${run.mix.cost_per_million:,.2f} per million orders at list prices and "
        f"averages {run.mix.transitions_per_message:.2f} transitions per order, so in {QUOTAS[0].regions} the "
        f"default quotas carry about {bound.orders_per_second:,.0f} orders/s (bound by {bound.bound_by}). "
        f"Offline, the pipeline moves at most {fastest.orders_per_second:.1f} orders/s on this machine "
        f"(at {fastest.concurrent} concurrent message{'s' if fastest.concurrent > 1 else ''}).",
    ])


def _transitions(run: Run) -> str:
    rows = []
    for scenario in (*SCENARIOS, RESEND, DUPLICATE):
        result = run.paths[scenario.name]
        ends = ", ".join(f"{e.status}" + (f" ({e.error})" if e.error else "") for e in result.executions)
        states = " / ".join(" → ".join(e.states) for e in result.executions)
        rows.append([scenario.name, result.states_entered, sum(result.retries), result.usage.transitions, ends,
                     states])
    anchors = [["this project (measured above)", run.paths["happy path"].usage.transitions],
               *([f"{name}: published figure of the sample", value] for name, value in ANCHORS)]
    return "\n".join([
        "## 1. State transitions per path",
        "",
        "Each path is one order sent into the offline rehearsal (`fire_and_forget.rehearsal`: the synthesized",
        "template deployed into moto, the real handlers, the pipe in FIRE_AND_FORGET), one path after another.",
        "Failures are the business errors the handlers raise for such orders (`demos.orders.samples.make_order`); the",
        "retried and exhausted paths inject Lambda throttles on that order only (`fire_and_forget.rehearsal.faults`).",
        "Step Functions Standard bills every state entered plus every retry, so billed transitions = states entered",
        "(from the execution history) + retries (the back-off waits the Retry fields asked for, recorded by",
        "`fire_and_forget.rehearsal.clock`).",
        "",
        _table(["path", "states entered", "retries", "billed transitions", "end", "states"],
               rows, "lrrrll"),
        "",
        "Against the published anchors (happy path):",
        "",
        _table(["saga", "billed transitions, happy path"], anchors),
    ])


def _callback(run: Run) -> str:
    if not run.carrier:
        return "### The callback step\n\nSkipped in this run."
    rows = []
    for result in run.carrier.values():
        u = result.usage
        rows.append([result.name, result.outcome, f"{result.hours:.1f}", u.transitions, u.lambda_invocations,
                     result.answers, u.sqs_requests, f"{u.dynamodb_writes:g}/{u.dynamodb_reads:g}",
                     f"${result.cost_per_million:,.2f}"])
    happy = run.paths["happy path"].cost_per_million
    confirmed = next(iter(run.carrier.values()))
    return "\n".join([
        "### The callback step: BookCarrier (`ff:carrierConfirmation`)",
        "",
        "An order per carrier behaviour, in the app with the carrier's confirmation, answered by the carrier",
        "simulator (`demos/orders/carrier.py`) through the entry point's function URL, hours on the rehearsal's",
        "clock. Usage as above, plus what no history shows: each heartbeat or answer is an invocation of the entry",
        "point (counted under Lambda, and apart as *answers*), each hand-over an SQS SendMessage by BookCarrier.",
        "Waiting costs nothing: a `.waitForTaskToken` task bills its transitions, not its hours.",
        "",
        _table(["path", "outcome", "hours", "transitions", "Lambda", "answers", "SQS", "DynamoDB W/R",
                "USD per 1M orders"], rows, "llrrrrrrr"),
        "",
        f"The confirmed order costs ${confirmed.cost_per_million:,.2f} per 1M orders against the happy path's "
        f"${happy:,.2f} without the step: **${confirmed.cost_per_million - happy:,.2f} per 1M orders** for a step "
        "someone else does hours later.",
    ])


def _cost(run: Run) -> str:
    rows = []
    for scenario in (*SCENARIOS, RESEND, DUPLICATE):
        u = run.paths[scenario.name].usage
        rows.append([scenario.name, u.transitions, u.lambda_invocations, u.sns_publishes, u.sqs_requests,
                     u.pipe_requests, f"{u.dynamodb_writes:g}/{u.dynamodb_reads:g}",
                     f"${run.paths[scenario.name].cost_per_million:,.2f}"])
    weights = [[name, f"{share:.0%}"] for name, share in run.mix.weights.items()]
    prices = [[key, f"{price.usd * 1e6:,.4f}", price.per, price.source] for key, price in cost.PRICES.items()]
    return "\n".join([
        "## 2. Cost per 1M orders",
        "",
        "`fire_and_forget.rehearsal.cost.usage_of_execution` turns each execution's history into billable requests",
        "(billed transitions, Lambda invocations, SNS publishes, SQS requests), and the rehearsal's DynamoDB meter",
        "(`fire_and_forget.rehearsal.capacity`) counts the write and read request units (W/R) of every DynamoDB call",
        "the message caused, by DynamoDB's documented rules (item sizes, transactions at twice the units); all priced",
        "at `fire_and_forget.rehearsal.cost.PRICES`.",
        "",
        _table(["path", "transitions", "Lambda", "SNS", "SQS", "pipe", "DynamoDB W/R", "USD per 1M orders"], rows),
        "",
        _happy_breakdown(run),
        "",
        f"**The demo's default mix** (`demos.orders.demo.MIX` and its resend and duplicate shares) costs "
        f"**${run.mix.cost_per_million:,.2f} per 1M orders**, {run.mix.transitions_per_message:.3f} billed "
        f"transitions and {run.mix.executions_per_message:.3f} executions per order. It is weighted from the paths",
        "measured above: per message in, sum(share × path) + resend share × resend path + duplicate share × the",
        "duplicate's extra execution, divided by (1 + resend share), because the demo counts a resend as a message",
        "and a duplicate delivery as not one. Shares:",
        "",
        _table(["path", "share of orders"], weights),
        "",
        _demo_check(run),
        "",
        f"Prices: {cost.REGION} list prices, read on {cost.PRICES_READ_ON} from the pages named.",
        "",
        _table(["item", "USD per 1M", "unit", "source"], prices, "lrll"),
        "",
        "Assumptions (where the rehearsal cannot measure AWS), from `fire_and_forget.rehearsal.cost`:",
        "",
        f"- Lambda memory {cost.LAMBDA_MEMORY_GB} GB and {cost.LAMBDA_BILLED_MS} ms billed per invocation (a"
        " DynamoDB-bound handler's warm duration in AWS; offline timings are not AWS timings).",
        "- A ConditionCheck in a transaction is metered as a transactional write of the item it checks (2 write"
        " units per KB, as measured against DynamoDB and published; DynamoDB's pages do not say); read as a"
        " transactional read instead, each would cost 2 read units.",
        f"- {cost.SQS_REQUESTS_PER_MESSAGE} SQS requests per message (send, receive, delete) and one pipe request per"
        " execution; every payload under 64 KB. No free tier, no CloudWatch Logs; alarms, dashboard and keys bill"
        " by the month (below).",
    ])


def _happy_breakdown(run: Run) -> str:
    """Where the happy path's dollars go, and the least any saga of this shape can cost."""
    u = run.paths["happy path"].usage
    p = cost.PRICES
    lambda_usd = u.lambda_invocations * (p["lambda_request"].usd
                                         + cost.LAMBDA_MEMORY_GB * cost.LAMBDA_BILLED_MS / 1000
                                         * p["lambda_gb_second"].usd)
    parts = [("state transitions", u.transitions * p["state_transition"].usd),
             ("DynamoDB", u.dynamodb_writes * p["dynamodb_write"].usd + u.dynamodb_reads * p["dynamodb_read"].usd),
             ("Lambda", lambda_usd), ("SQS", u.sqs_requests * p["sqs_request"].usd),
             ("pipe", u.pipe_requests * p["pipe_request"].usd)]
    # Three Standard transitions, three invocations, the message's SQS and pipe requests, and Powertools'
    # idempotency record alone (written in progress, then completed: two write units per step).
    floor = sum(usd for name, usd in parts if name != "DynamoDB") + 2 * u.lambda_invocations * p["dynamodb_write"].usd
    return (f"**The happy path, ${run.paths['happy path'].cost_per_million:,.2f} per 1M orders**: "
            + ", ".join(f"{name} ${usd * 1e6:,.2f}" for name, usd in parts)
            + f" ({u.dynamodb_writes:g} write and {u.dynamodb_reads:g} read units: each step's idempotency record, "
            "the delivery claim, the reservation's and the shipment's transactions with the order's ownership, the "
            "payment). The least a saga of three Standard steps with an idempotency record per step can cost at "
            f"these prices, with no business write at all, is ${floor * 1e6:,.2f}.")


def _idle(run: Run) -> str:
    idle = run.idle
    if idle is None:
        return "### At idle\n\nSkipped in this run."
    month = idle.per_month
    rows = [[f"schedule `{name}`", f"{count:,}", f"{count * month:,.0f}"] for name, count in idle.firings.items()]
    rows += [[f"{task} invocations", f"{count:,}", f"{count * month:,.0f}"] for task, count in idle.invocations.items()]
    rows += [["SQS requests by the functions", f"{idle.sqs_requests:,}", f"{idle.sqs_requests * month:,.0f}"],
             ["SNS publishes", f"{idle.sns_publishes:,}", f"{idle.sns_publishes * month:,.0f}"],
             ["DynamoDB write/read units", f"{idle.dynamodb_write_units:g}/{idle.dynamodb_read_units:g}",
              f"{idle.dynamodb_write_units * month:,.0f}/{idle.dynamodb_read_units * month:,.0f}"]]
    fixed = [["alarm metrics", idle.alarm_metrics, f"${ALARM_METRIC_MONTH[0]:.2f}", ALARM_METRIC_MONTH[1]],
             ["composite alarms", idle.composite_alarms, f"${COMPOSITE_ALARM_MONTH[0]:.2f}", COMPOSITE_ALARM_MONTH[1]],
             ["dashboards", idle.dashboards, f"${DASHBOARD_MONTH[0]:.2f}", DASHBOARD_MONTH[1]],
             ["customer managed KMS keys", idle.kms_keys, f"${KMS_KEY_MONTH[0]:.2f}", KMS_KEY_MONTH[1]]]
    return "\n".join([
        "### At idle: the fixed monthly cost",
        "",
        "`bench.idle.measure`: the rehearsal with no message for "
        f"{idle.hours:g} virtual hours, every schedule firing on its period; counted, then scaled to a month of",
        "730 hours. Lambda as in the assumptions above; the scheduler at "
        f"${SCHEDULER_INVOCATION[0] * 1e6:.2f} per million invocations ({SCHEDULER_INVOCATION[1]}), no free tier.",
        "",
        _table(["what idles", f"in {idle.hours:g} h", "a month"], rows),
        "",
        f"**The schedules and the sweep cost ${idle.schedules_usd():,.4f} a month at idle.** The resources that bill "
        "by the month whatever the traffic, from the template:",
        "",
        _table(["resource", "count", "USD a month each", "source"], fixed, "lrrl"),
        "",
        f"**${idle.resources_usd():,.2f} a month** for those (the dashboard is free within an account's first three).",
        "The Lambda event source mapping that feeds the Reconciler long-polls its queue; AWS does not document how",
        "often an idle mapping asks, and bills those requests to SQS at its request price: they are not in these",
        "figures. Nor are CloudWatch Logs (ingestion and storage of the functions' logs).",
    ])


def _demo_check(run: Run) -> str:
    demo = run.demo
    if demo is None:
        return "The cross-check against the demo's own plan was skipped in this run (`--demo-orders 0`)."
    kinds = ", ".join(f"{count} {kind}" for kind, count in sorted(demo.kinds.items(), key=lambda kv: -kv[1]))
    return "\n".join([
        f"Cross-check: the demo's own plan (`demos.orders.demo.plan({demo.orders}, seed={demo.seed}, chaos=False)`, "
        f"{kinds}; "
        f"{demo.messages} messages, {demo.executions} executions) sent at once through one rehearsal and priced by",
        f"`demos.orders.demo.summarize`: **${demo.cost_per_million:,.2f} per 1M orders**, "
        f"{demo.transitions_per_message:.3f} billed transitions per message, conservation "
        f"{'balanced' if demo.balanced else 'NOT balanced'}, {demo.seconds:.0f} s. It differs from the weighted",
        "figure by its sample (a plan of this size does not hit the shares exactly) and by concurrency: all of its",
        "executions run at once, so a resend or a duplicate can meet its twin still in progress and retry.",
    ])


def _modes(run: Run) -> str:
    if not run.modes:
        return "## The two modes, measured\n\nSkipped in this run (`--modes-products 0`)."
    from demos.catalog.modes import ROWS, cell  # noqa: PLC0415 - the comparison's own table, as `make compare` prints it

    first = run.modes[0]
    return "\n".join([
        "## The two modes, measured",
        "",
        f"`make compare` (demos/catalog/modes.py): the catalog workflow in each mode, {first['messages']} product "
        "messages (the catalog demo's first wave, its invalid documents included), the same faults (a tenth of the "
        "valid products time out on every attempt of their first execution; SQS delivers some messages again while "
        "their first execution runs), each on its own rehearsal and its clock. Express is priced per request and "
        f"per GB-second at {cost.EXPRESS_MEMORY_GB * 1024:.0f} MB, its duration assumed from its tasks "
        f"({cost.LAMBDA_BILLED_MS} ms a Lambda task, {cost.SERVICE_TASK_MS} ms a DynamoDB task, plus the Retry "
        "intervals), not measured; CloudWatch Logs ingestion (both modes log level ALL) is not priced.",
        "",
        _table(["", *[result["mode"] for result in run.modes]],
               [[label, *[cell(result[key], kind) for result in run.modes]] for label, key, kind in ROWS], "l" + "l" *
               len(run.modes)),
        "",
        "FIRE_AND_FORGET announces each failure on the alerts topic (the failure tail); REQUEST_RESPONSE announces "
        "none one by one: its SourceDlqNotEmpty alarm and the AWS/States alarms do, on CloudWatch's schedule.",
    ])


def _coldstart(run: Run) -> str:
    rows = []
    for row in run.coldstart:
        over = row["handler"] != "baseline" and max(row["ratio"], row["cpu_ratio"]) > MAX_COLD_RATIO
        rows.append([row["handler"], f"{row['median_ms']:.1f}", f"{row['p90_ms']:.1f}", f"{row['ratio']:.2f}x",
                     f"{row['cpu_median_ms']:.1f}", f"{row['cpu_ratio']:.2f}x",
                     f"**over {MAX_COLD_RATIO}x**" if over else "ok"])
    flagged = [r[0] for r in rows if r[-1] != "ok"]
    closest = max(run.coldstart[1:], key=lambda row: row["ratio"])
    verdict = (f"**Flagged: over {MAX_COLD_RATIO}x the baseline (wall or CPU): {', '.join(flagged)}.**" if flagged
               else f"No handler is over {MAX_COLD_RATIO}x the baseline (wall or CPU); the closest is "
                    f"{closest['handler']} at {closest['ratio']:.2f}x.")
    return "\n".join([
        "## 3. Handler cold import time",
        "",
        "`bench.coldstart.measure`: importing the handler module and parsing one sample order, timed inside a fresh",
        "interpreter (interpreter start-up left out), against a baseline that imports only boto3 and the Powertools",
        "Logger and parses the body as JSON. Cases are interleaved round by round in rotating order, bytecode cache",
        "warmed once, `LAMBDA_TASK_ROOT` and each function's environment set. Ratio = handler median / baseline",
        f"median; CPU time is steadier on a shared machine. {run.coldstart[0]['runs']} fresh interpreters per case.",
        "",
        _table(["handler", "median ms", "p90 ms", "ratio", "CPU median ms", "CPU ratio", f"≤ {MAX_COLD_RATIO}x"], rows),
        "",
        verdict,
    ])


def _cli(run: Run) -> str:
    if run.cli is None:
        return "### ff-ops start-up\n\nSkipped in this run."
    floor = run.cli[0]
    rows = [[f"`{s.command}`", f"{s.median:.3f}", f"{s.worst:.3f}", f"{s.median - floor.median:+.3f}",
             ("ok" if s.worst <= CLI_BUDGET_SECONDS else f"**over {CLI_BUDGET_SECONDS} s**")
             if s.command.startswith("ff-ops") else ""] for s in run.cli]
    return "\n".join([
        "### ff-ops start-up",
        "",
        "`bench.cli_startup.measure`: wall time of a fresh process from spawn to exit, against starting the",
        "interpreter alone and against importing the libraries ff-ops is made of; cases interleaved round by round,",
        f"each run once untimed first. {len(floor.seconds)} runs per case. boto3 is imported when the first clients",
        f"are made, so neither command loads it. Budget: {CLI_BUDGET_SECONDS} s for the worst run.",
        "",
        _table(["command", "median s", "worst s", "vs `python -c pass`", f"≤ {CLI_BUDGET_SECONDS} s"], rows),
    ])


def _synth(run: Run) -> str:
    s = run.synth
    ratio = s.app_median / s.minimal_median
    suite = ("Skipped in this run (`--skip-suite`)." if run.suite is None else
             f"`{run.suite.command}`, once, as a subprocess: **{run.suite.seconds:.0f} s** wall, "
             f"{run.suite.passed} passed (pytest: \"{run.suite.summary}\", exit code {run.suite.returncode})."
             + "".join(f"\n- failed: `{test}`" for test in run.suite.failed))
    return "\n".join([
        "## 4. Synth time and test suite time",
        "",
        "In-process synth: `build_app(cdk_context(), outdir)` then `.synth()`, with cdk.json's context, against a",
        "minimal app (one stack, one SQS queue) synthesized the same way in the same process. Each app is",
        "synthesized once untimed first (the jsii runtime and CDK library load), then "
        f"{len(s.app_seconds)} times each,",
        "alternating; the median is reported. The full app's synth includes the cdk-nag packs and staging the",
        "Lambda asset.",
        "",
        _table(["app", "median s", "runs (s)"], [
            ["this app", f"{s.app_median:.3f}", ", ".join(f"{x:.3f}" for x in s.app_seconds)],
            ["minimal one-queue app", f"{s.minimal_median:.3f}", ", ".join(f"{x:.3f}" for x in s.minimal_seconds)],
        ]),
        "",
        f"This app synthesizes in {ratio:.1f}x the time of the minimal app.",
        "",
        "Test suite: " + suite,
    ])


def _throughput(run: Run) -> str:
    base = run.throughput[0].orders_per_second
    rows = [[lv.concurrent, lv.runs, f"{lv.seconds:.2f}", f"{lv.orders_per_second:.2f}",
             f"{lv.orders_per_second / base:.2f}x", f"{lv.cpu_seconds / lv.concurrent * 1000:.0f}",
             f"{lv.succeeded}/{lv.concurrent}"] for lv in run.throughput]
    return "\n".join([
        "## 5. Offline pipeline throughput",
        "",
        "N valid orders are sent at once into a fresh rehearsal, then `run()` is timed: the pipe drains the queue and",
        "starts the executions, which run concurrently on moto's interpreter threads and call the real handlers in",
        "process, until every execution has ended and its status event was routed. One untimed order first, so imports",
        "are not counted. Each level is repeated up to about 100 orders (median). This is the emulator's throughput",
        "on this machine, under one Python interpreter: it says how the offline stack scales, not what AWS does",
        f"(section 6). The rehearsal lets at most {MAX_IN_FLIGHT} executions run at once",
        "(`fire_and_forget.rehearsal.rehearsal.MAX_IN_FLIGHT`: every invocation runs on one interpreter, so more at",
        "once only makes each slower); above",
        "that the pipe leaves the rest in the queue until executions finish.",
        "",
        _table(["concurrent messages", "runs", "median s", "orders/s", "vs 1 message", "CPU ms per order",
                "succeeded"], rows),
        "",
        _scaling(run.throughput),
    ])


def _overhead(run: Run) -> str:
    o = run.overhead
    if o is None:
        return "### Emulation overhead\n\nSkipped in this run."
    verdict = "within" if o.wall_ratio <= OVERHEAD_GOAL else "**over**"
    return "\n".join([
        "### Emulation overhead",
        "",
        "`bench.overhead.measure`: in one rehearsal, valid orders one at a time, alternately through the whole",
        "rehearsal (SendMessage, the pipe, moto's Step Functions interpreter, each Task through moto's Lambda API) and",
        "straight through the same three handlers in process (`LambdaRuntime.call`) on the same moto DynamoDB: the",
        "handlers' own work, this machine's floor for an order. Medians per order over "
        f"{o.orders} orders on each side.",
        "",
        _table(["per order", "wall ms", "CPU ms"], [
            ["through the rehearsal", f"{o.rehearsal_wall * 1000:.1f}", f"{o.rehearsal_cpu * 1000:.1f}"],
            ["the three handlers directly", f"{o.direct_wall * 1000:.1f}", f"{o.direct_cpu * 1000:.1f}"],
            ["ratio", f"{o.wall_ratio:.2f}x", f"{o.cpu_ratio:.2f}x"],
        ]),
        "",
        f"The emulation costs {o.wall_ratio:.2f}x the handlers' own time, {verdict} the goal of "
        f"{OVERHEAD_GOAL:.0f}x.",
    ])


def _scaling(levels: Sequence[Level]) -> str:
    first, last = levels[0], levels[-1]
    cpu_ratio = (last.cpu_seconds / last.concurrent) / (first.cpu_seconds / first.concurrent)
    return (f"From {first.concurrent} to {last.concurrent} concurrent messages, orders/s changes "
            f"{last.orders_per_second / first.orders_per_second:.2f}x and CPU time per order {cpu_ratio:.2f}x. The "
            "executions, the pipe and the handlers share one CPython interpreter, so concurrency overlaps little "
            "work here; in AWS each Lambda invocation and execution runs apart, and section 6 gives the bound.")


def _ceiling(run: Run) -> str:
    happy = run.paths["happy path"].usage.transitions
    rows = []
    for quotas in QUOTAS:
        for label, per_order, executions in (("happy path", happy, 1.0),
                                             ("demo mix", run.mix.transitions_per_message,
                                              run.mix.executions_per_message)):
            c = ceiling(quotas, per_order, executions)
            burst = f"burst {quotas.start_execution_burst:,}"
            rows.append([quotas.regions, label, f"{quotas.start_execution_per_second} ({burst})",
                         f"{quotas.transitions_per_second:,} (burst {quotas.transitions_burst:,})",
                         f"{per_order:.2f}", f"{c.by_start:,.0f}", f"{c.by_transitions:,.0f}",
                         f"**{c.orders_per_second:,.0f}**", c.bound_by])
    return "\n".join([
        "## 6. Throughput ceiling in AWS",
        "",
        "From the documented default quotas for Standard workflows, per account and region",
        f"([Step Functions quotas]({SFN_QUOTAS})), and the transitions per order measured above:",
        "",
        "    ceiling (orders/s) = min(StartExecution rate / executions per order,",
        "                             state transitions per second / billed transitions per order)",
        "",
        "Executions per order is 1 on a single path; in the demo's mix a duplicate delivery adds an execution.",
        "",
        _table(["regions", "orders", "StartExecution /s", "transitions /s", "transitions per order",
                "by StartExecution", "by transitions", "ceiling orders/s", "bound by"], rows, "llrrrrrrl"),
        "",
        "Sustained rates; the bursts absorb a spike (e.g. 1,300 StartExecution at once) before throttling. The",
        "page notes that new accounts start with reduced state-transition quotas, raised automatically with use.",
        f"EventBridge Pipes allows {PIPES_CONCURRENCY:,} concurrent pipe invocations per account",
        f"([EventBridge quotas]({PIPES_QUOTAS})); in FIRE_AND_FORGET an invocation lasts one StartExecution call,",
        f"so it binds only if that call took longer than {PIPES_CONCURRENCY:,} / "
        f"{QUOTAS[0].start_execution_per_second} = {PIPES_CONCURRENCY / QUOTAS[0].start_execution_per_second:.1f} s.",
        "Above the ceiling orders wait rather than vanish: the pipe deletes a message only after StartExecution",
        "succeeded, and retries a throttled hand-over within the source queue's visibility timeout",
        '(docs/design.md, "Source queue: sizes, visibility timeout, duplicates").',
    ])


def _capacity(run: Run) -> str:
    if run.capacity is None:
        return "## 7. Under load, in the rehearsal\n\nNot measured in this run."
    carried_rows = []
    for measured, (_, region) in zip(run.capacity.carried, REGIONS, strict=True):
        bucket, refill = quoted(region)
        carried_rows.append([
            measured.regions, f"{measured.at_once:,.0f} ({bucket:,.0f})", f"{measured.per_second:,.0f} ({refill:,.0f})",
            f"{measured.transitions_per_order:.2f}",
            f"{measured.transitions_per_second:,.0f} of {TRANSITIONS_PER_SECOND:,}",
            f"{measured.lambda_concurrency:,.0f} of {LAMBDA_DEFAULT:,}", f"{measured.succeeded} of {measured.orders}"])
    scenario_rows = []
    for r in run.capacity.scenarios:
        ended = ", ".join(f"{count} {place}" for place, count in r["where they ended"].items())
        refused = [f"{r['throttled_starts']} starts"] if r["throttled_starts"] else []
        refused += [f"{r['throttled_invocations']} invocations"] if r.get("throttled_invocations") else []
        refused += [f"{r['transaction_conflicts']} conflicts"] if r.get("transaction_conflicts") else []
        refused += [f"{r['partition_throttles']} partition throttles"] if r.get("partition_throttles") else []
        scenario_rows.append([r["scenario"], r["reading"], r["orders"], ended, f"{r['slowest_seconds']:,}",
                              f"{r['executions_per_order']:.2f}", f"{r['transitions_per_order']:.2f}",
                              f"{r['usd_per_1m_orders']:.2f}", ", ".join(refused) or "none"])
    return "\n".join([
        "## 7. Under load, in the rehearsal",
        "",
        f"Run, not divided (bench/capacity.py): the order example under a sustained overload ({OVERLOAD.multiple:g} "
        f"times the refill for {OVERLOAD.seconds:g} s) at {SCALE:g} of each Region class's StartExecution quota, the "
        "pipe retrying throttled starts, read back from the executions' start times and scaled up again. In "
        "brackets, the quota as service-quotas.html gives it. The state-transition quota and Lambda's concurrency "
        f"are what the same rate needs: the transitions measured, and {INVOCATIONS_PER_ORDER} invocations of "
        f"{FUNCTION_SECONDS:g} s an order against the account's default concurrency.",
        "",
        _table(["Regions", "started at once", "started a second after", "transitions per order",
                "transitions a second at that rate", "Lambda concurrency at that rate", "orders succeeded"],
               carried_rows, "lrrrrrr"),
        "",
        "Every load scenario of `make test` (demos/orders/load.py, SMALL and LIMITS_SMALL; docs/design.md, \"Under "
        "load\"), each from a fresh deployment to the quiet end:",
        "",
        _table(["scenario", "reading", "orders", "where they ended", "slowest s", "executions / order",
                "transitions / order", "USD per 1M", "refused"], scenario_rows, "llrlrrrrl"),
    ])
