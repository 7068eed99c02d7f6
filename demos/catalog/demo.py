"""`python -m demos.orders.demo --example catalog`: the catalog example's stack through the same rehearsal, a few
dozen product changes (invalid documents, older versions, resends, SQS duplicates; with chaos, transient faults),
and its own account.

The account is the demo's own: each message is looked up in the search index, the failure DLQ and the source DLQ by its
messageId, and compared with what the plan said should become of it (demos/catalog/samples.py), never with what the
handler returned.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from typing import Any

from rich.console import Console
from rich.table import Table

from demos.catalog.samples import CatalogPlan, ProductFate, plan_products
from fire_and_forget.rehearsal import Fault, FaultKind, Rehearsal, account, advance_past_retries
from fire_and_forget.runtime.tail import DUPLICATE_ENDS

INDEX_OUTPUT = "SearchIndexTableName"
DUPLICATE = "duplicate delivery, ignored"
SOURCE_DLQ = "never handed over, in source DLQ"


def chaos_faults() -> list[Fault]:
    """Transient faults the workflow's retries absorb whichever executions they strike: together they fail at most
    four attempts of one execution, and IndexProduct retries four times
    (statemachines/catalog/index_product.asl.json)."""
    return [
        Fault("IndexProduct", FaultKind.SERVICE_ERROR, times=1),
        Fault("IndexProduct", FaultKind.THROTTLE, times=1),
        Fault("IndexProduct", FaultKind.TIMEOUT, times=1),
        # Three failed calls are one failed attempt: botocore tries each call three times before the handler sees it.
        Fault("SearchIndexTable", FaultKind.UNAVAILABLE, times=3),
        Fault("FailureDlq", FaultKind.UNAVAILABLE, times=2),  # HandleFailure's retries
        Fault("AlertsTopic", FaultKind.UNAVAILABLE, times=2),  # NotifyFailure's retries
    ]


def handover_faults() -> list[Fault]:
    """Refused hand-overs, injected for the second wave only: in the first they would strike the batches SQS is set
    to deliver twice, and a refused batch is not delivered twice."""
    return [Fault("StartExecution", FaultKind.START_REFUSED, times=2)]  # the message stays queued and comes back


def run_catalog_demo(aws: Rehearsal, console: Console, *, products: int, chaos: bool, seed: int) -> dict[str, Any]:
    """Fire the planned product changes in two waves, wait for every outcome, and account for each message."""
    the_plan = plan_products(products, seed)
    started = time.perf_counter()
    faults = [aws.faults.add(fault) for fault in chaos_faults()] if chaos else []
    expected: dict[str, ProductFate] = {}
    for wave, samples in (("first", the_plan.first), ("second", the_plan.second)):
        expected.update({aws.send(sample.body): sample.expected for sample in samples})
        aws.pipe.duplicate_next = the_plan.sqs_duplicates if wave == "first" else 0
        if chaos and wave == "second":
            faults += [aws.faults.add(fault) for fault in handover_faults()]
        aws.run_until_quiet()
    advance_past_retries(aws)  # nothing should wait for an automatic retry: the chaos above is absorbed by Retry
    console.print(
        f"Fired {len(expected)} product messages into {aws.stack.name}'s source queue in two waves "
        f"({len(the_plan.first)}, then {len(the_plan.second)} older versions and resends; SQS delivered "
        f"{the_plan.sqs_duplicates} twice)."
    )
    result = summarize(
        aws, the_plan, expected, time.perf_counter() - started, products=products, chaos=chaos, seed=seed
    )
    result["faults_fired"] = {f"{fault.target} {fault.kind.value}": fault.fired for fault in faults}
    return result


def places(aws: Rehearsal, message_ids: list[str]) -> dict[str, list[str]]:
    """Where each message ended, from the index, the two DLQs and the executions that did its work."""
    found: dict[str, list[str]] = {message_id: [] for message_id in message_ids}
    for item in aws.items(INDEX_OUTPUT):
        if item.get("messageId") in found:
            found[item["messageId"]].append(ProductFate.INDEXED.value)
    for message in aws.messages("FailureDlqUrl"):
        record = json.loads(message["Body"]).get("record", {})
        if record.get("messageId") in found:
            found[record["messageId"]].append(ProductFate.INVALID.value)
    for message in aws.messages("SourceDlqUrl"):
        if message["MessageId"] in found:
            found[message["MessageId"]].append(SOURCE_DLQ)
    placed = {message_id for message_id, where in found.items() if where}
    for execution in aws.executions():
        ended_as_duplicate = bool(execution.states) and execution.states[-1] in DUPLICATE_ENDS
        if execution.status == "SUCCEEDED" and not ended_as_duplicate and execution.message_id not in placed:
            found[execution.message_id or ""].append(ProductFate.SUPERSEDED.value)
    return found


def summarize(
    aws: Rehearsal, the_plan: CatalogPlan, expected: dict[str, ProductFate], elapsed: float, **options: Any
) -> dict[str, Any]:
    """The outcome table, its two balances, and the checks against the plan, as data (also the JSON report)."""
    message_ids = list(expected)
    where = places(aws, message_ids)
    outcomes: Counter[str] = Counter(
        found[0] if len(found) == 1 else ("UNACCOUNTED" if not found else "IN TWO PLACES") for found in where.values()
    )
    executions = aws.executions()
    duplicates = sum(1 for e in executions if e.states and e.states[-1] in DUPLICATE_ENDS)
    handed_over = len({e.message_id for e in executions})
    mismatches = [
        {"messageId": m, "expected": expected[m].value, "measured": where[m]}
        for m in message_ids
        if where[m] != [expected[m].value]
    ]
    index = {item["productId"]: int(item["version"]) for item in aws.items(INDEX_OUTPUT)}
    ledger = account(aws, message_ids)
    balanced = (
        len(message_ids) == sum(outcomes.values())
        and set(outcomes) <= _PLACES
        and len(executions) == handed_over + duplicates
        and ledger.balanced
        and not mismatches
        and index == the_plan.newest()
    )
    return {
        "example": "catalog",
        "stack": aws.stack.name,
        "options": options,
        "elapsed_seconds": round(elapsed, 2),
        "messages_in": len(message_ids),
        "outcomes": dict(outcomes),
        "expected": dict(Counter(fate.value for fate in expected.values())),
        "executions": {"started": len(executions), "messages_handed_over": handed_over, DUPLICATE: duplicates},
        "errors": dict(Counter(f.error for f in ledger.fates.values() if f.error)),
        "alerts": len(aws.notifications()),
        "retries": len(aws.clock.waits),  # Retry waits the workflows took (each a billed transition)
        "mismatches": mismatches,
        "index_holds_newest_versions": index == the_plan.newest(),
        "ledger_balanced": ledger.balanced,
        "balanced": balanced,
    }


_PLACES = {ProductFate.INDEXED.value, ProductFate.SUPERSEDED.value, ProductFate.INVALID.value, SOURCE_DLQ}


def render(console: Console, result: dict[str, Any]) -> None:
    """The catalog example's outcome table and its balances."""
    opts = result["options"]
    console.print()
    console.rule(
        f"Catalog example ({result['stack']}): {result['messages_in']} product messages, "
        f"chaos={opts['chaos']}, seed={opts['seed']}, {result['elapsed_seconds']} s"
    )
    table = Table(title="Where every product message ended (measured in the index and the DLQs; planned)")
    for column in ("outcome", "messages", "planned"):
        table.add_column(column)
    for outcome in [*[fate.value for fate in ProductFate], *sorted(set(result["outcomes"]) - _ORDERED)]:
        table.add_row(outcome, str(result["outcomes"].get(outcome, 0)), str(result["expected"].get(outcome, 0)))
    runs = result["executions"]
    table.add_row(DUPLICATE, f"({runs[DUPLICATE]} executions)", "-")
    console.print(table)
    console.print(
        f"Messages: {result['messages_in']} in = "
        + " + ".join(f"{count} {outcome}" for outcome, count in result["outcomes"].items())
    )
    console.print(
        f"Executions: {runs['started']} started = {runs['messages_handed_over']} messages handed over + "
        f"{runs[DUPLICATE]} duplicate deliveries; alerts published: {result['alerts']}; failures by error: "
        f"{result['errors'] or 'none'}"
    )
    if result.get("faults_fired"):
        console.print(
            f"Chaos: {sum(result['faults_fired'].values())} injected faults struck "
            f"({', '.join(f'{n} x {what}' for what, n in result['faults_fired'].items() if n)}); "
            f"the workflows retried {result['retries']} times."
        )
    verdict = "[green]BALANCED[/green]" if result["balanced"] else "[red]NOT BALANCED[/red]"
    console.print(
        f"Catalog conservation: {len(result['mismatches'])} messages off plan, index holds the newest "
        f"version of every product: {result['index_holds_newest_versions']}, every failure announced "
        f"once and each message in one place: {result['ledger_balanced']} -> {verdict}"
    )


_ORDERED = {fate.value for fate in ProductFate}
