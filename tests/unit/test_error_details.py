"""The runtime's error helpers on responses botocore can hand back incomplete: no ResponseMetadata, no Error, no
Code, a CancellationReasons that is not a list; the 5xx boundary; and the TransientError's text and cause."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError

from fire_and_forget.runtime.errors import (
    TransientError,
    cancellation_reasons,
    error_code,
    is_transient,
    transient_from,
)


def _error(response: dict[str, Any], operation: str = "PutItem") -> ClientError:
    return ClientError(response, operation)  # type: ignore[arg-type]


def test_a_5xx_is_transient_from_500_on_whatever_its_code() -> None:
    assert is_transient(_error({"Error": {"Code": "SomethingNew"}, "ResponseMetadata": {"HTTPStatusCode": 500}}))
    assert not is_transient(_error({"Error": {"Code": "SomethingNew"}, "ResponseMetadata": {"HTTPStatusCode": 499}}))


def test_a_response_without_metadata_is_judged_by_its_code_alone() -> None:
    assert is_transient(_error({"Error": {"Code": "ThrottlingException"}}))
    assert not is_transient(_error({"Error": {"Code": "ValidationException"}}))


def test_the_code_of_an_error_without_one_is_empty() -> None:
    assert error_code(_error({"Error": {"Code": "Throttling"}})) == "Throttling"
    assert error_code(_error({"Error": {"Message": "no code"}})) == ""
    assert error_code(_error({})) == ""


def test_a_transient_error_names_the_action_and_the_code_and_keeps_the_aws_error_as_its_cause() -> None:
    cause = _error({"Error": {"Code": "ThrottlingException"}})
    transient = transient_from(cause, "the idempotency store")
    assert isinstance(transient, TransientError)
    assert str(transient) == "the idempotency store failed transiently (ThrottlingException); safe to retry"
    assert transient.__cause__ is cause  # set by transient_from itself, not only by a `raise ... from`


@pytest.mark.parametrize(("error", "detail"), [
    (_error({"Error": {"Message": "no code"}}), "ClientError"),
    (_error({}), "ClientError"),
    (EndpointConnectionError(endpoint_url="https://sqs.us-east-1.amazonaws.com"), "EndpointConnectionError"),
], ids=["client error without a code", "client error without an error", "connection error"])
def test_without_a_code_the_transient_error_names_the_exception_type(error: Exception, detail: str) -> None:
    assert str(transient_from(error, "send")) == f"send failed transiently ({detail}); safe to retry"


def test_cancellation_reasons_that_are_not_a_list_read_as_none() -> None:
    listed = _error({"Error": {"Code": "TransactionCanceledException"},
                     "CancellationReasons": [{"Code": "None"}, "junk", {"Code": "TransactionConflict"}]})
    assert cancellation_reasons(listed) == [{"Code": "None"}, {"Code": "TransactionConflict"}]
    for malformed in (None, 5, {"Code": "TransactionConflict"}):
        error = _error({"Error": {"Code": "TransactionCanceledException"}, "CancellationReasons": malformed})
        assert cancellation_reasons(error) == []
        assert not is_transient(error)
