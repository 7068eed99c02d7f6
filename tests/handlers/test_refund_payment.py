"""RefundPayment against moto: CHARGED -> REFUNDED once, by the attempt that charged; no-op otherwise."""

from __future__ import annotations

from typing import Any

import pytest

from common.errors import CompensationFailed, TransientError
from refund_payment.handler import handler
from tests.handlers.account import Account
from tests.handlers.saga import emitted_metrics, faults
from tests.handlers.steps import charged, reserved
from tests.support import events


def refund(lambda_context: Any, record: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = handler(events.compensation_input(record), lambda_context)
    return result


def test_refunds_the_charge_of_this_attempt(
    account: Account, lambda_context: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given the attempt charged the order before a later step failed
    record = events.sqs_record(events.order())
    charged(account, lambda_context, record)

    # When RefundPayment runs with the raw record
    assert refund(lambda_context, record) == {"status": "REFUNDED"}

    # Then the ledger row is REFUNDED
    charge = account.charge("ord-1001")
    assert charge is not None and charge["status"] == "REFUNDED" and "refundedAt" in charge
    assert emitted_metrics(capsys.readouterr().out)["PaymentsRefunded"] == 1


def test_refunding_twice_refunds_once(
    account: Account, lambda_context: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    record = events.sqs_record(events.order())
    charged(account, lambda_context, record)

    assert refund(lambda_context, record) == {"status": "REFUNDED"}
    assert refund(lambda_context, record) == {"status": "REFUNDED"}  # the stored result, not a second refund

    assert emitted_metrics(capsys.readouterr().out)["PaymentsRefunded"] == 1


def test_nothing_to_refund_when_the_attempt_failed_before_charging(account: Account, lambda_context: Any) -> None:
    record = events.sqs_record(events.order())
    reserved(account, lambda_context, record)  # failed at ChargePayment: no ledger row

    assert refund(lambda_context, record) == {"status": "NOTHING_TO_REFUND"}
    assert account.charge("ord-1001") is None


@pytest.mark.parametrize("body", ["not json", "[]", '{"orderId": 7}', "{}"])
def test_nothing_to_refund_for_a_body_that_names_no_order(account: Account, lambda_context: Any, body: str) -> None:
    assert refund(lambda_context, events.sqs_record(body)) == {"status": "NOTHING_TO_REFUND"}


def test_another_attempts_charge_is_left_alone(account: Account, lambda_context: Any) -> None:
    # Given attempt m-1 charged the order, and the producer's duplicate m-2 failed later
    charged(account, lambda_context, events.sqs_record(events.order(), "m-1"))

    assert refund(lambda_context, events.sqs_record(events.order(), "m-2")) == {"status": "NOTHING_TO_REFUND"}

    charge = account.charge("ord-1001")
    assert charge is not None and charge["status"] == "CHARGED"


@pytest.mark.parametrize(
    "code", ["ThrottlingException", "ProvisionedThroughputExceededException", "InternalServerError"]
)
def test_transient_errors_are_retried_and_the_retry_refunds(account: Account, lambda_context: Any, code: str) -> None:
    record = events.sqs_record(events.order())
    charged(account, lambda_context, record)
    with faults("update_item", code, table=account.payments_table), pytest.raises(TransientError):
        refund(lambda_context, record)
    charge = account.charge("ord-1001")
    assert charge is not None and charge["status"] == "CHARGED"

    assert refund(lambda_context, record) == {"status": "REFUNDED"}


def test_a_hard_failure_is_compensation_failed(
    account: Account, lambda_context: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    record = events.sqs_record(events.order())
    charged(account, lambda_context, record)
    with (
        faults("update_item", "AccessDeniedException", table=account.payments_table),
        pytest.raises(CompensationFailed),
    ):
        refund(lambda_context, record)
    charge = account.charge("ord-1001")
    assert charge is not None and charge["status"] == "CHARGED"
    assert emitted_metrics(capsys.readouterr().out)["CompensationsFailed"] == 1


def test_a_task_input_without_the_record_is_compensation_failed(account: Account, lambda_context: Any) -> None:
    with pytest.raises(CompensationFailed):
        handler({"orderId": "ord-1001"}, lambda_context)
