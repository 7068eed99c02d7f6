"""What an operator reads: rich tables and one-line summaries (the --json documents are in
fire_and_forget/cli/report.py)."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from rich.cells import cell_len
from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from fire_and_forget.cli.executions import ExecutionOutcome, RedriveVerdict
from fire_and_forget.cli.failures import FailureListing
from fire_and_forget.cli.healing import Waiting
from fire_and_forget.cli.healing_status import PERSON_DISPOSITIONS, HealingStatus
from fire_and_forget.cli.source_dlq import MoveResult, MoveTask
from fire_and_forget.cli.status import StackStatus
from fire_and_forget.runtime.records import FailureRecord
from fire_and_forget.runtime.redrive import Action, Outcome, RedriveReport
from fire_and_forget.runtime.status import MessageStatus, State


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


# The narrowest cause column the failures table accepts; narrower, each record is a block of lines instead.
CAUSE_MIN_WIDTH = 24


def line(console: Console, *parts: str | tuple[str, str]) -> None:
    """One line that rich never breaks, its parts plain text (or (text, style)): the identifiers in it stay whole. A
    terminal narrower than the line wraps it for the eye only; copying it gives it back whole."""
    console.print(Text.assemble(*parts), soft_wrap=True, highlight=False)


def prose(console: Console, label: str, text: str, label_width: int, indent: int = 2) -> None:
    """A label and free text beside it, the text wrapped (a word longer than the width folded) under itself."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(width=label_width, no_wrap=True, style="bold")
    grid.add_column(overflow="fold")
    grid.add_row(label, Text(text))
    console.print(Padding(grid, (0, 0, 0, indent), expand=False))


def room(console: Console, widths: list[int]) -> int:
    """The columns a table of rich's default box, with columns this wide, leaves of the console's width (a rule and
    two padding characters per column, one more rule); negative when it does not fit."""
    return console.width - (sum(widths) + 3 * len(widths) + 1)


def _widest(header: str, cells: list[str]) -> int:
    return max(cell_len(text) for text in [header, *(part for cell in cells for part in cell.split("\n"))])


def failures_list(console: Console, listing: FailureListing, waiting: list[Waiting], now: datetime) -> None:
    """`waiting` holds what each of `listing.records` waits for, one for one (fire_and_forget/cli/healing.py). Every
    identifier (key, message id, error, state) is printed whole: in a table when one fits the console beside a
    readable cause, else one block per record."""
    shown = len(listing.records)
    of = f" of {listing.matching} matching" if listing.next_token else ""
    console.print(f"Failure DLQ: {shown} shown{of}, {listing.read} read, ~{listing.approximate_depth} in the queue",
                  highlight=False)
    rows = [
        {listing.key_field: r.key or "-", "message id": r.message_id, "error": r.error, "failed state": r.failed_state,
         "failed at": _when(r.failed_at), "repair": "YES" if r.manual_repair else "no",
         "waiting for": "\n".join(w.short(now)), "cause": cause_message(r.cause) or "-"}
        for r, w in zip(listing.records, waiting, strict=True)
    ]
    headers = [listing.key_field, "message id", "error", "failed state", "failed at", "repair", "waiting for"]
    widths = [_widest(h, [row[h] for row in rows]) for h in headers]
    cause_width = room(console, [*widths, 0])
    if cause_width >= CAUSE_MIN_WIDTH:
        table = Table()
        for header, width in zip(headers, widths, strict=True):
            table.add_column(header, no_wrap=True, width=width)
        table.add_column("cause", overflow="fold", width=min(cause_width, _widest("cause", [r["cause"] for r in rows])))
        for row in rows:
            table.add_row(*(Text(row[h], style="bold red" if h == "repair" and row[h] == "YES" else "")
                            for h in [*headers, "cause"]))
        console.print(table)
    else:
        for r, w in zip(listing.records, waiting, strict=True):
            _failure_block(console, r, listing.key_field, w, now)
    _listing_notes(console, listing)


def _failure_block(console: Console, r: FailureRecord, key_field: str, waiting: Waiting, now: datetime) -> None:
    console.print()
    line(console, (f"{key_field} {r.key or '-'}", "bold"), "  message ", r.message_id)
    line(console, "  ", r.error, " in ", r.failed_state, f" at {_when(r.failed_at)}")
    line(console, "  waiting for ", waiting.describe(now),
         *([("  needs manual repair", "bold red")] if r.manual_repair else []))
    prose(console, "cause", cause_message(r.cause) or "-", len("cause"))


def _listing_notes(console: Console, listing: FailureListing) -> None:
    if listing.truncated:
        console.print("[yellow]More messages than --limit: raise --limit to read them all.[/]")
    for r in listing.records:
        if r.copies:  # SQS standard queues do not deduplicate: one execution may have left two records
            line(console, f"{r.key or r.message_id}: {1 + len(r.copies)} records of one execution, shown once "
                          f"(redrive and discard act on all of them): {', '.join(r.message_ids)}")
    for m in listing.unrecognized:
        line(console, ("Not a failure record", "yellow"), f" {m.message_id}: {m.reason}. Left in the queue untouched.")
    if listing.next_token:
        console.print(f"{listing.matching - len(listing.records)} more match: for the next page, run the same command "
                      "with", highlight=False)
        line(console, "  --starting-token ", listing.next_token)
    console.print("Every message read was made visible again.")


