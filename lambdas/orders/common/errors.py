"""Typed saga errors: each class name is the error name the state machine matches; nothing matches on text."""

from __future__ import annotations

# The pipeline's own errors and AWS-failure classification, re-exported: the saga's modules import them from here.
from fire_and_forget.runtime.errors import (
    TRANSIENT_CANCELLATION_CODES,
    TRANSIENT_ERROR_CODES,
    DuplicateDelivery,
    TransientError,
    aws_errors_as_transient,
    cancellation_reasons,
    error_code,
    is_transient,
    transient_from,
)

__all__ = [
    "TRANSIENT_CANCELLATION_CODES", "TRANSIENT_ERROR_CODES", "CompensationFailed", "DuplicateDelivery",
    "DuplicateOrder", "InvalidOrder", "OrderConflict", "OutOfStock", "PaymentDeclined", "SagaError",
    "ShippingUnavailable", "TransientError", "aws_errors_as_transient", "cancellation_reasons", "error_code",
    "is_transient", "transient_from",
]


class SagaError(Exception):
    """Base class; Lambda reports ``type(exc).__name__`` as errorType, which is what the ASL matches."""


class InvalidOrder(SagaError):
    """The order message cannot be processed as sent; retrying cannot help."""


class OutOfStock(SagaError):
    """An item of the order lacks stock; the message names the sku."""

    def __init__(self, sku: str, requested: int) -> None:
        super().__init__(f"sku {sku!r} has fewer than {requested} units available")
        self.sku = sku
        self.requested = requested


class PaymentDeclined(SagaError):
    """The payment provider refused the charge by one of the documented decline rules."""


class ShippingUnavailable(SagaError):
    """No carrier serves the destination."""


class DuplicateOrder(SagaError):
    """Another attempt (an earlier message with the same body) owns this order and is in flight or has completed it;
    the ASL ends this execution quietly, like a duplicate delivery: the owning attempt decides and announces."""


class OrderConflict(SagaError):
    """The orderId is known with a different body: a conflicting resend is refused, never merged or retried."""


class CompensationFailed(SagaError):
    """An undo step hit a non-transient failure; after retries the ASL asks for manual repair."""


