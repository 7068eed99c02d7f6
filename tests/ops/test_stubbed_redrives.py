"""`source-dlq redrive` and `executions redrive`, and the AccessDenied / throttling exits, with botocore's Stubber.

moto 5.2.5 implements neither SQS StartMessageMoveTask / ListMessageMoveTasks nor Step Functions RedriveExecution
(nor DescribeExecution's redriveStatus), so these tests give the clients the documented request and response shapes
through botocore.stub.Stubber, which also checks every request against the service model. Each test asserts what
the command decides and reports, and `assert_no_pending_responses` proves every documented call was made.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from botocore.stub import Stubber
from typer.testing import CliRunner

from fire_and_forget.cli.app import app
from fire_and_forget.cli.executions import (
    Claims,
    ExecutionRedriveRequest,
    RedriveVerdict,
    plan_executions,
    redrive_planned,
)
from fire_and_forget.cli.source_dlq import MoveTask, redrive_source_dlq
from tests.ops.stubs import (
    DELIVERIES,
    DLQ_ARN,
    DLQ_URL,
    NOW,
    SOURCE_ARN,
    SOURCE_URL,
    STATE_MACHINE,
    caller,
    claim,
    describe,
    described,
    execution_arn,
    listed,
    stack_outputs,
    stubbed,
    stubbed_cli,
)

__all__ = ["stubbed", "stubbed_cli"]  # the fixtures this module's tests take


def move_task(status: str, moved: int, **extra: Any) -> dict[str, Any]:
    return {"Results": [{"TaskHandle": "handle-1", "Status": status, "SourceArn": DLQ_ARN, "DestinationArn": SOURCE_ARN,
                         "ApproximateNumberOfMessagesMoved": moved, "ApproximateNumberOfMessagesToMove": 3,
                         "StartedTimestamp": 1_795_000_000_000, **extra}]}


def expect_move(sqs: Stubber, depth: int, *tasks: dict[str, Any], start: bool = True, rate: int | None = None) -> None:
    sqs.add_response("get_queue_attributes", {"Attributes": {"ApproximateNumberOfMessages": str(depth)}},
                     {"QueueUrl": DLQ_URL, "AttributeNames": ["ApproximateNumberOfMessages"]})
    listing = {"SourceArn": DLQ_ARN, "MaxResults": 1}
    sqs.add_response("list_message_move_tasks", tasks[0] if not start else {"Results": []}, listing)
    if start:
        sqs.add_response("start_message_move_task", {"TaskHandle": "handle-1"},
                         {"SourceArn": DLQ_ARN, "DestinationArn": SOURCE_ARN}
                         | ({"MaxNumberOfMessagesPerSecond": rate} if rate is not None else {}))
    for task in tasks[0 if start else 1:]:
        sqs.add_response("list_message_move_tasks", task, listing)


def test_source_dlq_redrive_starts_a_move_task_and_follows_it_to_the_end(stubbed: dict[str, Stubber]) -> None:
    sqs = stubbed["sqs"]
    expect_move(sqs, 3, move_task("RUNNING", 1), move_task("COMPLETED", 3))
    seen: list[MoveTask] = []

    result = redrive_source_dlq(sqs.client, DLQ_URL, DLQ_ARN, SOURCE_ARN, progress=seen.append,  # type: ignore[arg-type]
                                sleep=lambda _: None)

    assert result.started and result.succeeded and result.messages_before == 3
    assert [(t.status, t.moved) for t in seen] == [("RUNNING", 1), ("COMPLETED", 3)]


def test_source_dlq_redrive_joins_a_running_task_instead_of_starting_another(stubbed: dict[str, Stubber]) -> None:
    sqs = stubbed["sqs"]
    expect_move(sqs, 2, move_task("RUNNING", 1), move_task("COMPLETED", 3), start=False)

    result = redrive_source_dlq(sqs.client, DLQ_URL, DLQ_ARN, SOURCE_ARN, sleep=lambda _: None)  # type: ignore[arg-type]

    assert not result.started and result.task is not None and result.task.status == "COMPLETED"


def test_source_dlq_redrive_of_an_empty_dlq_starts_nothing(stubbed: dict[str, Stubber]) -> None:
    sqs = stubbed["sqs"]
    sqs.add_response("get_queue_attributes", {"Attributes": {"ApproximateNumberOfMessages": "0"}})
    sqs.add_response("list_message_move_tasks", {"Results": []})

    result = redrive_source_dlq(sqs.client, DLQ_URL, DLQ_ARN, SOURCE_ARN)  # type: ignore[arg-type]

    assert (result.started, result.task, result.succeeded) == (False, None, True)


def queue_arns(sqs: Stubber) -> None:
    for url, arn in ((DLQ_URL, DLQ_ARN), (SOURCE_URL, SOURCE_ARN)):
        sqs.add_response("get_queue_attributes", {"Attributes": {"QueueArn": arn}},
                         {"QueueUrl": url, "AttributeNames": ["QueueArn"]})


def source_dlq_holds(sqs: Stubber, *names: str) -> None:
    """The list before the move: one receive brings the messages, the next none, then they are made visible again."""
    messages = [{"MessageId": f"dlq-{n}", "ReceiptHandle": f"rh-{n}", "Body": json.dumps({"orderId": n})}
                for n in names]
    sqs.add_response("receive_message", {"Messages": messages})
    sqs.add_response("receive_message", {})
    sqs.add_response("change_message_visibility_batch", {"Successful": [{"Id": str(i)} for i in range(len(names))],
                                                         "Failed": []})
    sqs.add_response("list_message_move_tasks", {"Results": []}, {"SourceArn": DLQ_ARN, "MaxResults": 1})


def test_cli_source_dlq_redrive_reports_a_failed_task_with_exit_8(stubbed: dict[str, Stubber],
                                                                  stubbed_cli: CliRunner) -> None:
    stack_outputs(stubbed)
    queue_arns(stubbed["sqs"])
    source_dlq_holds(stubbed["sqs"], "ord-1", "ord-2", "ord-3")
    expect_move(stubbed["sqs"], 3, move_task("FAILED", 1, FailureReason="AccessDenied on the destination"), rate=10)
    caller(stubbed)

    result = stubbed_cli.invoke(app, ["source-dlq", "redrive", "--all", "--yes", "--json", "--poll-seconds", "0"])

    document = json.loads(result.stdout)
    assert result.exit_code == 8
    assert set(document) == {"schema", "stack", "sourceDlqArn", "destinationArn", "messagesBefore", "started",
                             "waited", "declined", "listed", "task", "audit"}
    assert set(document["task"]) == {"taskHandle", "status", "moved", "toMove", "failureReason", "startedAt"}
    assert document["task"]["failureReason"] == "AccessDenied on the destination"
    assert document["listed"] == [{"messageId": f"dlq-ord-{n}", "key": f"ord-{n}"} for n in (1, 2, 3)]


def expect_executions(stubbed: dict[str, Stubber], *, dry_run: bool) -> None:
    """FAILED: one without a DLQ record, one with (FailureRecorded), one too old; TIMED_OUT: one; ABORTED: one that
    Step Functions will not redrive. None claimed by the Reconciler."""
    sfn, dynamodb = stubbed["stepfunctions"], stubbed["dynamodb"]
    pages = {
        "FAILED": [listed("not-recorded", "FAILED", NOW - timedelta(hours=1)),
                   listed("recorded", "FAILED", NOW - timedelta(hours=2)),
                   listed("too-old", "FAILED", NOW - timedelta(days=20))],
        "TIMED_OUT": [listed("timed-out", "TIMED_OUT", NOW - timedelta(days=3))],
        "ABORTED": [listed("aborted", "ABORTED", NOW - timedelta(days=1))],
    }
    for status, executions in pages.items():
        sfn.add_response("list_executions", {"executions": executions},
                         {"stateMachineArn": STATE_MACHINE, "statusFilter": status, "maxResults": 100})
    not_recorded = described("not-recorded", "FAILED", NOW - timedelta(hours=1), "SQS.AmazonSQSException")
    timed_out = described("timed-out", "TIMED_OUT", NOW - timedelta(days=3))
    # The list: each one described, and the claim of each that could be redriven read
    describe(sfn, not_recorded)
    claim(dynamodb, "not-recorded")
    describe(sfn, described("recorded", "FAILED", NOW - timedelta(hours=2), "FailureRecorded"))
    describe(sfn, timed_out)
    claim(dynamodb, "timed-out")
    describe(sfn, described("aborted", "ABORTED", NOW - timedelta(days=1), redrive_status="NOT_REDRIVABLE",
                            reason="Execution history has more than 24,999 events"))
    claim(dynamodb, "aborted")
    if dry_run:
        return
    # Then, just before each RedriveExecution, described and its claim read again
    describe(sfn, not_recorded)
    claim(dynamodb, "not-recorded")
    sfn.add_response("redrive_execution", {"redriveDate": NOW}, {"executionArn": execution_arn("not-recorded")})
    describe(sfn, timed_out)
    claim(dynamodb, "timed-out")
    sfn.add_client_error("redrive_execution", "ExecutionLimitExceeded", "too many running executions",
                         expected_params={"executionArn": execution_arn("timed-out")})


def test_executions_redrive_redrives_what_step_functions_allows_within_14_days(stubbed: dict[str, Stubber]) -> None:
    expect_executions(stubbed, dry_run=False)
    sfn, claims = stubbed["stepfunctions"].client, Claims(stubbed["dynamodb"].client, DELIVERIES)  # type: ignore[arg-type]
    request = ExecutionRedriveRequest(STATE_MACHINE, NOW)
    done: list[str] = []

    planned = plan_executions(sfn, claims, request)  # type: ignore[arg-type]
    outcomes = redrive_planned(sfn, claims, request, planned, lambda: None,  # type: ignore[arg-type]
                               lambda o: done.append(o.execution_arn))

    verdicts = {o.execution_arn.rsplit(":", 1)[1]: o.verdict for o in outcomes}
    assert verdicts == {
        "not-recorded": RedriveVerdict.REDRIVEN,
        "recorded": RedriveVerdict.IN_FAILURE_DLQ,  # the order is in the failure DLQ: `failures redrive` handles it
        "timed-out": RedriveVerdict.REDRIVE_FAILED,
        "aborted": RedriveVerdict.NOT_REDRIVABLE,
    }
    assert outcomes[0].redrive_date == NOW
    assert "24,999" in (outcomes[3].reason or "")
    assert done == [execution_arn("not-recorded"), execution_arn("timed-out")]  # each RedriveExecution made


def test_cli_executions_redrive_dry_run_calls_no_redrive(stubbed: dict[str, Stubber], stubbed_cli: CliRunner) -> None:
    stack_outputs(stubbed)
    expect_executions(stubbed, dry_run=True)

    result = stubbed_cli.invoke(app, ["executions", "redrive", "--all", "--dry-run", "--json"])

    document = json.loads(result.stdout)
    assert result.exit_code == 8  # the aborted execution cannot be redriven: a script must notice
    assert set(document) == {"schema", "stack", "stateMachineArn", "dryRun", "complete", "summary", "items", "audit"}
    assert document["summary"] == {"redriven": 0, "wouldRedrive": 2, "inFailureDlq": 1, "reconciled": 0,
                                   "abortedByPerson": 0, "notRedrivable": 1, "redriveFailed": 0, "declined": 0}
    assert {frozenset(item) for item in document["items"]} == {frozenset(
        {"executionArn", "status", "stopDate", "error", "verdict", "reason", "redriveDate", "forced"})}
    assert document["audit"] == {"schema": "ff-ops/audit/v1", "log": "stderr", "actions": 0}


@pytest.mark.parametrize(("code", "exit_code", "error_type"), [
    ("AccessDenied", 5, "AccessDenied"),
    ("ExpiredToken", 5, "AccessDenied"),
    ("Throttling", 6, "Throttled"),
    ("InternalFailure", 7, "AwsError"),
])
def test_aws_errors_map_to_documented_exit_codes(stubbed: dict[str, Stubber], stubbed_cli: CliRunner, code: str,
                                                 exit_code: int, error_type: str) -> None:
    stubbed["cloudformation"].add_client_error("describe_stacks", code, f"{code} for the test", http_status_code=400)

    result = stubbed_cli.invoke(app, ["status", "--json"])

    assert result.exit_code == exit_code
    assert json.loads(result.stdout)["error"]["type"] == error_type
    assert code in result.stderr


def test_access_denied_while_redriving_stops_and_says_which_call(stubbed: dict[str, Stubber],
                                                                 stubbed_cli: CliRunner) -> None:
    stack_outputs(stubbed)
    stubbed["stepfunctions"].add_client_error("list_executions", "AccessDeniedException",
                                              "not authorized to perform: states:ListExecutions")

    result = stubbed_cli.invoke(app, ["executions", "redrive", "--all", "--yes"])

    assert result.exit_code == 5
    assert "ListExecutions was denied" in result.stderr and "IAM permissions" in result.stderr
