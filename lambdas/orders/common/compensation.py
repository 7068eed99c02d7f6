"""What every compensation shares: find the attempt, check it owns the order, undo it once, turn hard failures into
CompensationFailed."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NamedTuple

from common.errors import CompensationFailed, InvalidOrder, TransientError
from common.idempotency import StepKey, run_once
from common.observability import correlate, count, logger
from common.order_ledger import DynamoDBOrderLedger, OrderEntry
from common.records import order_id_of, sqs_record
from common.settings import IdempotencySettings

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext


class Compensation(NamedTuple):
    """One compensation: its step name, its two outcomes, the metric it counts, and how to log what it undid."""

    step: str
    done: str  # e.g. REFUNDED
    nothing: str  # e.g. NOTHING_TO_REFUND
    metric: str
    describe: Callable[[Any], dict[str, Any]]


def compensate(
    event: Mapping[str, Any],
    context: LambdaContext,
    compensation: Compensation,
    *,
    idempotency: IdempotencySettings,
    ledger: DynamoDBOrderLedger,
    undo: Callable[[OrderEntry], Any | None],
) -> dict[str, str]:
    """Undo this saga attempt's effect once, and only if this execution owns the order in the ledger
    (`undo(entry)` returns what it undid, or None when there was nothing of this attempt to undo).
    Returns {"status": done | nothing}; raises TransientError or CompensationFailed."""
    with undo_or_fail(compensation.step):
        order_id, attempt_id, execution_arn = attempt_to_undo(event)
        if order_id is None:
            logger.info("body names no order; this attempt cannot have done anything to undo")
            return {"status": compensation.nothing}

        def undo_once() -> dict[str, str]:
            entry = ledger.find(order_id)
            # Not the owner (a duplicate execution that died before its claim, a refused conflict, a later copy):
            # it did nothing, and the effects under this messageId, if any, belong to the execution that owns them.
            if entry is None or not entry.owned_by(attempt_id, execution_arn):
                logger.info(f"this execution does not own the order; nothing to undo ({compensation.step})",
                            extra={"ownedBy": entry and entry.attempt_id})
                return {"status": compensation.nothing}
            undone = undo(entry)
            if undone is None:
                logger.info(f"nothing of this attempt to undo ({compensation.step})")
                return {"status": compensation.nothing}
            count(compensation.metric)
            logger.info(f"{compensation.step} done", extra=compensation.describe(undone))
            return {"status": compensation.done}

        # The execution is part of the key: a duplicate execution's "nothing" must not be replayed to the owner.
        key = StepKey(order_id, compensation.step, f"{attempt_id}@{execution_arn}")
        return run_once(key, undo_once, settings=idempotency, context=context)


@contextmanager
def undo_or_fail(action: str) -> Iterator[None]:
    """Let TransientError through (the ASL retries it); any other failure means a person must repair."""
    try:
        yield
    except (TransientError, CompensationFailed):
        raise
    except Exception as error:
        count("CompensationsFailed")
        logger.exception(f"{action} could not complete")
        raise CompensationFailed(f"{action} could not complete: {type(error).__name__}: {error}") from error


def attempt_to_undo(event: Mapping[str, Any]) -> tuple[str | None, str, str]:
    """(orderId or None, attemptId, executionArn) from the compensation's input: the raw SQS record and the
    execution that runs it.

    None as orderId: the body never named an order, so that attempt cannot have reserved or charged anything.
    """
    record = sqs_record(event)
    order_id = order_id_of(record.body)
    correlate(order_id=order_id, message_id=record.message_id)
    execution_arn = event.get("executionArn")
    if not isinstance(execution_arn, str) or not execution_arn:
        # Without it, ownership cannot be checked: undoing blindly could undo another execution's work.
        raise InvalidOrder("task input has no executionArn; the state machine must pass $$.Execution.Id")
    return order_id, record.message_id, execution_arn
