"""The order saga: resource settings, and the ASL's retries, catches, compensation order and HandleFailure."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from fire_and_forget.construct.longest_run import retry_waits_seconds
from fire_and_forget.construct.request_response import REQUEST_RESPONSE
from fire_and_forget.construct.workflow import TAIL_FILE
from fire_and_forget.construct.workflow import render_definition as render_workflow
from stacks.catalog.stack import ASL_FILE as CATALOG_ASL
from stacks.config import AppConfig, RetryConfig
from stacks.orders.stack import ASL_FILE, render_definition
from tests.support.template import one, ref_or_att

BUSINESS_ERRORS = {"InvalidOrder", "OutOfStock", "PaymentDeclined", "ShippingUnavailable", "DuplicateDelivery",
                   "DuplicateOrder", "OrderConflict"}
LAMBDA_THROTTLE = "Lambda.TooManyRequestsException"
LAMBDA_TRANSIENT = {
    "Lambda.ServiceException", "Lambda.AWSLambdaException", "Lambda.SdkClientException", "TransientError",
    # A function timeout under both its names: Step Functions' error-handling page says Lambda.Unknown
    # (https://docs.aws.amazon.com/step-functions/latest/dg/concepts-error-handling.html), the Lambda runtime
    # reports Sandbox.Timedout (https://docs.aws.amazon.com/lambda/latest/dg/invocation-retries.html).
    "Lambda.Unknown", "Sandbox.Timedout",
}
STEPS = ("ReserveInventory", "ChargePayment", "ArrangeShipping")
COMPENSATIONS = ("CancelShipment", "RefundPayment", "ReleaseInventory")


@pytest.fixture(scope="module")
def machine(template: dict[str, Any]) -> dict[str, Any]:
    props: dict[str, Any] = one(template, "AWS::StepFunctions::StateMachine", "PipelineWorkflow")[1]["Properties"]
    return props


@pytest.fixture(scope="module")
def states(machine: dict[str, Any]) -> dict[str, Any]:
    # The definition is plain JSON with ${Placeholders}; CloudFormation fills them from DefinitionSubstitutions.
    definition = json.loads(machine["DefinitionString"])
    found: dict[str, Any] = definition["States"]
    return found


def test_standard_with_full_logging_without_execution_data_and_tracing(template: dict[str, Any],
                                                                        machine: dict[str, Any]) -> None:
    assert machine["StateMachineType"] == "STANDARD"
    logging = machine["LoggingConfiguration"]
    assert logging["Level"] == "ALL"
    assert logging["IncludeExecutionData"] is False
    log_group_id = ref_or_att(logging["Destinations"][0]["CloudWatchLogsLogGroup"]["LogGroupArn"])
    assert log_group_id is not None
    assert template["Resources"][log_group_id]["Properties"]["RetentionInDays"] == 30
    assert machine["TracingConfiguration"] == {"Enabled": True}


def test_every_placeholder_in_the_asl_file_has_a_substitution(machine: dict[str, Any]) -> None:
    # The default deployment leaves BookCarrier out (ff:carrierConfirmation), and with it its function.
    text = ASL_FILE.read_text(encoding="utf-8") + TAIL_FILE.read_text(encoding="utf-8")
    placeholders = set(re.findall(r"\$\{(\w+)\}", text))
    assert placeholders - {"BookCarrierFunctionArn"} == set(machine["DefinitionSubstitutions"])
    assert len(placeholders) == 14


def test_the_execution_and_every_task_have_a_timeout(states: dict[str, Any], machine: dict[str, Any]) -> None:
    definition = render_definition(AppConfig())
    assert definition["TimeoutSeconds"] > 0
    tasks = {name: state for name, state in states.items() if state["Type"] == "Task"}
    assert set(tasks) == {*STEPS, *COMPENSATIONS, "ClaimFailure", "HandleFailure", "NotifyFailure"}
    for name, state in tasks.items():
        assert 0 < state["TimeoutSeconds"] <= 30, name


def test_happy_path_is_exactly_the_three_business_steps(states: dict[str, Any]) -> None:
    path, name = [], "ReserveInventory"
    while True:
        path.append(name)
        if states[name].get("End"):
            break
        name = states[name]["Next"]
    assert path == list(STEPS)
    # No Pass state to unpack the pipe's batch: the first Task reads the record from the execution input.
    assert states["ReserveInventory"]["Parameters"]["Payload"]["record.$"] == "$$.Execution.Input[0]"


@pytest.mark.parametrize("name", [*STEPS, *COMPENSATIONS])
def test_lambda_tasks_retry_only_transient_errors_with_capped_full_jitter(states: dict[str, Any], name: str) -> None:
    transient, throttle = states[name]["Retry"]
    assert set(transient["ErrorEquals"]) >= LAMBDA_TRANSIENT and throttle["ErrorEquals"] == [LAMBDA_THROTTLE]
    for retrier in (transient, throttle):
        assert not BUSINESS_ERRORS & set(retrier["ErrorEquals"])
        assert "States.ALL" not in retrier["ErrorEquals"] and "States.TaskFailed" not in retrier["ErrorEquals"]
        assert retrier["BackoffRate"] > 1
        assert retrier["JitterStrategy"] == "FULL"
        assert retrier["MaxDelaySeconds"] >= retrier["IntervalSeconds"]


@pytest.mark.parametrize("name", [*STEPS, *COMPENSATIONS])
def test_a_lambda_throttle_is_waited_out_longer_than_other_transient_errors(states: dict[str, Any], name: str) -> None:
    # A throttle says the function did not run: the concurrency was used up. Only the throttle's own retrier names
    # it (Step Functions takes the first retrier that names an error), with more attempts and a longer cap, so a
    # burst that exhausts Lambda's concurrency is waited out (tests/workflow/test_limits_under_load.py).
    transient, throttle = states[name]["Retry"]
    assert LAMBDA_THROTTLE not in transient["ErrorEquals"]
    assert throttle["MaxAttempts"] > transient["MaxAttempts"]
    assert retry_waits_seconds([throttle]) > 2 * retry_waits_seconds([transient])  # 210 s against 60 s (90 s)


def test_throttles_share_the_transient_retrier_when_their_own_is_turned_off_or_the_mode_is_request_response() -> None:
    shared = render_definition(AppConfig(retry=RetryConfig(throttle_max_attempts=0)))["States"]
    (retrier,) = shared["ChargePayment"]["Retry"]
    assert LAMBDA_THROTTLE in retrier["ErrorEquals"]
    # In REQUEST_RESPONSE the source queue waits out a throttle (the message goes back), and a longer retrier would
    # outlast the Express workflow's five minutes.
    express = render_workflow(CATALOG_ASL, AppConfig(), compensations=(), claims_delivery="IndexProduct",
                              invocation_type=REQUEST_RESPONSE)["States"]
    (retrier,) = express["IndexProduct"]["Retry"]
    assert LAMBDA_THROTTLE in retrier["ErrorEquals"]


def test_compensations_retry_harder_than_steps(states: dict[str, Any]) -> None:
    for compensation in COMPENSATIONS:
        assert states[compensation]["Retry"][0]["MaxAttempts"] > states["ChargePayment"]["Retry"][0]["MaxAttempts"]


@pytest.mark.parametrize(
    ("step", "compensations"),
    [
        ("ReserveInventory", ["ReleaseInventory"]),
        ("ChargePayment", ["RefundPayment", "ReleaseInventory"]),
        ("ArrangeShipping", ["CancelShipment", "RefundPayment", "ReleaseInventory"]),
    ],
)
def test_a_failed_step_runs_the_compensations_in_reverse_then_handle_failure(
    states: dict[str, Any], step: str, compensations: list[str]
) -> None:
    catch_all = states[step]["Catch"][-1]
    assert catch_all["ErrorEquals"] == ["States.ALL"]
    marker = states[catch_all["Next"]]
    assert marker["Type"] == "Pass" and marker["Parameters"]["failure"]["state"] == step
    chain, name = [], marker["Next"]
    while name != "ClaimFailure":
        chain.append(name)
        name = states[name]["Next"]
    assert chain == compensations


def test_rejected_orders_skip_compensation(states: dict[str, Any]) -> None:
    rejected = next(c for c in states["ReserveInventory"]["Catch"] if "InvalidOrder" in c["ErrorEquals"])
    assert set(rejected["ErrorEquals"]) == {"InvalidOrder", "OutOfStock", "OrderConflict"}
    assert states[rejected["Next"]]["Next"] == "ClaimFailure"
    assert states[rejected["Next"]]["Parameters"]["compensation"] == {"required": False}


def test_duplicate_delivery_ends_quietly(states: dict[str, Any]) -> None:
    duplicate = states["ReserveInventory"]["Catch"][0]
    assert duplicate["ErrorEquals"] == ["DuplicateDelivery", "DuplicateOrder"]
    assert states[duplicate["Next"]]["Type"] == "Succeed"


@pytest.mark.parametrize("compensation", COMPENSATIONS)
def test_a_failing_compensation_marks_manual_repair(states: dict[str, Any], compensation: str) -> None:
    (catch,) = states[compensation]["Catch"]
    assert catch["ErrorEquals"] == ["States.ALL"]
    marker = states[catch["Next"]]
    assert marker["Parameters"]["manualRepair"] is True
    assert marker["Next"] == "ClaimFailure"


def test_each_message_fails_once_even_when_delivered_twice(states: dict[str, Any]) -> None:
    claim = states["ClaimFailure"]
    # An update, never a put: the row keeps the claim's expiry and the last stage; and no write once the Reconciler
    # claimed the execution (a call of an aborted execution that lands late must not replace what it recorded).
    assert claim["Resource"] == "arn:aws:states:::dynamodb:updateItem"
    assert claim["Parameters"]["ConditionExpression"] == (
        "(attribute_not_exists(messageId) OR executionArn = :execution) AND attribute_not_exists(reconciliation)")
    assert "expiresAt" not in claim["Parameters"]["UpdateExpression"]
    duplicate, unavailable = claim["Catch"]
    assert duplicate["ErrorEquals"] == ["DynamoDB.ConditionalCheckFailedException"]
    assert states[duplicate["Next"]]["Type"] == "Succeed"
    # If the claim itself cannot be written, record the failure anyway: a duplicate beats a loss.
    assert (unavailable["ErrorEquals"], unavailable["Next"]) == (["States.ALL"], "HandleFailure")
    assert claim["Next"] == "HandleFailure"


def test_handle_failure_saves_then_announces_unless_retried_then_fails(states: dict[str, Any],
                                                                      machine: dict[str, Any]) -> None:
    handle = states["HandleFailure"]
    assert handle["Resource"] == "arn:aws:states:::sqs:sendMessage"
    body = handle["Parameters"]["MessageBody"]
    assert {"record.$", "failure.$", "compensation.$", "manualRepair.$", "executionArn.$", "failedAt.$"} <= set(body)
    assert body["record.$"] == "$$.Execution.Input[0]"  # the raw SQS record: messageId and body
    assert handle["Retry"][0]["MaxAttempts"] >= 3
    # Self-healing: a failure the Redriver will retry is recorded, not announced (tests/pipeline/
    # test_healing_policy.py runs this Choice against the HealingPolicy); every other one is announced.
    choice = states[handle["Next"]]
    assert (handle["Next"], choice["Type"]) == ("AnnounceUnlessRetried", "Choice")
    (wait,) = choice["Choices"]
    assert wait["Next"] == "FailureRecordedForRetry"
    assert {"Variable": "$.manualRepair", "BooleanEquals": False} in wait["And"]
    alert = states[choice["Default"]]  # FormatFailureAlert builds the per-channel message
    assert choice["Default"] == "FormatFailureAlert"
    assert (alert["Type"], alert["ResultPath"]) == ("Pass", "$.alert")
    notify = states[alert["Next"]]
    assert notify["Resource"] == "arn:aws:states:::sns:publish"
    assert notify["Retry"][0]["MaxAttempts"] >= 3
    end = states[notify["Next"]]
    assert end == {**end, "Type": "Fail", "Error": "FailureRecorded"}
    # Each ending says what happened: announced, or left to the automatic retry; the rule's error name is both's.
    quiet = states[wait["Next"]]
    assert quiet == {**quiet, "Type": "Fail", "Error": "FailureRecorded"}
    assert "was announced on the alerts topic" in end["Cause"]
    assert "was not announced" in quiet["Cause"] and "was announced" not in quiet["Cause"]
    subs = machine["DefinitionSubstitutions"]
    assert ref_or_att(subs["FailureDlqUrl"]) is not None and ref_or_att(subs["AlertsTopicArn"]) is not None


def test_handle_failure_fails_in_place_so_redrive_resumes_it(states: dict[str, Any]) -> None:
    # No Catch: when the failure DLQ or SNS still refuses after the retries, the execution fails in that very
    # state (an error other than FailureRecorded, so the rule announces it) and RedriveExecution resumes there.
    assert "Catch" not in states["HandleFailure"] and "Catch" not in states["NotifyFailure"]
    fails = {name: state["Error"] for name, state in states.items() if state["Type"] == "Fail"}
    assert fails == {"FailureRecorded": "FailureRecorded", "FailureRecordedForRetry": "FailureRecorded"}


def test_config_sets_retry_numbers_and_timeouts() -> None:
    config = AppConfig(retry=RetryConfig(interval_seconds=3, max_attempts=2, compensation_max_attempts=9),
                       task_timeout_seconds=45, execution_timeout_minutes=10)
    rendered = render_definition(config)["States"]
    assert rendered["ChargePayment"]["Retry"][0]["MaxAttempts"] == 2
    assert rendered["ChargePayment"]["Retry"][0]["IntervalSeconds"] == 3
    assert rendered["RefundPayment"]["Retry"][0]["MaxAttempts"] == 9
    assert rendered["ArrangeShipping"]["TimeoutSeconds"] == 45
    assert render_definition(config)["TimeoutSeconds"] == 600
