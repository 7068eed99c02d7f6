"""decide(): what ReserveInventory does about an order's ledger row, and what it tells the producer when it refuses."""

from __future__ import annotations

import pytest

from common.errors import DuplicateOrder, OrderConflict
from common.order_ledger import ACTIVE, CLAIM, COMPENSATED, COMPLETED, OWN, TAKE_OVER, OrderEntry, decide

ARN, OTHER_ARN = "arn:exec-1", "arn:exec-2"


def entry(status: str, attempt: str = "msg-1", arn: str = ARN, fp: str = "fp") -> OrderEntry:
    return OrderEntry("ord-1", fp, attempt, arn, status)


def test_an_order_nobody_holds_is_claimed() -> None:
    assert decide(None, "fp", "msg-1", ARN) == CLAIM


def test_a_retry_of_the_owner_while_in_flight_owns_it() -> None:
    assert decide(entry(ACTIVE), "fp", "msg-1", ARN) == OWN


def test_another_attempt_takes_over_a_compensated_order() -> None:
    assert decide(entry(COMPENSATED, attempt="msg-0"), "fp", "msg-1", ARN) == TAKE_OVER


def test_a_different_body_under_the_same_order_id_is_a_conflict_that_says_what_to_do() -> None:
    with pytest.raises(OrderConflict) as raised:
        decide(entry(ACTIVE, attempt="msg-0"), "other-fp", "msg-1", ARN)
    assert str(raised.value) == (
        "order ord-1 was already received with a different body (by message msg-0);"
        " send a changed order under a new orderId"
    )


@pytest.mark.parametrize(
    ("stored", "attempt", "arn", "state"),
    [
        (entry(ACTIVE, attempt="msg-0"), "msg-1", ARN, "in flight"),
        (entry(ACTIVE), "msg-1", OTHER_ARN, "in flight"),  # a duplicate execution of the owner's message
        (entry(COMPLETED, attempt="msg-0"), "msg-1", ARN, "completed"),
        (entry(COMPLETED), "msg-1", ARN, "completed"),  # the owner, once done, does not run again
        (entry(COMPENSATED), "msg-1", OTHER_ARN, "compensated"),  # the compensated owner's own message again
    ],
    ids=["other-in-flight", "duplicate-execution", "other-completed", "own-completed", "own-compensated"],
)
def test_a_copy_of_an_owned_order_ends_naming_the_owner_and_its_state(
    stored: OrderEntry, attempt: str, arn: str, state: str
) -> None:
    with pytest.raises(DuplicateOrder) as raised:
        decide(stored, "fp", attempt, arn)
    assert str(raised.value) == f"order ord-1 is owned by message {stored.attempt_id} ({state}); this copy ends"
