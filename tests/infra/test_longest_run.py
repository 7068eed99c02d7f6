"""The longest run of a workflow (fire_and_forget/construct/longest_run.py), and the refusal it backs: an Express
workflow (REQUEST_RESPONSE) that can outlast its TimeoutSeconds is refused at synth.

The bound's arithmetic is checked here on small definitions, each figure worked out by hand in its test; that it is
what Step Functions' interpreter does with Retry, backoff and a Task's timeout is measured on the rehearsal
(tests/catalog/test_request_response_rehearsal.py, the test of the longest run measured)."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_lambda as lambda_

from fire_and_forget.construct import PipelineSettings, RetryConfig, Workflow
from fire_and_forget.construct.longest_run import LongestRun, longest_run
from fire_and_forget.construct.request_response import TimeoutMismatch, check_longest_run
from stacks.catalog.stack import ASL_FILE as CATALOG_ASL
from tests.pipeline import minimal
from tests.support import order_saga

RR = "REQUEST_RESPONSE"


def task(timeout: int | None = 10, retry: list[dict[str, Any]] | None = None, **fields: Any) -> dict[str, Any]:
    state: dict[str, Any] = {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", **fields}
    if timeout is not None:
        state["TimeoutSeconds"] = timeout
    if retry is not None:
        state["Retry"] = retry
    return state


def flow(states: dict[str, Any], start: str = "A") -> dict[str, Any]:
    return {"StartAt": start, "States": states}


def test_a_task_counts_every_attempt_to_its_timeout_and_every_wait_at_its_longest() -> None:
    # 1 + 2 attempts of 10 s; waits 3 and 6 (IntervalSeconds 3, BackoffRate 2)
    run = longest_run(flow({"A": task(retry=[{"ErrorEquals": ["X"], "IntervalSeconds": 3, "MaxAttempts": 2}],
                                      End=True)}), {})
    assert run == LongestRun(3 * 10 + 3 + 6, ("A",))


def test_a_retrier_without_its_fields_takes_step_functions_defaults() -> None:
    # MaxAttempts 3, IntervalSeconds 1, BackoffRate 2.0: 4 attempts, waits 1 + 2 + 4
    assert longest_run(flow({"A": task(retry=[{"ErrorEquals": ["X"]}], End=True)}), {}).seconds == 40 + 7


def test_max_delay_caps_each_wait() -> None:
    retry = [{"ErrorEquals": ["X"], "IntervalSeconds": 4, "BackoffRate": 3.0, "MaxAttempts": 3, "MaxDelaySeconds": 10}]
    # waits 4, min(12, 10), min(36, 10)
    assert longest_run(flow({"A": task(retry=retry, End=True)}), {}).seconds == 4 * 10 + 4 + 10 + 10


def test_errors_alternating_between_retriers_can_spend_every_one_of_them() -> None:
    retry = [{"ErrorEquals": ["X"], "IntervalSeconds": 1, "MaxAttempts": 1},
             {"ErrorEquals": ["Y"], "IntervalSeconds": 5, "MaxAttempts": 2, "BackoffRate": 1.0}]
    # 1 + 1 + 2 attempts; waits 1, then 5 and 5
    assert longest_run(flow({"A": task(retry=retry, End=True)}), {}).seconds == 4 * 10 + 1 + 5 + 5


def test_attempts_lambda_refused_at_once_add_their_waits_not_their_limit() -> None:
    # A throttled invocation (429) is refused before the function runs: its retrier's attempts end at once.
    retry = [{"ErrorEquals": ["X"], "IntervalSeconds": 1, "MaxAttempts": 1},
             {"ErrorEquals": ["Lambda.TooManyRequestsException"], "IntervalSeconds": 5, "MaxAttempts": 2,
              "BackoffRate": 1.0}]
    # 1 + 1 attempts to their limit; waits 1, then 5 and 5
    assert longest_run(flow({"A": task(retry=retry, End=True)}), {}).seconds == 2 * 10 + 1 + 5 + 5
    # A retrier that names the throttle beside an error whose attempt can run to its limit counts in full.
    retry[1]["ErrorEquals"] = ["Lambda.TooManyRequestsException", "Y"]
    assert longest_run(flow({"A": task(retry=retry, End=True)}), {}).seconds == 4 * 10 + 1 + 5 + 5


def test_the_longest_way_is_taken_through_catch_and_choice() -> None:
    states = {
        "A": task(timeout=5, Next="Fast", Catch=[{"ErrorEquals": ["States.ALL"], "Next": "Decide"}]),
        "Fast": {"Type": "Succeed"},
        "Decide": {"Type": "Choice", "Choices": [{"Variable": "$.x", "BooleanEquals": True, "Next": "Short"}],
                   "Default": "Long"},
        "Short": {"Type": "Wait", "Seconds": 1, "End": True},
        "Long": {"Type": "Wait", "Seconds": 100, "Next": "Done"},
        "Done": {"Type": "Pass", "End": True},
    }
    assert longest_run(flow(states), {}) == LongestRun(105, ("A", "Decide", "Long", "Done"))


def test_a_lambda_task_without_its_own_timeout_is_bounded_by_its_functions() -> None:
    assert longest_run(flow({"A": task(timeout=None, End=True)}), {"A": 25}).seconds == 25


@pytest.mark.parametrize(("states", "why"), [
    ({"A": task(timeout=None, End=True)}, "Task 'A' has no TimeoutSeconds and no function timeout bounds it"),
    ({"A": task(TimeoutSecondsPath="$.t", End=True)}, "Task 'A' takes its timeout from its input"),
    ({"A": task(Next="B"), "B": {"Type": "Pass", "Next": "A"}}, "the states A -> B -> A form a loop"),
    ({"A": {"Type": "Map", "ItemProcessor": flow({"I": task(End=True)}, "I"), "End": True}},
     "Map 'A': the number of its iterations is not in the definition"),
    ({"A": {"Type": "Wait", "SecondsPath": "$.s", "End": True}}, "Wait 'A' waits for a time taken from its input"),
], ids=["no timeout", "timeout path", "loop", "map", "wait path"])
def test_what_nothing_in_the_definition_bounds_is_unbounded(states: dict[str, Any], why: str) -> None:
    run = longest_run(flow(states), {})
    assert run.seconds is None
    assert run.unbounded_by is not None and run.unbounded_by.startswith(why)


def test_a_parallel_state_runs_as_long_as_its_longest_branch_each_attempt() -> None:
    branches = [flow({"L": task(timeout=30, End=True)}, "L"), flow({"S": task(timeout=5, End=True)}, "S")]
    state = {"Type": "Parallel", "Branches": branches, "Retry": [{"ErrorEquals": ["X"], "MaxAttempts": 1}],
             "End": True}
    assert longest_run(flow({"A": state}), {}).seconds == 2 * 30 + 1


def test_the_order_saga_cannot_be_an_express_workflow_with_its_retries() -> None:
    # Given the order example's saga, with the defaults: three steps and three compensations, each retried
    saga = order_saga.workflow()
    # When it is asked for in REQUEST_RESPONSE mode, it is refused, with its longest run and how to shorten it
    with pytest.raises(TimeoutMismatch) as refused:
        saga.definition(PipelineSettings(), RR)
    message = str(refused.value)
    assert "can run 1487 s (ReserveInventory -> ChargePayment -> ArrangeShipping -> ArrangeShippingFailed -> " \
           "CancelShipment -> RefundPayment -> ReleaseInventory -> ClaimFailure -> FailureReturnedToQueue" in message
    assert "longer than its TimeoutSeconds 300" in message and "caught by nothing" in message
    # And in FIRE_AND_FORGET it builds: a Standard execution that times out is reconciled
    assert saga.definition(PipelineSettings())["TimeoutSeconds"] == 3600


def test_the_saga_fits_five_minutes_only_without_its_steps_retries() -> None:
    saga = order_saga.workflow()
    short = PipelineSettings(task_timeout_seconds=10, retry=RetryConfig(max_attempts=1))
    with pytest.raises(TimeoutMismatch, match="can run 593 s"):
        saga.definition(short, RR)
    bare = PipelineSettings(task_timeout_seconds=10, retry=RetryConfig(max_attempts=0, compensation_max_attempts=1))
    assert saga.definition(bare, RR)["TimeoutSeconds"] == 300


def test_the_catalog_workflow_fits_with_its_retries() -> None:
    scope = minimal.stack()
    catalog = Workflow(title="Catalog index", definition_file=CATALOG_ASL,
                       functions={"IndexProduct": minimal.function(scope, "IndexProduct")},
                       claims_delivery="IndexProduct")
    definition = catalog.definition(PipelineSettings(), RR)
    assert longest_run(definition, {}) == LongestRun(227, ("IndexProduct", "DeliveryCompleted", "Delivered"))


def test_a_function_timeout_that_makes_the_run_too_long_is_refused_with_the_function_named() -> None:
    scope = minimal.stack()
    definition = flow({minimal.TASK: task(timeout=None, End=True)}, minimal.TASK) | {"TimeoutSeconds": 60}
    slow = lambda_.Function(scope, "Slow", runtime=lambda_.Runtime.PYTHON_3_13, handler="index.handler",
                            code=lambda_.Code.from_inline("def handler(event, context):\n    return event\n"),
                            timeout=cdk.Duration.seconds(50))
    check_longest_run(definition, {minimal.TASK: slow})  # 50 s: within 60
    definition["States"][minimal.TASK]["Retry"] = [{"ErrorEquals": ["X"], "MaxAttempts": 1}]
    with pytest.raises(TimeoutMismatch, match=r"can run 101 s \(Work"):
        check_longest_run(definition, {minimal.TASK: slow})


def test_a_run_exactly_as_long_as_the_timeout_fits_and_a_second_more_does_not() -> None:
    definition = flow({"A": task(timeout=60, End=True)}) | {"TimeoutSeconds": 60}
    check_longest_run(definition, {})
    definition["States"]["A"]["TimeoutSeconds"] = 61
    with pytest.raises(TimeoutMismatch, match=r"can run 61 s \(A:"):
        check_longest_run(definition, {})
