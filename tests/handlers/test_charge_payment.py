"""ChargePayment against moto: ledger rows, the documented decline rules, idempotency, transient mapping."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from charge_payment.handler import handler
from common.errors import DuplicateOrder, InvalidOrder, PaymentDeclined, TransientError
from release_inventory.handler import handler as release
from tests.handlers.account import Account
from tests.handlers.saga import emitted_metrics, faults
from tests.handlers.steps import reserved
from tests.support import events


def test_happy_path_records_one_charge_for_the_order(
    account: Account, lambda_context: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a reserved order
    record = events.sqs_record(events.order())
    context = reserved(account, lambda_context, record)

    # When ChargePayment runs
    result = handler(context, lambda_context)

    # Then the ledger holds one CHARGED row for the order's amount, made by this attempt
    charge = account.charge("ord-1001")
    assert charge is not None
    assert (charge["status"], charge["amount"], charge["currency"]) == ("CHARGED", Decimal("38.50"), "USD")
    assert charge["attemptId"] == record["messageId"]
    # And the context passes through with the payment added
    assert result["reservation"] == context["reservation"]
    assert result["payment"] == {
        "chargeId": charge["chargeId"],
        "amount": "38.50",
        "currency": "USD",
        "status": "CHARGED",
        "attemptId": record["messageId"],
    }
    assert emitted_metrics(capsys.readouterr().out)["OrdersCharged"] == 1


def test_declined_token_is_declined_and_nothing_is_charged(
    account: Account, lambda_context: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    order = events.order(payment={"amount": "38.50", "currency": "USD", "paymentToken": "tok_decline_insufficient"})
    context = reserved(account, lambda_context, events.sqs_record(order))

    with pytest.raises(PaymentDeclined, match="declined"):
        handler(context, lambda_context)

    assert account.charge("ord-1001") is None
    assert emitted_metrics(capsys.readouterr().out)["PaymentsDeclined"] == 1


@pytest.mark.parametrize(("amount", "declined"), [("5000.00", False), ("5000.01", True)])
def test_amount_above_the_default_credit_limit_is_declined(
    account: Account, lambda_context: Any, amount: str, declined: bool
) -> None:
    # Given a customer without a limit item: DEFAULT_CREDIT_LIMIT (5000 in the template) applies, inclusive
    order = events.order(payment={"amount": amount, "currency": "USD", "paymentToken": "tok_visa_4242"})
    context = reserved(account, lambda_context, events.sqs_record(order))

    if declined:
        with pytest.raises(PaymentDeclined, match="credit limit"):
            handler(context, lambda_context)
        assert account.charge("ord-1001") is None
    else:
        handler(context, lambda_context)
        charge = account.charge("ord-1001")
        assert charge is not None and charge["amount"] == Decimal(amount)


def test_a_per_customer_limit_overrides_the_default(account: Account, lambda_context: Any) -> None:
    # Given customer cust-42 may only spend 20
    account.set_credit_limit("cust-42", "20")
    context = reserved(account, lambda_context, events.sqs_record(events.order()))

    with pytest.raises(PaymentDeclined, match="20"):
        handler(context, lambda_context)
    assert account.charge("ord-1001") is None


def test_charging_twice_in_one_attempt_charges_once(account: Account, lambda_context: Any) -> None:
    context = reserved(account, lambda_context, events.sqs_record(events.order()))

    first = handler(context, lambda_context)
    second = handler(context, lambda_context)

    assert second == first
    assert account.count(account.payments_table) == 1


@pytest.mark.parametrize(
    "code", ["ThrottlingException", "ProvisionedThroughputExceededException", "InternalServerError"]
)
def test_transient_errors_writing_the_ledger_are_transient(account: Account, lambda_context: Any, code: str) -> None:
    context = reserved(account, lambda_context, events.sqs_record(events.order()))
    with faults("put_item", code, table=account.payments_table), pytest.raises(TransientError):
        handler(context, lambda_context)
    assert account.charge("ord-1001") is None
    handler(context, lambda_context)  # the state machine's retry
    assert account.count(account.payments_table) == 1


def test_lost_response_after_the_charge_is_not_charged_twice(account: Account, lambda_context: Any) -> None:
    context = reserved(account, lambda_context, events.sqs_record(events.order()))
    with (
        faults("put_item", "InternalServerError", table=account.payments_table, after_write=True),
        pytest.raises(TransientError),
    ):
        handler(context, lambda_context)
    result = handler(context, lambda_context)
    charge = account.charge("ord-1001")
    assert charge is not None and result["payment"]["chargeId"] == charge["chargeId"]
    assert account.count(account.payments_table) == 1


def test_reading_the_credit_limit_throttled_is_transient(account: Account, lambda_context: Any) -> None:
    context = reserved(account, lambda_context, events.sqs_record(events.order()))
    with faults("get_item", "ThrottlingException", table=account.payments_table), pytest.raises(TransientError):
        handler(context, lambda_context)


def test_input_that_is_not_an_order_context_is_invalid(account: Account, lambda_context: Any) -> None:
    with pytest.raises(InvalidOrder, match="ReserveInventory"):
        handler({"orderId": "ord-1001"}, lambda_context)


def test_a_charge_left_by_an_attempt_that_no_longer_owns_the_order_is_refunded_not_adopted(
    account: Account, lambda_context: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given attempt A reserved, was compensated (the order handed over), and then its late ChargePayment invocation
    # committed a charge: an invocation that outlived its execution
    order = events.order()
    first = events.sqs_record(order, message_id="aaaaaaaa-0000-4000-8000-000000000001")
    first_arn = "arn:aws:states:us-east-1:123456789012:execution:saga:first"
    late = reserved(account, lambda_context, first, arn=first_arn)
    release(events.compensation_input(first, first_arn), lambda_context)
    handler(late, lambda_context)
    assert (account.charge("ord-1001") or {})["attemptId"] == first["messageId"]
    # And attempt B (a redriven copy) took the order over
    second = events.sqs_record(order, message_id="bbbbbbbb-0000-4000-8000-000000000002")
    context = reserved(account, lambda_context, second, arn="arn:aws:states:us-east-1:123456789012:execution:saga:b")
    capsys.readouterr()

    # When B's ChargePayment runs
    result = handler(context, lambda_context)

    # Then B's charge is its own, and A's was refunded first: one live charge, by the owner
    assert result["payment"]["attemptId"] == second["messageId"]
    charge = account.charge("ord-1001")
    assert charge is not None and (charge["status"], charge["attemptId"]) == ("CHARGED", second["messageId"])
    assert emitted_metrics(capsys.readouterr().out)["OrphanChargesRefunded"] == 1


def test_an_attempt_that_does_not_own_the_order_never_takes_another_attempts_charge(
    account: Account, lambda_context: Any
) -> None:
    # Given attempt A owns the order and charged it
    order = events.order()
    first = events.sqs_record(order, message_id="aaaaaaaa-0000-4000-8000-000000000001")
    handler(reserved(account, lambda_context, first), lambda_context)
    # When a ChargePayment of another attempt, which owns nothing, runs on the same order
    stray = {**reserved(account, lambda_context, first), "messageId": "cccccccc-0000-4000-8000-000000000003"}

    # Then it fails loudly and A's charge is untouched
    with pytest.raises(DuplicateOrder, match="not owned"):
        handler(stray, lambda_context)
    charge = account.charge("ord-1001")
    assert charge is not None and (charge["status"], charge["attemptId"]) == ("CHARGED", first["messageId"])
