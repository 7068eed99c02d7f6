"""What both compensations share: find the attempt to undo, and turn hard failures into CompensationFailed."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from common.errors import CompensationFailed, TransientError
from common.observability import correlate, count, logger
from common.records import order_id_of, sqs_record


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


def attempt_to_undo(event: Mapping[str, Any]) -> tuple[str | None, str]:
    """(orderId or None, attemptId) from the raw SQS record the compensation receives.

    None as orderId: the body never named an order, so that attempt cannot have reserved or charged anything.
    """
    record = sqs_record(event)
    order_id = order_id_of(record.body)
    correlate(order_id=order_id, message_id=record.message_id)
    return order_id, record.message_id