def failure_detail(console: Console, record: FailureRecord, key_field: str, waiting: Waiting, now: datetime) -> None:
    """Identifiers on lines of their own, never broken; free text (cause, body, ...) wrapped beside its label."""
    identifiers = [
        (key_field, record.key or f"(none: the body has no {key_field}; see source message id)"),
        ("error", record.error), ("failed state", record.failed_state), ("failed at", _when(record.failed_at)),
        ("manual repair", "YES" if record.manual_repair else "no"), ("waiting for", waiting.describe(now)),
        ("automatic redrives", str(waiting.attempt)), ("execution", record.execution_arn or "-"),
        ("source message id", record.source_message_id or "-"),
    ]
    if record.copies:
        identifiers.append(("same execution", ", ".join(record.copies)))
    texts = [("cause", cause_message(record.cause) or "-"), ("compensation", readable(record.compensation)),
             ("body", record.body), ("message attributes", attributes(record.message_attributes))]
    if record.reconciliation is not None:  # the Reconciler wrote it: how the execution ended, what it undid
        texts.append(("reconciliation", readable(record.reconciliation)))
    width = max(len(label) for label, _ in identifiers + texts)
    line(console, ("Failure ", "bold"), (record.message_id, "bold"))
    for label, value in identifiers:
        line(console, "  ", (label.ljust(width), "bold"), "  ", value)
    if record.copies:
        console.print(f"  {'':<{width}}  ({len(record.copies)} more record(s) of the same execution: one failure)",
                      highlight=False)
    for label, value in texts:
        prose(console, label, value, width)


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
    """One unbroken line per record: its key and message id (two records of one key differ by the id), its error."""
    label = f"{outcome.key}  {outcome.message_id}" if outcome.key else outcome.message_id
    detail = f" -> {outcome.new_message_id}" if outcome.new_message_id else ""
    reason = f" ({outcome.reason})" if outcome.reason else ""
    line(console, f"{outcome.action.value:>22}  {label}  {outcome.error or ''}{detail}{reason}")


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
        queues.add_column(column, no_wrap=True)
    for q in report.queues:
        age = f"{q.oldest_age_seconds:.0f}" if q.oldest_age_seconds is not None else "-"
        queues.add_row(q.label, str(q.visible), str(q.in_flight), str(q.delayed), age)
    console.print(queues)
    pipe = report.pipe
    reason = f" — {pipe.state_reason}" if pipe.state_reason else ""
    colour = "green" if pipe.current_state == "RUNNING" else "red"
    line(console, f"Pipe {pipe.name}: ", (str(pipe.current_state), colour), f" (desired {pipe.desired_state}){reason}")
    hours = report.window.total_seconds() / 3600
    counts = ", ".join(f"{status.lower().replace('_', ' ')} {n}" for status, n in report.counts.items())
    source = " (CloudWatch metrics: Express executions cannot be listed)" if report.counted_from == "metrics" else ""
    console.print(f"Executions in the last {hours:g} h{source}: {counts}"
                  + (" (at least)" if report.counts_truncated else ""), highlight=False)
    keys = [e.key or "-" for e in report.recent]
    width = max([len(report.key_field), *(len(k) for k in keys)])
    if report.recent:
        line(console, (f"  {'status':<9} {'stopped':<20}  {report.key_field:<{width}}  execution", "bold"))
    for e, key in zip(report.recent, keys, strict=True):
        line(console, f"  {e.status:<9} {_when(e.stop_date):<20}  {key:<{width}}  {e.name}")
    if report.invocation_type == "REQUEST_RESPONSE":
        console.print("Self-healing: none in REQUEST_RESPONSE: a failed message returns after the source queue's "
                      "visibility timeout, and after its last receive waits in the source DLQ", highlight=False)
        return
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


def message_status(out: Console, status: MessageStatus) -> None:
    """`ff-ops message`: one line of where the message stands, then what the row says of it."""
    headline = {State.UNKNOWN: "unknown: no row (not received yet, or past the rows' expiry)",
                State.ACCEPTED: "accepted: an execution owns it, no step has reported yet",
                State.IN_PROGRESS: f"in progress: {status.stage}",
                State.SUCCEEDED: "succeeded" + (f" ({status.stage})" if status.stage else ""),
                State.ABSORBED: f"absorbed: message {status.absorbed_by} carries the same work",
                State.FAILED: f"failed in {status.failed_state or '?'}: {status.error or '?'}"}[status.state]
    if status.state is State.FAILED:
        headline += {True: "; an automatic redrive follows", False: "; nothing more happens without a person",
                     None: ""}[status.retry]
    out.print(f"{status.message_id}  {headline}", soft_wrap=True, highlight=False)
    if status.attempt_message_id not in (None, status.message_id):
        out.print(f"  redriven {status.attempts} time(s); the latest attempt is message {status.attempt_message_id}",
                  soft_wrap=True, highlight=False)
    if status.execution_arn:
        out.print(f"  execution {status.execution_arn}", soft_wrap=True, highlight=False)
