"""`status`: queue depths, oldest message ages, recent unsuccessful executions (each with its message's key, read
from the execution's input), the pipe's state, and self-healing (fire_and_forget/cli/healing_status.py)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from botocore.exceptions import ClientError

from fire_and_forget.cli.healing import policy_of
from fire_and_forget.cli.healing_status import HealingStatus, collect_healing
from fire_and_forget.cli.stack import (
    FIRE_AND_FORGET,
    HEALING_QUEUES,
    QUEUES,
    REQUEST_RESPONSE_QUEUES,
    DeployedStack,
)
from fire_and_forget.runtime.errors import error_code
from fire_and_forget.runtime.outputs import Output
from fire_and_forget.runtime.records import DEFAULT_KEY_FIELD, input_keys

if TYPE_CHECKING:
    from mypy_boto3_cloudwatch.type_defs import MetricDataQueryTypeDef

    from fire_and_forget.cli.aws import Clients

UNSUCCESSFUL = ("FAILED", "TIMED_OUT", "ABORTED")
# The AWS/States metric counting each unsuccessful end (dimension StateMachineArn): what `status` counts for an Express
# workflow, whose executions ListExecutions does not list.
ENDED_METRIC = {"FAILED": "ExecutionsFailed", "TIMED_OUT": "ExecutionsTimedOut", "ABORTED": "ExecutionsAborted"}
_MAX_LISTED = 1000  # per status; counts beyond are reported as truncated


@dataclass(frozen=True)
class QueueStatus:
    output_key: str
    label: str
    url: str
    visible: int
    in_flight: int
    delayed: int
    oldest_age_seconds: float | None  # CloudWatch's ApproximateAgeOfOldestMessage; None without a datapoint


@dataclass(frozen=True)
class PipeStatus:
    name: str
    current_state: str | None
    desired_state: str | None
    state_reason: str | None


@dataclass(frozen=True)
class ExecutionSummary:
    execution_arn: str
    name: str
    status: str
    start_date: datetime
    stop_date: datetime | None
    message_id: str | None = None  # of the SQS message the execution started from (its input's first record)
    key: str | None = None  # that message's key: its body's value of the stack's key field


@dataclass
class StackStatus:
    stack: str
    region: str
    window: timedelta
    queues: list[QueueStatus]
    pipe: PipeStatus
    counts: dict[str, int] = field(default_factory=dict)
    counts_truncated: bool = False
    recent: list[ExecutionSummary] = field(default_factory=list)
    healing: HealingStatus | None = None  # None: the stack has no HealingPolicy output (deployed before it)
    key_field: str = DEFAULT_KEY_FIELD  # the body field each recent execution's key was read from
    invocation_type: str = FIRE_AND_FORGET
    counted_from: str = "executions"  # or "metrics": REQUEST_RESPONSE, whose Express executions cannot be listed


def collect_status(clients: Clients, stack: DeployedStack, now: datetime, window: timedelta = timedelta(hours=24),
                   recent_limit: int = 10) -> StackStatus:
    """Everything `status` shows, read from the resources the stack's outputs name."""
    watched = REQUEST_RESPONSE_QUEUES if stack.request_response else tuple(QUEUES)
    named = dict(zip(watched, stack.require(*watched), strict=True)) | stack.healing_queues
    state_machine_arn, pipe_name = stack.require(Output.STATE_MACHINE_ARN, Output.PIPE_NAME)
    urls = list(named.values())
    ages = _oldest_ages(clients, urls, now)
    queues = [_queue(clients, key, url, ages.get(url)) for key, url in named.items()]
    status = StackStatus(stack.name, clients.region, window, queues, _pipe(clients, pipe_name),
                         key_field=stack.key_field, invocation_type=stack.invocation_type)
    if stack.request_response:
        status.counts, status.counted_from = _ended_from_metrics(clients, state_machine_arn, now, window), "metrics"
        return status
    cutoff = now - window
    for execution_status in UNSUCCESSFUL:
        found, truncated = _stopped_since(clients, state_machine_arn, execution_status, cutoff)
        status.counts[execution_status] = len(found)
        status.counts_truncated |= truncated
        status.recent.extend(found)
    status.recent.sort(key=lambda e: e.stop_date or e.start_date, reverse=True)
    del status.recent[recent_limit:]
    status.recent = [_with_key(clients, e, stack.key_field) for e in status.recent]
    policy = policy_of(stack)
    if policy is not None:
        status.healing = collect_healing(clients, stack, policy, now, window)
    return status


