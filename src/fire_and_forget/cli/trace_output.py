"""What `ff-ops trace` prints: a readable account, or the `ff-ops/trace/v1` JSON document
(docs/operator-cli.md)."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

from fire_and_forget.cli.render import cause_message, line, prose, room
from fire_and_forget.cli.report import json_time
from fire_and_forget.cli.trace import Match, Trace, TracedExecution, Whereabouts
from fire_and_forget.cli.trace_history import StateVisit

SCHEMA = "ff-ops/trace/v1"
_NEXT = {
    Whereabouts.FAILURE_DLQ: "ff-ops failures show {key}, then `failures redrive` or `failures discard`",
    Whereabouts.SOURCE_DLQ: "ff-ops source-dlq redrive, once the cause is fixed",
    Whereabouts.FAILED_EXECUTION: "ff-ops executions redrive --execution-arn {arn}",
    Whereabouts.RUNNING: "wait, then trace it again",
}


def execution_url(region: str, arn: str) -> str:
    return f"https://{region}.console.aws.amazon.com/states/home?region={region}#/v2/executions/details/{arn}"


def queue_url(region: str, url: str) -> str:
    return f"https://{region}.console.aws.amazon.com/sqs/v3/home?region={region}#/queues/{quote(url, safe='')}"


def _visit(visit: StateVisit) -> dict[str, Any]:
    return {
        "state": visit.name,
        "enteredAt": json_time(visit.entered_at),
        "attempts": visit.attempts,
        "retries": visit.retries,
        "errors": list(visit.errors),
        "outcome": visit.outcome,
    }


def _alert(visit: StateVisit) -> dict[str, Any]:
    output = visit.output if isinstance(visit.output, dict) else {}
    return {"state": visit.name, "outcome": visit.outcome, "snsMessageId": output.get("MessageId")}


def _execution(region: str, e: TracedExecution) -> dict[str, Any]:
    return {
        "executionArn": e.arn,
        "name": e.name,
        "status": e.status,
        "startDate": json_time(e.start_date),
        "stopDate": json_time(e.stop_date),
        "messageId": e.message_id,
        "key": e.key,
        "error": e.error,
        "cause": e.cause,
        "retries": e.retries,
        "duplicate": e.duplicate,
        "states": [_visit(v) for v in e.visits],
        "compensations": [_visit(v) for v in e.compensations],
        "alerts": [_alert(v) for v in e.alerts],
        "consoleUrl": execution_url(region, e.arn),
    }


def document(stack: str, failure_dlq_url: str, t: Trace) -> dict[str, Any]:
    """Stable keys, null when unknown; `where[].place` takes the values of fire_and_forget.cli.trace.Whereabouts."""
    return {
        "schema": SCHEMA,
        "stack": stack,
        "keyField": t.key_field,
        "query": t.query,
        "matched": t.matched.value,
        "key": t.key,
        "messageIds": t.message_ids,
        "where": [
            {
                "place": loc.place.value,
                "messageId": loc.message_id,
                "detail": loc.detail,
                "executionArn": loc.execution_arn,
                "dlqMessageId": loc.dlq_message_id,
            }
            for loc in t.where
        ],
        "executions": [_execution(t.region, e) for e in t.executions],
        "failureRecords": [
            {
                "messageId": r.message_id,
                "sourceMessageId": r.source_message_id,
                "error": r.error,
                "failedState": r.failed_state,
                "failedAt": json_time(r.failed_at),
                "manualRepair": r.manual_repair,
                "compensation": r.compensation,
                "executionArn": r.execution_arn,
            }
            for r in t.failure_records
        ],
        "sourceDlqMessageIds": t.source_dlq_message_ids,
        "sourceQueue": {"visible": t.source_queue_depth[0], "inFlight": t.source_queue_depth[1]},
        "scan": {"executionsScanned": t.scanned, "maxExecutions": t.max_executions, "truncated": t.truncated},
        "failureDlqConsoleUrl": queue_url(t.region, failure_dlq_url),
    }


_MATCHED = {
    Match.KEY: "the key",
    Match.MESSAGE_ID: "an SQS message id",
    Match.DLQ_MESSAGE_ID: "a failure-DLQ message id",
    Match.EXECUTION_ARN: "an execution ARN",
}


def render(console: Console, failure_dlq_url: str, t: Trace) -> None:
    """Identifiers, commands and links on lines rich never breaks (render.line); a state table when it fits whole."""
    title = f"{t.key_field} {t.key}" if t.key else f"message {t.query}"
    line(console, ("Trace of ", "bold"), (title, "bold"), f"  (matched {_MATCHED[t.matched]}: ", t.query, ")")
    line(console, "  messages: ", ", ".join(t.message_ids) or "-")
    console.print("[bold]Where it is now[/]")
    for loc in t.where:
        line(console, f"  {loc.place.value:<16} {loc.message_id or '-'}  {loc.detail}")
        hint = _NEXT.get(loc.place, "").format(key=t.key or loc.message_id, arn=loc.execution_arn)
        if hint:
            line(console, f"  {'':<16} next: ", hint)
    for e in t.executions:
        _render_execution(console, t.region, e)
    if t.failure_records:
        line(console, "Failure DLQ: ", queue_url(t.region, failure_dlq_url))
    bound = f"Scanned the newest {t.scanned} executions (at most {t.max_executions})"
    console.print(bound + ("; older ones exist and were not read: raise --max-executions." if t.truncated else "."))


def _render_execution(console: Console, region: str, e: TracedExecution) -> None:
    line(console, (f"{e.status} {e.name}", "bold italic"), f" ({json_time(e.start_date)})")
    rows = [(v.name, str(v.attempts) if v.attempts else "-", "\n".join(v.errors) or "-", v.outcome or "-")
            for v in e.visits]
    headers = ("state", "attempts", "errors", "outcome")
    widths = [max(cell_len(part) for part in [h, *(p for row in rows for p in row[i].split("\n"))])
              for i, h in enumerate(headers)]
    if room(console, widths) >= 0:
        table = Table()
        for header, width in zip(headers, widths, strict=True):
            table.add_column(header, no_wrap=True, width=width)
        for row in rows:
            table.add_row(*(Text(cell) for cell in row))
        console.print(table)
    else:  # a state or error name longer than a table can hold: one line per state
        for name, attempts, errors, outcome in rows:
            errors_on_one_line = errors.replace("\n", ", ")
            line(console, "  ", (name, "bold"), f"  attempts {attempts}  {outcome}  errors {errors_on_one_line}")
    if e.error:
        line(console, "  error: ", e.error)
        prose(console, "cause", cause_message(e.cause) or "-", len("cause"))
    for v in e.compensations:
        line(console, f"  compensation {v.name}: {v.outcome}" + (f" ({', '.join(v.errors)})" if v.errors else ""))
    for v in e.alerts:
        sent = _alert(v)["snsMessageId"]
        line(console, f"  alert published by {v.name}: {v.outcome}" + (f", SNS message {sent}" if sent else ""))
    if e.duplicate:
        console.print("  a duplicate delivery: this execution changed nothing", highlight=False)
    line(console, "  console: ", execution_url(region, e.arn))
