"""The row of the demo's outcome tables a caller's message belongs to, from where the accounting found it."""

from __future__ import annotations

from fire_and_forget.rehearsal import Place

HEALED = "healed: succeeded after an automatic redrive"
RETRIES_SPENT = "transient, automatic redrives spent, in failure DLQ"


def outcome_of(place: Place, manual_repair: bool, redrives: int = 0) -> str:
    """The outcome of one caller message; `redrives`: the automatic redrives its last copy had."""
    if manual_repair:
        return "needs manual repair"
    if redrives and place is Place.SUCCEEDED:
        return HEALED
    if redrives and place is Place.FAILURE_DLQ:
        return RETRIES_SPENT
    return {
        Place.SUCCEEDED: "succeeded",
        Place.FAILURE_DLQ: "failed, compensated, in failure DLQ",
        Place.WAITING: "failed, compensated, waiting for an automatic retry",
        Place.SOURCE_DLQ: "never handed over, in source DLQ",
        Place.EXECUTION: "failed execution, input kept",
        Place.NOWHERE: "UNACCOUNTED",
    }.get(place, place.value)  # a place added to the ledger later shows under its own name
