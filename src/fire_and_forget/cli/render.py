"""What an operator reads: rich tables and one-line summaries (the --json documents are in
fire_and_forget/cli/report.py)."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from rich.console import Console
from rich.table import Table

from fire_and_forget.cli.executions import ExecutionOutcome, RedriveVerdict
from fire_and_forget.cli.failures import FailureListing
from fire_and_forget.cli.healing import Waiting
from fire_and_forget.cli.healing_status import PERSON_DISPOSITIONS, HealingStatus
from fire_and_forget.cli.source_dlq import MoveResult, MoveTask
from fire_and_forget.cli.status import StackStatus
from fire_and_forget.runtime.records import FailureRecord
from fire_and_forget.runtime.redrive import Action, Outcome, RedriveReport


def _when(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%SZ") if value is not None else "-"


def _short(text: str | None, width: int = 60) -> str:
    if not text:
        return "-"
    return text if len(text) <= width else text[: width - 1] + "…"


def cause_message(cause: str | None) -> str | None:
    """Lambda's cause is JSON ({"errorType", "errorMessage", ...}); its errorMessage is what a reader wants."""
    try:
        parsed = json.loads(cause or "")
    except ValueError:
        return cause
    message = parsed.get("errorMessage") if isinstance(parsed, dict) else None
    return message if isinstance(message, str) else cause


def failures_list(console: Console, listing: FailureListing, waiting: list[Waiting], now: datetime) -> None:
    """`waiting` holds what each of `listing.records` waits for, one for one (fire_and_forget/cli/healing.py)."""
    table = Table(title=f"Failure DLQ: {len(listing.records)} shown, {listing.read} read, "
                        f"~{listing.approximate_depth} in the queue")
    for column in (listing.key_field, "error", "failed state", "failed at", "repair", "waiting for", "cause"):
        # The key and what a record waits for are what an operator scans for: never squeezed into an ellipsis.
        keep = len(column) if column in (listing.key_field, "waiting for") else None
        table.add_column(column, no_wrap=column != "cause", min_width=keep)
    for r, w in zip(listing.records, waiting, strict=True):
        # A body without the key field (not a document the workflow understood) is labelled by its message id.
        table.add_row(r.key or f"message {r.source_message_id or r.message_id}", r.error, r.failed_state,
                      _when(r.failed_at),
                      "[bold red]YES[/]" if r.manual_repair else "no", "\n".join(w.short(now)),
                      _short(cause_message(r.cause), 60))
    console.print(table)
    if listing.truncated:
        console.print("[yellow]More messages than --limit: raise --limit to read them all.[/]")
    for r in listing.records:
        if r.copies:  # SQS standard queues do not deduplicate: one execution may have left two records
            console.print(f"{r.key or r.message_id}: {1 + len(r.copies)} records of one execution, shown once "
                          f"(redrive and discard act on all of them): {', '.join(r.message_ids)}")
    for m in listing.unrecognized:
        console.print(f"[yellow]Not a failure record[/] {m.message_id}: {m.reason}. Left in the queue untouched.")
    console.print("Every message read was made visible again.")


def failure_detail(console: Console, record: FailureRecord, key_field: str, waiting: Waiting, now: datetime) -> None:
    table = Table(show_header=False, title=f"Failure {record.message_id}")
    table.add_column(style="bold")
    table.add_column()
    rows = [
        (key_field, record.key or f"(none: the body has no {key_field}; see source message id)"),
        ("error", record.error), ("cause", cause_message(record.cause) or "-"), ("failed state", record.failed_state),
        ("failed at", _when(record.failed_at)), ("manual repair", "YES" if record.manual_repair else "no"),
        ("waiting for", waiting.describe(now)), ("automatic redrives", str(waiting.attempt)),
        ("compensation", readable(record.compensation)), ("execution", record.execution_arn or "-"),
        ("source message id", record.source_message_id or "-"), ("body", record.body),
        ("message attributes", attributes(record.message_attributes)),
    ]
    if record.reconciliation is not None:  # the Reconciler wrote it: how the execution ended, what it undid
        rows.append(("reconciliation", readable(record.reconciliation)))
    if record.copies:
        rows.append(("same execution", f"{len(record.copies)} more record(s), one failure: {', '.join(record.copies)}"))
    for name, value in rows:
        table.add_row(name, value)
    console.print(table)


