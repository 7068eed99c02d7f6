"""The checks of one smoke order: what the saga must make of it, and what was seen (names from the ASL)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from demos.orders.smoke_watch import ALERT_STATE, RECORD_STATE, ExecutionView, Tracked
from fire_and_forget.runtime.tail import HANDLED_FAILURE_ERROR

HANDLED_ERROR = HANDLED_FAILURE_ERROR  # the Fail state after HandleFailure and NotifyFailure


class Case(StrEnum):
    VALID = "valid"
    INVALID = "invalid"
    COMPENSATED = "compensated"


@dataclass(frozen=True)
class Expectation:
    """What the saga must make of one smoke order (names from statemachines/order_saga.asl.json)."""

    succeeds: bool
    error: str | None = None  # the failure record's error
    failed_state: str | None = None
    compensations: tuple[str, ...] = ()  # the compensation states, in the order they must run
    undone: tuple[tuple[str, str], ...] = ()  # (key under the record's `compensation`, the status that proves it)


EXPECTATIONS = {
    Case.VALID: Expectation(succeeds=True),
    Case.INVALID: Expectation(succeeds=False, error="InvalidOrder", failed_state="ReserveInventory"),
    Case.COMPENSATED: Expectation(
        succeeds=False,
        error="ShippingUnavailable",
        failed_state="ArrangeShipping",
        compensations=("CancelShipment", "RefundPayment", "ReleaseInventory"),
        undone=(("refundPayment", "REFUNDED"), ("releaseInventory", "RELEASED")),
    ),
}
COMPENSATION_STATES = frozenset(s for e in EXPECTATIONS.values() for s in e.compensations)


@dataclass(frozen=True)
class Check:
    case: str
    name: str
    passed: bool
    detail: str


def evaluate(order: Tracked, timeout: float) -> list[Check]:
    """The checks of one order, each with what was seen; a check that was never reached fails as such."""
    expected = EXPECTATIONS[Case(order.case)]
    view = order.execution

    def check(name: str, passed: bool, detail: str) -> Check:
        return Check(order.case, name, passed, detail)

    if view is None:
        return [
            check(
                "started",
                False,
                f"no execution took message {order.message_id} within {timeout:g} s: "
                "check the pipe and the source DLQ (`ff-ops status`)",
            )
        ]
    checks = [check("started", True, view.arn.rsplit(":", 1)[-1]), _outcome(order.case, view, expected, timeout)]
    if not view.ended:
        return checks
    if expected.succeeds:
        wrote = RECORD_STATE in view.exited or order.record is not None
        return [
            *checks,
            check(
                "no failure record",
                not wrote,
                "none written" if not wrote else f"HandleFailure recorded {_record_text(order)}",
            ),
        ]
    return [*checks, _record(order, expected), _alert(order.case, view), _compensations(order, view, expected)]


def _outcome(case: str, view: ExecutionView, expected: Expectation, timeout: float) -> Check:
    if not view.ended:
        return Check(case, "outcome", False, f"still RUNNING after {timeout:g} s, in {view.current_state or '?'}")
    seen = view.status if view.error is None else f"{view.status} {view.error}"
    wanted = "SUCCEEDED" if expected.succeeds else f"FAILED {HANDLED_ERROR}"
    detail = seen if seen == wanted else f"{seen} (expected {wanted}; states: {' > '.join(view.entered)})"
    return Check(case, "outcome", seen == wanted, detail)


def _record(order: Tracked, expected: Expectation) -> Check:
    record = order.record
    if record is None:
        return Check(order.case, "failure record", False, "not in the failure DLQ")
    problems = []
    if (record.error, record.failed_state) != (expected.error, expected.failed_state):
        problems.append(f"expected {expected.error} in {expected.failed_state}")
    if record.body != order.body:
        problems.append("the original body was not kept unchanged")
    detail = _record_text(order) + (f" ({'; '.join(problems)})" if problems else ", original body kept")
    return Check(order.case, "failure record", not problems, detail)


def _alert(case: str, view: ExecutionView) -> Check:
    if ALERT_STATE in view.exited and view.alert_message_id:
        return Check(case, "alert", True, f"published, SNS message {view.alert_message_id}")
    reached = ALERT_STATE in view.entered
    return Check(case, "alert", False, f"{ALERT_STATE} {'did not complete' if reached else 'was never reached'}")


def _compensations(order: Tracked, view: ExecutionView, expected: Expectation) -> Check:
    ran = [state for state in view.entered if state in COMPENSATION_STATES]
    owed = " > ".join(expected.compensations) or "none"
    problems = [] if ran == list(expected.compensations) else [f"expected {owed}"]
    compensation = order.record.compensation if order.record is not None else None
    statuses = compensation if isinstance(compensation, dict) else {}
    for key, status in expected.undone:
        seen = statuses.get(key, {}).get("status") if isinstance(statuses.get(key), dict) else None
        if seen != status:
            problems.append(f"{key} is {seen}, expected {status}")
    if order.record is not None and order.record.manual_repair:
        problems.append("the record asks for manual repair")
    done = " > ".join(ran) or "none (none owed)"
    return Check(order.case, "compensations", not problems, done + (f" ({'; '.join(problems)})" if problems else ""))


def _record_text(order: Tracked) -> str:
    record = order.record
    return f"{record.error} in {record.failed_state}" if record is not None else "a failure"
