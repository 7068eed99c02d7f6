"""`source-dlq redrive` and `executions redrive`, and the AccessDenied / throttling exits, with botocore's Stubber.

moto 5.2.5 implements neither SQS StartMessageMoveTask / ListMessageMoveTasks nor Step Functions RedriveExecution
(nor DescribeExecution's redriveStatus), so these tests give the clients the documented request and response shapes
through botocore.stub.Stubber, which also checks every request against the service model. Each test asserts what
the command decides and reports, and `assert_no_pending_responses` proves every documented call was made.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from typer.testing import CliRunner

import fire_and_forget.cli.cli_common
from fire_and_forget.cli.app import app
from fire_and_forget.cli.aws import Clients
from fire_and_forget.cli.executions import ExecutionRedriveRequest, RedriveVerdict, redrive_executions
from fire_and_forget.cli.source_dlq import MoveTask, redrive_source_dlq

REGION = "us-east-1"
ACCOUNT = "123456789012"
STATE_MACHINE = f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:OrderSaga"
DLQ_URL = f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/FireAndForget-SourceDlq"
DLQ_ARN = f"arn:aws:sqs:{REGION}:{ACCOUNT}:FireAndForget-SourceDlq"
SOURCE_URL = f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/FireAndForget-SourceQueue"
SOURCE_ARN = f"arn:aws:sqs:{REGION}:{ACCOUNT}:FireAndForget-SourceQueue"
NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
OUTPUTS = {"SourceQueueUrl": SOURCE_URL, "SourceDlqUrl": DLQ_URL, "StateMachineArn": STATE_MACHINE}


def execution_arn(name: str) -> str:
    return f"arn:aws:states:{REGION}:{ACCOUNT}:execution:OrderSaga:{name}"


@pytest.fixture
def stubbed() -> Iterator[dict[str, Stubber]]:
    """Stubbed clients for every service ff-ops calls, handed to the CLI instead of real ones."""
    clients = {name: boto3.client(name, region_name=REGION)  # type: ignore[call-overload]
               for name in ("cloudformation", "sqs", "stepfunctions", "pipes", "cloudwatch")}
    stubbers = {name: Stubber(client) for name, client in clients.items()}
    for stubber in stubbers.values():
        stubber.activate()
    yield stubbers
    for stubber in stubbers.values():
        stubber.assert_no_pending_responses()
        stubber.deactivate()


@pytest.fixture
def cli(stubbed: dict[str, Stubber], monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    clients = Clients(REGION, *(stubbed[n].client for n in  # type: ignore[arg-type]
                                ("cloudformation", "sqs", "stepfunctions", "pipes", "cloudwatch")))
    monkeypatch.setattr(fire_and_forget.cli.cli_common, "connect", lambda **_: clients)
    monkeypatch.setattr(fire_and_forget.cli.cli_common, "now", lambda: NOW)
    return CliRunner()


def stack_outputs(stubbed: dict[str, Stubber], outputs: dict[str, str] | None = None) -> None:
    stubbed["cloudformation"].add_response("describe_stacks", {"Stacks": [{
        "StackName": "FireAndForget", "StackStatus": "UPDATE_COMPLETE", "CreationTime": NOW,
        "Outputs": [{"OutputKey": k, "OutputValue": v} for k, v in (outputs or OUTPUTS).items()]}]},
        {"StackName": "FireAndForget"})


def move_task(status: str, moved: int, **extra: Any) -> dict[str, Any]:
    return {"Results": [{"TaskHandle": "handle-1", "Status": status, "SourceArn": DLQ_ARN, "DestinationArn": SOURCE_ARN,
                         "ApproximateNumberOfMessagesMoved": moved, "ApproximateNumberOfMessagesToMove": 3,
                         "StartedTimestamp": 1_795_000_000_000, **extra}]}


def expect_move(sqs: Stubber, depth: int, *tasks: dict[str, Any], start: bool = True) -> None:
    sqs.add_response("get_queue_attributes", {"Attributes": {"ApproximateNumberOfMessages": str(depth)}},
                     {"QueueUrl": DLQ_URL, "AttributeNames": ["ApproximateNumberOfMessages"]})
    listing = {"SourceArn": DLQ_ARN, "MaxResults": 1}
    sqs.add_response("list_message_move_tasks", tasks[0] if not start else {"Results": []}, listing)
    if start:
        sqs.add_response("start_message_move_task", {"TaskHandle": "handle-1"},
                         {"SourceArn": DLQ_ARN, "DestinationArn": SOURCE_ARN})
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


def test_cli_source_dlq_redrive_reports_a_failed_task_with_exit_8(stubbed: dict[str, Stubber], cli: CliRunner) -> None:
    stack_outputs(stubbed)
    queue_arns(stubbed["sqs"])
    expect_move(stubbed["sqs"], 3, move_task("FAILED", 1, FailureReason="AccessDenied on the destination"))

    result = cli.invoke(app, ["source-dlq", "redrive", "--json", "--poll-seconds", "0"])

    document = json.loads(result.stdout)
    assert result.exit_code == 8
    assert set(document) == {"schema", "stack", "sourceDlqArn", "destinationArn", "messagesBefore", "started",
                             "waited", "task"}
    assert set(document["task"]) == {"taskHandle", "status", "moved", "toMove", "failureReason", "startedAt"}
    assert document["task"]["failureReason"] == "AccessDenied on the destination"


def listed(name: str, status: str, stopped: datetime) -> dict[str, Any]:
    return {"executionArn": execution_arn(name), "stateMachineArn": STATE_MACHINE, "name": name, "status": status,
            "startDate": stopped - timedelta(minutes=5), "stopDate": stopped}


def described(name: str, status: str, stopped: datetime, error: str | None = None,
              redrive_status: str = "REDRIVABLE", reason: str | None = None) -> dict[str, Any]:
    response = listed(name, status, stopped) | {"input": "[]", "redriveCount": 0, "redriveStatus": redrive_status}
    if error:
        response["error"] = error
    if reason:
        response["redriveStatusReason"] = reason
    return response


def expect_executions(sfn: Stubber, *, dry_run: bool) -> None:
    """FAILED: one without a DLQ record, one with (FailureRecorded), one too old; TIMED_OUT: one; ABORTED: one that
    Step Functions will not redrive."""
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

    def describe(name: str, response: dict[str, Any]) -> None:
        sfn.add_response("describe_execution", response, {"executionArn": execution_arn(name)})

    describe("not-recorded", described("not-recorded", "FAILED", NOW - timedelta(hours=1), "SQS.AmazonSQSException"))
    if not dry_run:
        sfn.add_response("redrive_execution", {"redriveDate": NOW}, {"executionArn": execution_arn("not-recorded")})
    describe("recorded", described("recorded", "FAILED", NOW - timedelta(hours=2), "FailureRecorded"))
    describe("timed-out", described("timed-out", "TIMED_OUT", NOW - timedelta(days=3)))
    if not dry_run:
        sfn.add_client_error("redrive_execution", "ExecutionLimitExceeded", "too many running executions",
                             expected_params={"executionArn": execution_arn("timed-out")})
    describe("aborted", described("aborted", "ABORTED", NOW - timedelta(days=1), redrive_status="NOT_REDRIVABLE",
                                  reason="Execution history has more than 24,999 events"))


def test_executions_redrive_redrives_what_step_functions_allows_within_14_days(stubbed: dict[str, Stubber]) -> None:
    sfn = stubbed["stepfunctions"]
    expect_executions(sfn, dry_run=False)

    outcomes = redrive_executions(sfn.client, ExecutionRedriveRequest(STATE_MACHINE, NOW))  # type: ignore[arg-type]

    verdicts = {o.execution_arn.rsplit(":", 1)[1]: o.verdict for o in outcomes}
    assert verdicts == {
        "not-recorded": RedriveVerdict.REDRIVEN,
        "recorded": RedriveVerdict.IN_FAILURE_DLQ,  # the order is in the failure DLQ: `failures redrive` handles it
        "timed-out": RedriveVerdict.REDRIVE_FAILED,
        "aborted": RedriveVerdict.NOT_REDRIVABLE,
    }
    assert outcomes[0].redrive_date == NOW
    assert "24,999" in (outcomes[3].reason or "")


def test_cli_executions_redrive_dry_run_calls_no_redrive(stubbed: dict[str, Stubber], cli: CliRunner) -> None:
    stack_outputs(stubbed)
    expect_executions(stubbed["stepfunctions"], dry_run=True)

    result = cli.invoke(app, ["executions", "redrive", "--dry-run", "--json"])

    document = json.loads(result.stdout)
    assert result.exit_code == 8  # the aborted execution cannot be redriven: a script must notice
    assert set(document) == {"schema", "stack", "stateMachineArn", "dryRun", "complete", "summary", "items"}
    assert document["summary"] == {"redriven": 0, "wouldRedrive": 2, "inFailureDlq": 1, "notRedrivable": 1,
                                   "redriveFailed": 0}
    assert {frozenset(item) for item in document["items"]} == {frozenset(
        {"executionArn", "status", "stopDate", "error", "verdict", "reason", "redriveDate"})}


@pytest.mark.parametrize(("code", "exit_code", "error_type"), [
    ("AccessDenied", 5, "AccessDenied"),
    ("ExpiredToken", 5, "AccessDenied"),
    ("Throttling", 6, "Throttled"),
    ("InternalFailure", 7, "AwsError"),
])
def test_aws_errors_map_to_documented_exit_codes(stubbed: dict[str, Stubber], cli: CliRunner, code: str,
                                                 exit_code: int, error_type: str) -> None:
    stubbed["cloudformation"].add_client_error("describe_stacks", code, f"{code} for the test", http_status_code=400)

    result = cli.invoke(app, ["status", "--json"])

    assert result.exit_code == exit_code
    assert json.loads(result.stdout)["error"]["type"] == error_type
    assert code in result.stderr


def test_access_denied_while_redriving_stops_and_says_which_call(stubbed: dict[str, Stubber], cli: CliRunner) -> None:
    stack_outputs(stubbed)
    stubbed["stepfunctions"].add_client_error("list_executions", "AccessDeniedException",
                                              "not authorized to perform: states:ListExecutions")

    result = cli.invoke(app, ["executions", "redrive"])

    assert result.exit_code == 5
    assert "ListExecutions was denied" in result.stderr and "IAM permissions" in result.stderr