def _with_key(clients: Clients, execution: ExecutionSummary, key_field: str) -> ExecutionSummary:
    """ListExecutions gives no input: DescribeExecution of each listed execution does."""
    described = clients.sfn.describe_execution(executionArn=execution.execution_arn)
    message_id, key = input_keys(described.get("input"), key_field)
    return replace(execution, message_id=message_id, key=key)


def _queue(clients: Clients, key: str, url: str, age: float | None) -> QueueStatus:
    attributes = clients.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=[
        "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed",
    ])["Attributes"]
    return QueueStatus(
        output_key=key,
        label=(QUEUES | HEALING_QUEUES)[key],
        url=url,
        visible=int(attributes.get("ApproximateNumberOfMessages", "0")),
        in_flight=int(attributes.get("ApproximateNumberOfMessagesNotVisible", "0")),
        delayed=int(attributes.get("ApproximateNumberOfMessagesDelayed", "0")),
        oldest_age_seconds=age,
    )


def _oldest_ages(clients: Clients, urls: list[str], now: datetime) -> dict[str, float]:
    """SQS reports the oldest message's age only as a CloudWatch metric (every minute, absent when empty)."""
    queries: list[MetricDataQueryTypeDef] = [
        {
            "Id": f"q{index}",
            "MetricStat": {
                "Metric": {"Namespace": "AWS/SQS", "MetricName": "ApproximateAgeOfOldestMessage",
                           "Dimensions": [{"Name": "QueueName", "Value": url.rsplit("/", 1)[1]}]},
                "Period": 60,
                "Stat": "Maximum",
            },
            "ReturnData": True,
        }
        for index, url in enumerate(urls)
    ]
    results = clients.cloudwatch.get_metric_data(MetricDataQueries=queries, StartTime=now - timedelta(minutes=15),
                                                 EndTime=now, ScanBy="TimestampDescending")["MetricDataResults"]
    ages = {}
    for result in results:
        values = result.get("Values", [])
        if values:
            ages[urls[int(result["Id"][1:])]] = float(values[0])
    return ages


def _pipe(clients: Clients, name: str) -> PipeStatus:
    try:
        pipe = clients.pipes.describe_pipe(Name=name)
    except ClientError as error:
        if error_code(error) != "NotFoundException":
            raise
        return PipeStatus(name, "NOT_FOUND", None, "the stack's pipe does not exist")
    return PipeStatus(name, pipe.get("CurrentState"), pipe.get("DesiredState"), pipe.get("StateReason"))


def _stopped_since(clients: Clients, state_machine_arn: str, status: str,
                   cutoff: datetime) -> tuple[list[ExecutionSummary], bool]:
    found: list[ExecutionSummary] = []
    for page in clients.sfn.get_paginator("list_executions").paginate(
            stateMachineArn=state_machine_arn, statusFilter=status,  # type: ignore[arg-type]
            PaginationConfig={"PageSize": 100}):
        for item in page["executions"]:
            stop = item.get("stopDate")
            if stop is not None and stop >= cutoff:
                found.append(ExecutionSummary(item["executionArn"], item["name"], item["status"],
                                              item["startDate"], stop))
        if len(found) >= _MAX_LISTED:
            return found[:_MAX_LISTED], True
        if page["executions"] and page["executions"][-1]["startDate"] < cutoff - timedelta(days=1):
            break
    return found, False


def _ended_from_metrics(clients: Clients, state_machine_arn: str, now: datetime,
                        window: timedelta) -> dict[str, int]:
    """Each unsuccessful end's count over the window, from the workflow's AWS/States metrics (Sum; a period a whole
    number of minutes, as GetMetricData takes)."""
    period = max(60, -(-int(window.total_seconds()) // 60) * 60)
    queries: list[MetricDataQueryTypeDef] = [
        {
            "Id": f"e{index}",
            "MetricStat": {
                "Metric": {"Namespace": "AWS/States", "MetricName": ENDED_METRIC[execution_status],
                           "Dimensions": [{"Name": "StateMachineArn", "Value": state_machine_arn}]},
                "Period": period,
                "Stat": "Sum",
            },
            "ReturnData": True,
        }
        for index, execution_status in enumerate(UNSUCCESSFUL)
    ]
    results = clients.cloudwatch.get_metric_data(MetricDataQueries=queries, StartTime=now - timedelta(seconds=period),
                                                 EndTime=now)["MetricDataResults"]
    counted = {result["Id"]: int(sum(result.get("Values", []))) for result in results}
    return {execution_status: counted.get(f"e{index}", 0) for index, execution_status in enumerate(UNSUCCESSFUL)}
