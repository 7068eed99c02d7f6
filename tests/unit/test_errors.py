"""The single transient-error mapping: codes and exception types, never message text."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError, ConnectTimeoutError, EndpointConnectionError, ReadTimeoutError

from common.errors import (
    CompensationFailed,
    DuplicateDelivery,
    InvalidOrder,
    OutOfStock,
    PaymentDeclined,
    ShippingUnavailable,
    TransientError,
    aws_errors_as_transient,
    is_transient,
)


def client_error(code: str, status: int = 400, reasons: list[dict[str, str]] | None = None) -> ClientError:
    response = {"Error": {"Code": code, "Message": "Rate exceeded"}, "ResponseMetadata": {"HTTPStatusCode": status}}
    if reasons is not None:
        response["CancellationReasons"] = reasons
    return ClientError(response, "TransactWriteItems")  # type: ignore[arg-type]


def test_error_class_names_are_the_names_the_state_machine_matches() -> None:
    names = [cls.__name__ for cls in (InvalidOrder, OutOfStock, PaymentDeclined, ShippingUnavailable)]
    names += [cls.__name__ for cls in (DuplicateDelivery, TransientError, CompensationFailed)]
    assert names == [
        "InvalidOrder",
        "OutOfStock",
        "PaymentDeclined",
        "ShippingUnavailable",
        "DuplicateDelivery",
        "TransientError",
        "CompensationFailed",
    ]


@pytest.mark.parametrize(
    "error",
    [
        client_error("ThrottlingException"),
        client_error("ProvisionedThroughputExceededException"),
        client_error("RequestLimitExceeded"),
        client_error("InternalServerError", 500),
        client_error("SomethingNew", 503),
        client_error("TransactionCanceledException", reasons=[{"Code": "None"}, {"Code": "TransactionConflict"}]),
        EndpointConnectionError(endpoint_url="https://dynamodb.us-east-1.amazonaws.com"),
        ConnectTimeoutError(endpoint_url="https://dynamodb.us-east-1.amazonaws.com"),
        ReadTimeoutError(endpoint_url="https://dynamodb.us-east-1.amazonaws.com"),
    ],
)
def test_transient_failures_are_recognised(error: Exception) -> None:
    assert is_transient(error)
    with pytest.raises(TransientError) as raised, aws_errors_as_transient("testing"):
        raise error
    assert raised.value.__cause__ is error


@pytest.mark.parametrize(
    "error",
    [
        client_error("ConditionalCheckFailedException"),
        client_error("ValidationException"),
        client_error("AccessDeniedException"),
        client_error("ResourceNotFoundException"),
        # A failed condition decides the outcome even when another action only conflicted.
        client_error(
            "TransactionCanceledException",
            reasons=[{"Code": "ConditionalCheckFailed"}, {"Code": "TransactionConflict"}],
        ),
        ValueError("Throttling"),  # message text never counts
    ],
)
def test_other_failures_pass_through_unchanged(error: Exception) -> None:
    assert not is_transient(error)
    with pytest.raises(type(error)) as raised, aws_errors_as_transient("testing"):
        raise error
    assert raised.value is error


def test_out_of_stock_names_the_sku() -> None:
    assert "SKU-RED-MUG" in str(OutOfStock("SKU-RED-MUG", 3))
