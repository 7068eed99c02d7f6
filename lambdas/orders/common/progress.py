"""How far an order went, told to its caller on its message's row (fire_and_forget.runtime.status): each step reports
its stage once its work is done, ArrangeShipping the last with `done`. The pipeline lets the reporting steps write the
row and gives them DELIVERIES_TABLE_NAME (the stack's `reports_progress`)."""

from __future__ import annotations

from common import aws
from common.observability import logger
from fire_and_forget.runtime.status import AttemptProgress

RESERVED = "reserved"
CHARGED = "charged"
AWAITING_CARRIER = "awaiting carrier"
SHIPPED = "shipped"


def report(table: str | None, *, message_id: str, execution_arn: str, stage: str, done: bool = False) -> None:
    """Report `stage` for this attempt; a function deployed without the table (a workflow that does not report) says
    nothing. A refusal is not an error: the row is another attempt's, or its outcome is recorded already."""
    if table is None:
        return
    progress = AttemptProgress(aws.dynamodb(), table, message_id, execution_arn)
    if not progress.mark(stage, done=done):
        logger.info("progress not reported: the message's row is no longer this attempt's", extra={"stage": stage})


def absorbed(table: str | None, *, message_id: str, execution_arn: str, owner_message_id: str) -> None:
    """This message's work is another message's (a producer's resend of an order already taken)."""
    if table is not None:
        AttemptProgress(aws.dynamodb(), table, message_id, execution_arn).absorbed(owner_message_id)
