"""The CloudWatch metrics AWS would publish for what happened in a rehearsal, put into moto's CloudWatch.

moto's Step Functions, Lambda, SQS, EventBridge and the emulated pipe publish no metrics, and moto's CloudWatch
stores alarms but never evaluates them: an alarm stays in the state it was created with. So the rehearsal
publishes the data points each service documents, with that service's namespace, metric name and dimensions (each
cited below), and a test evaluates an alarm's definition against them. They are handed to moto's CloudWatch backend
as its PutMetricData action would hand them (validated by the backend, timestamps in naive UTC as moto's parser
leaves them), not through botocore: AWS's services publish their own metrics without the public API, and the
request path (serializing, signing, parsing) cost more than the rehearsal's quiet rounds' other work together.

Counts are published once per occurrence (value 1) or as the number that happened since the last publication;
CloudWatch aggregates either the same way under Sum. Gauges (queue depth, message age) are sampled when `run()`
ends, as CloudWatch's one-minute sample would see the queues then.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from moto.cloudwatch.models import cloudwatch_backends
from moto.core.exceptions import JsonRESTError
from moto.sqs.models import sqs_backends

from fire_and_forget.rehearsal.execution_events import EventBus
from fire_and_forget.rehearsal.lambda_runtime import LambdaRuntime
from fire_and_forget.rehearsal.pipe import PipeEmulator

# https://docs.aws.amazon.com/step-functions/latest/dg/procedure-cw-metrics.html ("Execution metrics"):
# namespace AWS/States, dimension StateMachineArn, unit Count; one per execution that started and one per end state.
STATES = "AWS/States"
EXECUTION_ENDED = {"SUCCEEDED": "ExecutionsSucceeded", "FAILED": "ExecutionsFailed",
                   "TIMED_OUT": "ExecutionsTimedOut", "ABORTED": "ExecutionsAborted"}
# https://docs.aws.amazon.com/lambda/latest/dg/monitoring-metrics-types.html: namespace AWS/Lambda, dimension
# FunctionName. Errors counts invocations that ended in a function error: the code's exceptions and the runtime's
# (timeouts, crashes). Throttles counts throttled invocation requests, which count as neither Invocations nor
# Errors; nor do the Lambda service's own 5xx errors.
LAMBDA = "AWS/Lambda"
# https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-available-cloudwatch-metrics.html:
# namespace AWS/SQS, dimension QueueName; ApproximateNumberOfMessagesVisible (messages available for retrieval) and
# ApproximateAgeOfOldestMessage (seconds), sampled.
SQS = "AWS/SQS"
# https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-pipes-monitoring.html: namespace AWS/EventBridge/Pipes,
# dimension PipeName; ExecutionFailed counts the pipe executions that failed (here: StartExecution refused).
PIPES = "AWS/EventBridge/Pipes"
# https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-monitoring.html: namespace AWS/Events, dimension
# RuleName (a rule on the default bus). Invocations counts target invocations; FailedInvocations those that failed
# permanently, after the retries; InvocationsSentToDlq those moved to the target's dead-letter queue.
EVENTS = "AWS/Events"
# https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html:
# each metric a handler prints in EMF becomes a data point in the directive's namespace, once per dimension set,
# at the document's Timestamp.
MAX_DATA_PER_CALL = 1000  # PutMetricData's limit of metrics per request


class ServiceMetrics:
    """Publishes the rehearsal's metrics; `execution_finished` per execution, `publish` when a run ends.

    The executions' data points carry their own timestamps, so they are sent together: when a run ends (`publish`,
    before anything reads them), or as soon as they fill a PutMetricData request."""

    def __init__(self, runtime: LambdaRuntime, pipe: PipeEmulator, bus: EventBus, *,
                 function_names: dict[str, str], queue_urls: Iterable[str], account: str, region: str) -> None:
        self._cloudwatch = cloudwatch_backends[account][region]
        self._runtime = runtime
        self._pipe = pipe
        self._bus = bus
        self._functions = {task: name for name, task in function_names.items()}  # task -> physical name
        self._queues = [url.rsplit("/", 1)[1] for url in queue_urls]
        self._sqs = sqs_backends[account][region]
        self._throttles = _ThrottleCounter(runtime)
        # What was published already: each publication covers what happened since the one before.
        self._invocations = self._documents = self._deliveries = self._start_failures = 0
        self._throttled: Counter[str] = Counter()
        self._ended: list[dict[str, Any]] = []  # the executions' data not sent yet
        self._ended_lock = threading.Lock()

    # -- per execution ---------------------------------------------------------------------------------------

    def execution_finished(self, described: dict[str, Any]) -> None:
        """ExecutionsStarted at its start and the end state's count at its stop (a DescribeExecution response)."""
        dimensions = [{"Name": "StateMachineArn", "Value": described["stateMachineArn"]}]
        stopped = described.get("stopDate") or datetime.now(UTC)
        with self._ended_lock:
            self._ended += [_count("ExecutionsStarted", dimensions, 1, described.get("startDate") or stopped),
                            _count(EXECUTION_ENDED[described["status"]], dimensions, 1, stopped)]
            full = len(self._ended) >= MAX_DATA_PER_CALL
        if full:
            self._send_ended()

    def _send_ended(self) -> None:
        with self._ended_lock:
            data, self._ended = self._ended, []
        self._put(STATES, data)

    # -- per run -----------------------------------------------------------------------------------------------

    def publish(self) -> None:
        """Everything that happened since the last publication, and a sample of every queue."""
        now = datetime.now(UTC)
        self._send_ended()
        self._publish_lambda(now)
        self._publish_pipe(now)
        self._publish_rules(now)
        self._publish_emf()
        self.sample_queues(now)

    def sample_queues(self, at: datetime | None = None) -> None:
        """Depth and oldest-message age of every queue, as CloudWatch samples them; `at` compresses time like the
        rehearsal's retry clock does (a sample taken as if that much time had passed, for an age threshold)."""
        at = at or datetime.now(UTC)
        data = []
        for name in self._queues:
            visible = self._sqs.get_queue(name).messages  # moto's visible, undelayed messages
            oldest = min((int(message.sent_timestamp or 0) for message in visible), default=None)
            age = 0.0 if oldest is None else max(0.0, at.timestamp() - oldest / 1000)
            dimensions = [{"Name": "QueueName", "Value": name}]
            data.append(_count("ApproximateNumberOfMessagesVisible", dimensions, len(visible), at))
            data.append({**_count("ApproximateAgeOfOldestMessage", dimensions, round(age), at), "Unit": "Seconds"})
        self._put(SQS, data)

    def _publish_lambda(self, now: datetime) -> None:
        invocations = self._runtime.invocations[self._invocations:]
        self._invocations += len(invocations)
        throttled = self._throttles.snapshot() - self._throttled
        self._throttled += throttled
        invoked = Counter(self._functions.get(i.task, i.task) for i in invocations)
        errors = Counter(self._functions.get(i.task, i.task) for i in invocations if i.error_type is not None)
        data = []
        for name in sorted(set(invoked) | set(throttled)):
            dimensions = [{"Name": "FunctionName", "Value": name}]
            data += [_count("Invocations", dimensions, invoked[name], now),
                     _count("Errors", dimensions, errors[name], now),
                     _count("Throttles", dimensions, throttled[name], now)]
        self._put(LAMBDA, data)

    def _publish_pipe(self, now: datetime) -> None:
        failures = self._pipe.stats.start_failures - self._start_failures
        self._start_failures += failures
        if failures:
            self._put(PIPES, [_count("ExecutionFailed", [{"Name": "PipeName", "Value": self._pipe.definition.name}],
                                     failures, now)])

    def _publish_rules(self, now: datetime) -> None:
        deliveries = self._bus.deliveries[self._deliveries:]
        self._deliveries += len(deliveries)
        data = []
        for rule in sorted({delivery.rule for delivery in deliveries}):
            dimensions = [{"Name": "RuleName", "Value": rule}]
            mine = [delivery for delivery in deliveries if delivery.rule == rule]
            failed = sum(1 for delivery in mine if not delivery.delivered)
            data.append(_count("Invocations", dimensions, len(mine), now))
            if failed:  # EventBridge sends FailedInvocations only when it is not zero
                data += [_count("FailedInvocations", dimensions, failed, now),
                         _count("InvocationsSentToDlq", dimensions, failed, now)]
        self._put(EVENTS, data)

    def _publish_emf(self) -> None:
        documents = self._runtime.metric_documents[self._documents:]
        self._documents += len(documents)
        by_namespace: dict[str, list[dict[str, Any]]] = {}
        for document in documents:
            for namespace, datum in emf_data(document):
                by_namespace.setdefault(namespace, []).append(datum)
        for namespace, data in by_namespace.items():
            self._put(namespace, data)

    def _put(self, namespace: str, data: list[dict[str, Any]]) -> None:
        for start in range(0, len(data), MAX_DATA_PER_CALL):
            self._cloudwatch.put_metric_data(namespace, [
                {**datum, "Timestamp": datum["Timestamp"].astimezone(UTC).replace(tzinfo=None)}
                for datum in data[start:start + MAX_DATA_PER_CALL]])


