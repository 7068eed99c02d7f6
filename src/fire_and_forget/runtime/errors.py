"""Which AWS failures are worth a retry, and the one error name (TransientError) the workflow's Retry matches for
them; the error codes an operator tool stops on. Shipped into every task's code asset by the construct
(fire_and_forget/construct/code.py), so a handler imports it as `fire_and_forget.runtime.errors`."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from botocore.exceptions import ClientError, ConnectionError, HTTPClientError, ReadTimeoutError


class TransientError(Exception):
    """A throttle, 5xx, timeout or connection failure: the workflow retries it with backoff.

    Lambda reports ``type(exc).__name__`` as the errorType, which is what the workflow's Retry matches.
    """


class DuplicateDelivery(Exception):
    """Another execution already claimed this SQS messageId; the workflow ends this execution quietly."""


# Error codes DynamoDB (and AWS generally) uses for "try again later". ConditionalCheckFailed,
# ValidationException, AccessDenied and the like are deliberately absent: retrying them cannot succeed.
TRANSIENT_ERROR_CODES = frozenset(
    {
        "ThrottlingException",
        "Throttling",
        "ThrottledException",
        "RequestThrottled",
        "TooManyRequestsException",
        "ProvisionedThroughputExceededException",
        "RequestLimitExceeded",
        "LimitExceededException",
        "TransactionConflictException",
        "TransactionInProgressException",
        "InternalServerError",
        "InternalFailure",
        "ServiceUnavailable",
        "ServiceUnavailableException",
        "RequestTimeout",
        "RequestTimeoutException",
    }
)


# What an operator tool stops on at once (every other call would fail the same way) and how it tells the operator:
# the service is throttling it, or the caller may not do this.
THROTTLING_CODES = frozenset({
    "Throttling", "ThrottlingException", "ThrottledException", "RequestThrottled", "TooManyRequestsException",
    "RequestLimitExceeded", "RequestThrottledException", "SlowDown", "ProvisionedThroughputExceededException",
    "KmsThrottlingException", "KMS.ThrottlingException",
})
ACCESS_CODES = frozenset({
    "AccessDenied", "AccessDeniedException", "AuthorizationError", "UnauthorizedOperation", "NotAuthorized",
    "KmsAccessDeniedException", "KMS.AccessDeniedException", "KmsAccessDenied", "InvalidClientTokenId",
    "UnrecognizedClientException", "ExpiredToken", "ExpiredTokenException", "SignatureDoesNotMatch",
    "InvalidSecurity", "MissingAuthenticationToken",
})


# Per-item reasons inside a TransactionCanceledException that a retry can clear.
TRANSIENT_CANCELLATION_CODES = frozenset({"TransactionConflict", "ProvisionedThroughputExceeded", "ThrottlingError"})


def is_transient(error: BaseException) -> bool:
    """Whether an exception raised by boto3/botocore is worth retrying. The single place that decides."""
    if isinstance(error, ClientError):
        code = error_code(error)
        status = int(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
        if code == "TransactionCanceledException":
            reasons = {reason.get("Code", "None") for reason in cancellation_reasons(error)}
            # A failed condition decides the outcome (out of stock, already done); only pure contention retries.
            return bool(reasons & TRANSIENT_CANCELLATION_CODES) and "ConditionalCheckFailed" not in reasons
        return code in TRANSIENT_ERROR_CODES or status >= 500
    # ConnectionError covers EndpointConnectionError and ConnectTimeoutError; ReadTimeoutError is a
    # timeout after the request left; HTTPClientError covers the remaining urllib3-level failures.
    return isinstance(error, ConnectionError | ReadTimeoutError | HTTPClientError)


def transient_from(error: BaseException, action: str) -> TransientError:
    """A TransientError describing ``action`` that keeps the AWS error as its cause."""
    code = error.response.get("Error", {}).get("Code", "") if isinstance(error, ClientError) else ""
    detail = code or type(error).__name__
    transient = TransientError(f"{action} failed transiently ({detail}); safe to retry")
    transient.__cause__ = error
    return transient


@contextmanager
def aws_errors_as_transient(action: str) -> Iterator[None]:
    """Re-raise transient AWS failures inside the block as TransientError; everything else unchanged."""
    try:
        yield
    except (ClientError, ConnectionError, ReadTimeoutError, HTTPClientError) as error:
        if is_transient(error):
            raise transient_from(error, action) from error
        raise


def error_code(error: ClientError) -> str:
    """The AWS error code of a ClientError ('' when absent)."""
    return str(error.response.get("Error", {}).get("Code", ""))


def cancellation_reasons(error: ClientError) -> list[dict[str, Any]]:
    """The per-action reasons of a TransactionCanceledException, in the order of the transaction's actions."""
    response: dict[str, Any] = dict(error.response)
    reasons = response.get("CancellationReasons", [])
    return [dict(reason) for reason in reasons if isinstance(reason, dict)] if isinstance(reasons, list) else []