def readable(value: Any, indent: str = "") -> str:
    """A recorded JSON value as a person reads it: `name: value` lines, yes/no, none; never a Python repr."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None or value == {} or value == []:
        return "-"
    if isinstance(value, dict):
        return "\n".join(f"{indent}{key}: {readable(item, indent + '  ')}" if not isinstance(item, dict)
                         else f"{indent}{key}:\n{readable(item, indent + '  ')}" for key, item in value.items())
    if isinstance(value, list):
        return ", ".join(readable(item) for item in value)
    return str(value)


def attributes(message_attributes: dict[str, Any]) -> str:
    """SQS message attributes as `name = value (DataType)`, one a line (binary values by their size)."""
    lines = []
    for name, attribute in message_attributes.items():
        if not isinstance(attribute, dict):
            lines.append(f"{name} = {readable(attribute)}")
            continue
        data_type = attribute.get("dataType") or attribute.get("DataType") or "String"
        text = attribute.get("stringValue") or attribute.get("StringValue")
        binary = attribute.get("binaryValue") or attribute.get("BinaryValue")
        shown = text if text is not None else (f"<{len(binary)} base64 characters>" if binary else "(empty)")
        lines.append(f"{name} = {shown} ({data_type})")
    return "\n".join(lines) or "-"


def redrive_progress(console: Console, outcome: Outcome) -> None:
    label = outcome.key or outcome.message_id
    detail = f" -> {outcome.new_message_id}" if outcome.new_message_id else ""
    reason = f" ({outcome.reason})" if outcome.reason else ""
    console.print(f"{outcome.action.value:>22}  {label}  {outcome.error or ''}{detail}{reason}")


def redrive_summary(console: Console, report: RedriveReport) -> None:
    counts = ", ".join(f"{action.value} {report.count(action)}" for action in Action if report.count(action))
    prefix = "Dry run: nothing sent or deleted. " if report.dry_run else ""
    console.print(f"{prefix}Read {report.read} messages; {counts or 'nothing selected'}.")
    if report.count(Action.REFUSED_MANUAL_REPAIR):
        console.print("[yellow]Messages needing manual repair were left in the DLQ: repair them, then use --force.[/]")
    if report.count(Action.SENT_NOT_DELETED):
        console.print("[yellow]Some messages were sent but stay in the DLQ: a later redrive duplicates them, "
                      "which the handlers absorb.[/]")


def move_progress(console: Console, task: MoveTask) -> None:
    total = f"/{task.to_move}" if task.to_move is not None else ""
    reason = f" ({task.failure_reason})" if task.failure_reason else ""
    console.print(f"move task {task.status}: {task.moved}{total} messages moved{reason}")


def move_summary(console: Console, result: MoveResult, dry_run: bool = False) -> None:
    if dry_run or result.declined:
        running = f"; a move task is running ({result.task.moved} moved so far)" if result.task else ""
        console.print(f"{'Declined' if result.declined else 'Dry run'}: nothing moved; "
                      f"{len(result.listed)} messages listed{running}.")
        return
    if result.task is None:
        console.print("The source DLQ is empty: nothing to move.")
        return
    how = "Started a move task" if result.started else "A move task was already running; followed it"
    console.print(f"{how}. Status {result.task.status}, {result.task.moved} messages moved.")
    if result.task.status == "RUNNING":
        console.print("The task goes on by itself; `ff-ops status` shows the queues.")


def executions_summary(console: Console, outcomes: list[ExecutionOutcome], dry_run: bool) -> None:
    table = Table(title=("Dry run: " if dry_run else "") + f"{len(outcomes)} unsuccessful executions")
    for column in ("execution", "status", "error", "stopped", "verdict", "reason"):
        table.add_column(column)
    for o in outcomes:
        table.add_row(o.execution_arn.rsplit(":", 1)[1], o.status, o.error or "-", _when(o.stop_date),
                      o.verdict.value, _short(o.reason, 50))
    console.print(table)
    counts = {v.value: sum(1 for o in outcomes if o.verdict is v) for v in RedriveVerdict}
    console.print(", ".join(f"{k} {n}" for k, n in counts.items() if n) or "Nothing to redrive.")


def status(console: Console, report: StackStatus) -> None:
    queues = Table(title=f"{report.stack} ({report.region})")
    for column in ("queue", "visible", "in flight", "delayed", "oldest (s)"):
        queues.add_column(column)
    for q in report.queues:
        age = f"{q.oldest_age_seconds:.0f}" if q.oldest_age_seconds is not None else "-"
        queues.add_row(q.label, str(q.visible), str(q.in_flight), str(q.delayed), age)
    console.print(queues)
    pipe = report.pipe
    colour = "green" if pipe.current_state == "RUNNING" else "red"
    reason = f" — {pipe.state_reason}" if pipe.state_reason else ""
    console.print(f"Pipe {pipe.name}: [{colour}]{pipe.current_state}[/] (desired {pipe.desired_state}){reason}")
    hours = report.window.total_seconds() / 3600
    counts = ", ".join(f"{status.lower().replace('_', ' ')} {n}" for status, n in report.counts.items())
    console.print(f"Executions in the last {hours:g} h: {counts}" + (" (at least)" if report.counts_truncated else ""))
    for e in report.recent:
        console.print(f"  {e.status:<9} {_when(e.stop_date)}  {e.name}", highlight=False)
    healing_status(console, report.healing, hours)


def healing_status(console: Console, healing: HealingStatus | None, hours: float) -> None:
    if healing is None:
        console.print("Self-healing: - (the stack has no HealingPolicy output: deployed before self-healing)")
        return
    more = " (at least: more records than status reads)" if healing.truncated else ""
    due = f", next due {_when(healing.next_due)}" if healing.next_due is not None else ""
    console.print(f"Failure DLQ: {healing.waiting_for_retry} waiting for an automatic retry{due}; "
                  f"{healing.needing_a_person} needing a person{more}", highlight=False)
    for disposition in PERSON_DISPOSITIONS:
        console.print(f"  {disposition.value:<18} {healing.dispositions[disposition]}", highlight=False)
    if healing.unrecognized:
        console.print(f"  [yellow]{healing.unrecognized} not a failure record[/] (`ff-ops failures list`)")
    healed = healing.healed
    if healed.service is None:
        console.print("Healed automatically: - (the stack has no PipelineName output)")
    else:
        console.print(f"Healed automatically in the last {hours:g} h: {healed.executions_reconciled} executions "
                      f"reconciled, {healed.failures_auto_redriven} failures redriven", highlight=False)