def emf_data(document: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(namespace, PutMetricData datum) for every metric value of one EMF document, per its dimension sets."""
    directives = document["_aws"]
    at = datetime.fromtimestamp(int(directives["Timestamp"]) / 1000, UTC)
    found = []
    for directive in directives.get("CloudWatchMetrics", []):
        for dimension_set in directive.get("Dimensions", []) or [[]]:
            dimensions = [{"Name": key, "Value": str(document[key])} for key in dimension_set]
            for metric in directive.get("Metrics", []):
                values = document.get(metric["Name"])
                for value in values if isinstance(values, list) else [values]:
                    if isinstance(value, (int, float)):
                        datum = _count(metric["Name"], dimensions, value, at)
                        found.append((directive["Namespace"], {**datum, "Unit": metric.get("Unit", "None")}))
    return found


def _count(name: str, dimensions: list[dict[str, str]], value: float, at: datetime) -> dict[str, Any]:
    return {"MetricName": name, "Dimensions": dimensions, "Value": float(value), "Timestamp": at, "Unit": "Count"}


class _ThrottleCounter:
    """Throttled invocations per function name.

    A throttle is answered with a 429 before any handler runs, so `LambdaRuntime.invocations` (what the functions
    ran) never sees it; this wraps the runtime's invoke to count the 429s it returns, by function name.
    """

    def __init__(self, runtime: LambdaRuntime) -> None:
        self._counts: Counter[str] = Counter()
        self._lock = threading.Lock()
        invoke = runtime.invoke

        def counting_invoke(backend: Any, function_name: str, qualifier: str | None, body: Any,
                            response_headers: dict[str, str]) -> bytes:
            try:
                return invoke(backend, function_name, qualifier, body, response_headers)
            except JsonRESTError as error:
                if error.code == 429:
                    with self._lock:
                        self._counts[backend.get_function(function_name, qualifier).function_name] += 1
                raise

        runtime.invoke = counting_invoke  # type: ignore[method-assign]

    def snapshot(self) -> Counter[str]:
        with self._lock:
            return Counter(self._counts)
