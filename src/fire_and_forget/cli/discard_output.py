"""What `ff-ops failures discard` prints: one line per record and a summary, or
`ff-ops/failures-discard/v1`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console

from fire_and_forget.cli.discard import LOG_SCHEMA, DiscardReport, DiscardVerdict

SCHEMA = "ff-ops/failures-discard/v1"
_KEYS = {
    DiscardVerdict.DISCARDED: "discarded",
    DiscardVerdict.WOULD_DISCARD: "wouldDiscard",
    DiscardVerdict.DECLINED: "declined",
    DiscardVerdict.DELETE_FAILED: "deleteFailed",
}


def document(stack: str, result: DiscardReport, log: Path | None,
             audit: dict[str, Any] | None = None) -> dict[str, Any]:
    """`audit` is the guard's block (fire_and_forget/cli/guard.py): where the audit lines went, how many."""
    return {
        "schema": SCHEMA,
        "stack": stack,
        "keyField": result.key_field,
        "dryRun": result.dry_run,
        "read": result.read,
        "log": str(log) if log is not None else "stderr",
        "logSchema": LOG_SCHEMA,
        "complete": result.complete,
        "summary": {key: result.count(verdict) for verdict, key in _KEYS.items()},
        "items": [
            {
                "messageId": o.message_id,
                "key": o.key,
                "error": o.error,
                "action": o.verdict.value,
                "reason": o.reason,
                "copies": list(o.copies),
            }
            for o in result.outcomes
        ],
        "audit": audit,
    }


def render(console: Console, result: DiscardReport, log: Path | None) -> None:
    for o in result.outcomes:
        reason = f" ({o.reason})" if o.reason else ""
        copies = f" (+{len(o.copies)} record(s) of the same execution)" if o.copies else ""
        console.print(f"{o.verdict.value:>14}  {o.key or o.message_id}  {o.error}{copies}{reason}", highlight=False)
    counts = ", ".join(f"{v.value} {result.count(v)}" for v in DiscardVerdict if result.count(v))
    prefix = "Dry run: nothing deleted. " if result.dry_run else ""
    console.print(f"{prefix}Read {result.read} messages; {counts or 'nothing selected'}.", highlight=False)
    if result.count(DiscardVerdict.DISCARDED):
        console.print(
            f"Each discarded record was written to {log or 'stderr'} first ({LOG_SCHEMA} JSON lines); "
            "every other message was made visible again.",
            highlight=False,
        )
