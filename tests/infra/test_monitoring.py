"""Alarms, the composite, the dashboard and the Slack channel: each bound to this stack's resources."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from fire_and_forget.construct.alert_path import ALERT_PATH_ALARMS
from fire_and_forget.construct.monitoring import SUSTAINED_PERIODS
from stacks.orders.tasks import ORDER_METRICS, TASKS
from tests.support.alarm_template import ALARM, alarm, dimensions, metric_stats
from tests.support.template import of_type, one, ref_or_att

LAMBDAS = Path(__file__).resolve().parents[2] / "lambdas" / "orders"
HEALING_CODE = Path(__file__).resolve().parents[2] / "src" / "fire_and_forget" / "healing"
FUNCTIONS = tuple(spec.construct_id for spec in TASKS)
QUEUES = {  # the runbook's name -> logical id prefix
    "PipelineSourceQueue": "PipelineSourceQueue4",
    "SourceDlq": "PipelineSourceQueueSourceDlq",
    "FailureDlq": "PipelineFailureHandlingFailureDlq",
    "FailureEventsQueue": "PipelineExecutionEventsFailureEventsQueue",
    "RuleTargetDlq": "PipelineExecutionEventsTargetDlq",
    "ReconcilerDlq": "PipelineExecutionEventsReconcilerDlq",
    "ScheduleDlq": "PipelineHealingScheduleDlq",
}
HEALING_SERVICE = "orders-healing"  # the Reconciler's and the Redriver's Powertools service (metric dimension)
HEALING_FUNCTIONS = {"Reconciler": "PipelineHealingReconcilerFunction", "Redriver": "PipelineHealingRedriverFunction"}
# alarm id -> (namespace, metric, dimension name, resource (type, id prefix), statistic, threshold)
MACHINE = ("AWS::StepFunctions::StateMachine", "PipelineWorkflow")
SINGLE_METRIC_ALARMS: dict[str, tuple[str, str, str, tuple[str, str], str, float]] = {
    "ExecutionsFailed": ("AWS/States", "ExecutionsFailed", "StateMachineArn", MACHINE, "Sum", 1),
    "ExecutionsTimedOut": ("AWS/States", "ExecutionsTimedOut", "StateMachineArn", MACHINE, "Sum", 1),
    "ExecutionsAborted": ("AWS/States", "ExecutionsAborted", "StateMachineArn", MACHINE, "Sum", 1),
    # The documented name is singular; CDK's metricThrottled() would emit "ExecutionsThrottled", never published.
    "ExecutionThrottled": ("AWS/States", "ExecutionThrottled", "StateMachineArn", MACHINE, "Sum", 1),
    "FailureDlqNotEmpty": ("AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName",
                           ("AWS::SQS::Queue", QUEUES["FailureDlq"]), "Maximum", 1),
    "SourceDlqNotEmpty": ("AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName",
                          ("AWS::SQS::Queue", QUEUES["SourceDlq"]), "Maximum", 1),
    # The Reconciler consumes the queue, so its depth is normally non-zero for a moment: the age says it is behind.
    "FailureEventsWaiting": ("AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName",
                             ("AWS::SQS::Queue", QUEUES["FailureEventsQueue"]), "Maximum", 600),
    "ReconcilerDlqNotEmpty": ("AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName",
                              ("AWS::SQS::Queue", QUEUES["ReconcilerDlq"]), "Maximum", 1),
    "ScheduleDlqNotEmpty": ("AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName",
                            ("AWS::SQS::Queue", QUEUES["ScheduleDlq"]), "Maximum", 1),
    "ReconcilerErrors": ("AWS/Lambda", "Errors", "FunctionName",
                         ("AWS::Lambda::Function", HEALING_FUNCTIONS["Reconciler"]), "Sum", 1),
    "RedriverErrors": ("AWS/Lambda", "Errors", "FunctionName",
                       ("AWS::Lambda::Function", HEALING_FUNCTIONS["Redriver"]), "Sum", 1),
    "RuleTargetDlqNotEmpty": ("AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName",
                              ("AWS::SQS::Queue", QUEUES["RuleTargetDlq"]), "Maximum", 1),
    "SourceQueueBacklog": ("AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName",
                           ("AWS::SQS::Queue", QUEUES["PipelineSourceQueue"]), "Maximum", 300),
    "PipeExecutionFailed": ("AWS/EventBridge/Pipes", "ExecutionFailed", "PipeName",
                            ("AWS::Pipes::Pipe", "PipelinePipe"), "Sum", 1),
    "PipeExecutionThrottled": ("AWS/EventBridge/Pipes", "ExecutionThrottled", "PipeName",
                               ("AWS::Pipes::Pipe", "PipelinePipe"), "Sum", 1),
    "RuleFailedInvocations": ("AWS/Events", "FailedInvocations", "RuleName",
                              ("AWS::Events::Rule", "PipelineExecutionEventsRule"), "Sum", 1),
    "AlertsTopicNotificationsFailed": ("AWS/SNS", "NumberOfNotificationsFailed", "TopicName",
                                       ("AWS::SNS::Topic", "PipelineFailureHandlingAlertsTopic"), "Sum", 1),
    "AlertPathNotificationsFailed": ("AWS/SNS", "NumberOfNotificationsFailed", "TopicName",
                                     ("AWS::SNS::Topic", "PipelineAlertPathAlertPathTopic"), "Sum", 1),
    **{
        f"{task}Throttles": ("AWS/Lambda", "Throttles", "FunctionName",
                             ("AWS::Lambda::Function", f"SagaTasks{task}Function"), "Sum", 1)
        for task in FUNCTIONS
    },
}
FUNCTION_ALARMS = {f"{task}{kind}" for task in FUNCTIONS for kind in ("UnexpectedErrors", "Throttles")}
# Alarms that stay on the dashboard without notifying while the automatic redrive is on.
SILENT_WITH_HEALING = ("FailureDlqNotEmpty", "SourceDlqNotEmpty")
SUSTAINED = ("ExecutionThrottled", "PipeExecutionThrottled")
EVERY_ALARM = {*SINGLE_METRIC_ALARMS, *FUNCTION_ALARMS, "FailureRate", "FailuresNeedAPerson", "FailuresOverdue",
               "SourceDlqNeedsAPerson"}


@pytest.fixture(scope="module")
def topic_id(template: dict[str, Any]) -> str:
    return one(template, "AWS::SNS::Topic", "PipelineFailureHandlingAlertsTopic")[0]


@pytest.fixture(scope="module")
def composite(template: dict[str, Any]) -> dict[str, Any]:
    props: dict[str, Any] = one(template, "AWS::CloudWatch::CompositeAlarm", "PipelineMonitoringTasksUnhealthy")[1][
        "Properties"]
    return props


def test_every_alarm_is_one_this_file_checks(template: dict[str, Any]) -> None:
    ids = set(of_type(template, ALARM))
    assert len(ids) == len(EVERY_ALARM)
    for alarm_id in EVERY_ALARM:
        alarm(template, alarm_id)  # exactly one resource per expected alarm


@pytest.mark.parametrize("alarm_id", sorted(SINGLE_METRIC_ALARMS))
def test_single_metric_alarm(template: dict[str, Any], topic_id: str, alarm_id: str) -> None:
    namespace, name, dimension, (resource_type, prefix), statistic, threshold = SINGLE_METRIC_ALARMS[alarm_id]
    _, props = alarm(template, alarm_id)
    (metric_stat,) = metric_stats(props).values()
    assert metric_stat["Metric"]["Namespace"] == namespace
    assert metric_stat["Metric"]["MetricName"] == name
    values = dimensions(metric_stat)
    assert set(values) == {dimension}
    assert ref_or_att(values[dimension]) == one(template, resource_type, prefix)[0]
    assert metric_stat["Stat"] == statistic
    assert metric_stat["Period"] == 300
    assert props["Threshold"] == threshold
    assert props["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    # Throttling alarms look for throttling that lasts (three periods in a row, every one breaching), the rest at one.
    periods = SUSTAINED_PERIODS if alarm_id in SUSTAINED else 1
    assert (props["EvaluationPeriods"], props["DatapointsToAlarm"]) == (periods, periods)
    # Every metric here is absent when nothing happened (and FailedInvocations whenever it is zero).
    assert props["TreatMissingData"] == "notBreaching"
    if alarm_id in FUNCTION_ALARMS:
        assert "AlarmActions" not in props  # reported through the composite
    elif alarm_id in SILENT_WITH_HEALING:
        assert "AlarmActions" not in props  # the *NeedsAPerson alarms notify for what a person must handle
    elif alarm_id in ALERT_PATH_ALARMS:  # about the alerting itself: the second channel too
        second = one(template, "AWS::SNS::Topic", "PipelineAlertPath")[0]
        assert props["AlarmActions"] == [{"Ref": topic_id}, {"Ref": second}]
    else:
        assert props["AlarmActions"] == [{"Ref": topic_id}]
    assert "docs/runbook.md#" in props["AlarmDescription"]


def test_failure_rate_is_failed_over_started_guarded_by_a_minimum(template: dict[str, Any], topic_id: str) -> None:
    _, props = alarm(template, "FailureRate")
    (expression,) = [m for m in props["Metrics"] if "Expression" in m]
    assert expression["ReturnData"] is True
    assert expression["Expression"] == (
        "IF(FILL(started, 0) >= 20, 100 * (FILL(failed, 0) + FILL(timedOut, 0) + FILL(aborted, 0)) / started, 0)"
    )
    machine_id = one(template, *MACHINE)[0]
    stats = metric_stats(props)
    assert {k: v["Metric"]["MetricName"] for k, v in stats.items()} == {
        "started": "ExecutionsStarted", "failed": "ExecutionsFailed", "timedOut": "ExecutionsTimedOut",
        "aborted": "ExecutionsAborted",
    }
    for stat in stats.values():
        assert stat["Metric"]["Namespace"] == "AWS/States"
        assert ref_or_att(dimensions(stat)["StateMachineArn"]) == machine_id
        assert (stat["Stat"], stat["Period"]) == ("Sum", 3600)
    assert props["Threshold"] == 5
    assert props["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    assert props["TreatMissingData"] == "notBreaching"
    assert props["AlarmActions"] == [{"Ref": topic_id}]


@pytest.mark.parametrize(("alarm_id", "gauge"), [("FailuresNeedAPerson", "FailuresNeedingAPerson"),
                                                 ("FailuresOverdue", "FailuresOverdue")])
def test_the_redriver_s_gauges_alarm_and_its_silence_breaches(template: dict[str, Any], topic_id: str,
                                                               alarm_id: str, gauge: str) -> None:
    """The Redriver publishes, each run, how many failure-DLQ records no automatic retry will heal, and how many wait
    past their due time (gauges): each alarm fires on the maximum, so one such record alarms until it is dealt with;
    over two Redriver periods, and missing data breaches: a Redriver that stopped reporting needs a person too, and
    leaves every waiting record overdue."""
    _, props = alarm(template, alarm_id)
    (metric_stat,) = metric_stats(props).values()
    assert metric_stat["Metric"]["Namespace"] == "FireAndForget"
    assert metric_stat["Metric"]["MetricName"] == gauge
    assert dimensions(metric_stat) == {"service": HEALING_SERVICE}
    assert (metric_stat["Stat"], metric_stat["Period"]) == ("Maximum", 600)
    assert (props["Threshold"], props["ComparisonOperator"]) == (1, "GreaterThanOrEqualToThreshold")
    assert props["TreatMissingData"] == "breaching"
    assert props["AlarmActions"] == [{"Ref": topic_id}]
    assert "docs/runbook.md#" in props["AlarmDescription"]


def test_what_the_redriver_left_in_the_source_dlq_alarms_and_its_silence_does_not_twice(
        template: dict[str, Any], topic_id: str) -> None:
    """The Redriver also counts, each run, the source DLQ's messages whose automatic attempts are spent: one alarms
    until a person deals with it. A Redriver that stopped reporting is FailuresNeedAPerson's to tell (missing data
    breaches there), so here it does not."""
    _, props = alarm(template, "SourceDlqNeedsAPerson")
    (metric_stat,) = metric_stats(props).values()
    assert (metric_stat["Metric"]["MetricName"], dimensions(metric_stat)) == (
        "SourceDlqNeedingAPerson", {"service": HEALING_SERVICE})
    assert (metric_stat["Stat"], metric_stat["Period"]) == ("Maximum", 600)
    assert (props["Threshold"], props["ComparisonOperator"]) == (1, "GreaterThanOrEqualToThreshold")
    assert props["TreatMissingData"] == "notBreaching"
    assert props["AlarmActions"] == [{"Ref": topic_id}]
    assert "docs/runbook.md#sourcedlqnotempty" in props["AlarmDescription"]


@pytest.mark.parametrize("task", FUNCTIONS)
def test_unexpected_errors_subtract_the_business_errors_the_function_raises(template: dict[str, Any],
                                                                           task: str) -> None:
    _, props = alarm(template, f"{task}UnexpectedErrors")
    (expression,) = [m["Expression"] for m in props["Metrics"] if "Expression" in m]
    stats = metric_stats(props)
    errors = stats["errors"]["Metric"]
    assert (errors["Namespace"], errors["MetricName"]) == ("AWS/Lambda", "Errors")
    assert ref_or_att(dimensions(stats["errors"])["FunctionName"]) == one(
        template, "AWS::Lambda::Function", f"SagaTasks{task}Function")[0]
    expected = {stat["Metric"]["MetricName"] for key, stat in stats.items() if key != "errors"}
    assert expected == set(ORDER_METRICS.expected_errors.get(task, ()))
    for key, stat in stats.items():
        assert (stat["Stat"], stat["Period"]) == ("Sum", 300)
        if key != "errors":
            assert stat["Metric"]["Namespace"] == "FireAndForget"
            assert dimensions(stat) == {"service": "order-saga"}
            assert f"- FILL({key}, 0)" in expression
    assert expression.startswith("FILL(errors, 0)")
    assert (props["Threshold"], props["TreatMissingData"]) == (1, "notBreaching")
    assert "AlarmActions" not in props


@pytest.mark.parametrize("task", FUNCTIONS)
def test_expected_errors_are_counted_by_that_function(task: str) -> None:
    """The subtraction is right only if the handler counts each business error it raises: read its code."""
    module = next(spec.module for spec in TASKS if spec.construct_id == task)
    own = "".join(p.read_text() for p in (LAMBDAS / module).glob("*.py"))
    # and the shared modules it imports (common/carriers.py counts ShippingUnavailable for both carrier steps)
    shared = "".join((LAMBDAS / "common" / f"{name}.py").read_text()
                     for name in set(re.findall(r"^from common\.(\w+) import", own, flags=re.MULTILINE)))
    counted = set(re.findall(r'count\("(\w+)"\)', own + shared))
    assert set(ORDER_METRICS.expected_errors.get(task, ())) <= counted


def test_composite_reports_every_function_alarm_once(template: dict[str, Any], composite: dict[str, Any],
                                                     topic_id: str) -> None:
    assert composite["AlarmActions"] == [{"Ref": topic_id}]
    parts = composite["AlarmRule"]["Fn::Join"][1]
    referenced = {ref_or_att(part) for part in parts if isinstance(part, dict)}
    assert referenced == {alarm(template, alarm_id)[0] for alarm_id in FUNCTION_ALARMS}
    text = "".join(part for part in parts if isinstance(part, str))
    assert set(re.findall(r"\) (\w+) ALARM", text)) == {"OR"}


def test_every_alarm_reaches_the_topic_exactly_once(template: dict[str, Any], composite: dict[str, Any],
                                                    topic_id: str) -> None:
    in_composite = {ref_or_att(p) for p in composite["AlarmRule"]["Fn::Join"][1] if isinstance(p, dict)}
    silent = {alarm(template, alarm_id)[0] for alarm_id in SILENT_WITH_HEALING}
    for logical_id, resource in of_type(template, ALARM).items():
        direct = resource["Properties"].get("AlarmActions", []).count({"Ref": topic_id}) == 1
        if logical_id in silent:
            assert not direct and logical_id not in in_composite, logical_id
            continue
        assert direct != (logical_id in in_composite), logical_id


@pytest.mark.parametrize(("attempts", "notifies"), [(0, True), (3, False)])
def test_the_failure_dlq_alarm_notifies_when_nothing_heals_by_itself(tmp_path: Path, attempts: int,
                                                                     notifies: bool) -> None:
    """With `healing.maxAttempts` 0 no record waits for a retry: FailureDlqNotEmpty notifies again."""
    from fire_and_forget.construct import PipelineSettings
    from tests.pipeline import minimal

    scope = minimal.stack()
    settings = PipelineSettings.model_validate({"healing": {"maxAttempts": attempts}})
    minimal.pipeline(scope, minimal.write(tmp_path, minimal.valid_definition()), settings=settings)
    built = scope.node.root.synth().get_stack_by_name("Minimal").template  # type: ignore[attr-defined]
    (props,) = [r["Properties"] for lid, r in built["Resources"].items()
                if r["Type"] == ALARM and lid.startswith("PipelineMonitoringFailureDlqNotEmpty")]
    assert bool(props.get("AlarmActions")) is notifies


# --- dashboard -------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def widgets(template: dict[str, Any]) -> list[dict[str, Any]]:
    """The dashboard body with every Ref / GetAtt replaced by `<<LogicalId>>`, parsed."""
    (dashboard,) = of_type(template, "AWS::CloudWatch::Dashboard").values()
    parts = dashboard["Properties"]["DashboardBody"]["Fn::Join"][1]
    body = "".join(part if isinstance(part, str) else f"<<{ref_or_att(part)}>>" for part in parts)
    found: list[dict[str, Any]] = json.loads(body)["widgets"]
    return found


def metric_rows(widgets: list[dict[str, Any]]) -> list[list[Any]]:
    return [row for w in widgets if w["type"] == "metric" for row in w["properties"]["metrics"]]


def test_every_dashboard_metric_is_bound_to_a_resource_of_this_stack(template: dict[str, Any],
                                                                   widgets: list[dict[str, Any]]) -> None:
    own = {
        "StateMachineArn": {one(template, *MACHINE)[0]},
        "QueueName": {one(template, "AWS::SQS::Queue", prefix)[0] for prefix in QUEUES.values()},
        "FunctionName": {one(template, "AWS::Lambda::Function", f"SagaTasks{t}Function")[0] for t in FUNCTIONS},
        "PipeName": {one(template, "AWS::Pipes::Pipe", "PipelinePipe")[0]},
        "RuleName": {one(template, "AWS::Events::Rule", "PipelineExecutionEventsRule")[0]},
    }
    rows = metric_rows(widgets)
    assert rows
    for namespace, _name, dimension, value, _options in rows:
        if namespace == "FireAndForget":
            assert (dimension, value) in {("service", "order-saga"), ("service", HEALING_SERVICE)}
        else:
            assert value.removeprefix("<<").removesuffix(">>") in own[dimension], (namespace, dimension, value)


def test_dashboard_shows_execution_trends_per_hour_day_and_week(widgets: list[dict[str, Any]]) -> None:
    trends = [w["properties"] for w in widgets if w["properties"].get("title", "").startswith("Order saga executions")]
    assert sorted(t["period"] for t in trends) == [3600, 86400, 604800]
    for trend in trends:
        names = {row[1] for row in trend["metrics"]}
        assert {"ExecutionsStarted", "ExecutionsSucceeded", "ExecutionsFailed"} <= names
        assert {row[4]["period"] for row in trend["metrics"]} == {trend["period"]}


def test_dashboard_counts_what_the_handlers_publish(widgets: list[dict[str, Any]]) -> None:
    shown = {row[1] for row in metric_rows(widgets) if row[0] == "FireAndForget" and row[3] == "order-saga"}
    code = "".join(p.read_text() for p in LAMBDAS.rglob("*.py"))
    # Steps count("Name") directly; compensations declare their metric in Compensation(metric="Name").
    published = set(re.findall(r'count\("(\w+)"\)', code)) | set(re.findall(r'metric="(\w+)"', code))
    assert shown == published  # every handler metric is on the dashboard, and nothing the handlers never send
    m = ORDER_METRICS
    assert {*m.outcomes, *m.rejections, *m.compensations, "CompensationsFailed"} == shown


def test_dashboard_shows_every_metric_the_healing_functions_publish(widgets: list[dict[str, Any]]) -> None:
    shown = {row[1] for row in metric_rows(widgets) if row[0] == "FireAndForget" and row[3] == HEALING_SERVICE}
    names = (HEALING_CODE / "telemetry.py").read_text()
    published = set(re.findall(r'^[A-Z_]+ = "(\w+)"', names, flags=re.MULTILINE))
    used = "".join(p.read_text() for p in HEALING_CODE.glob("*.py") if p.name != "telemetry.py")
    constants = dict(re.findall(r'^([A-Z_]+) = "(\w+)"', names, flags=re.MULTILINE))
    assert all(re.search(rf"\b{name}\b", used) for name in constants), "a declared metric no function publishes"
    assert shown == published
    assert {"ExecutionsReconciled", "FailuresAutoRedriven", "FailuresNeedingAPerson"} <= shown


def test_dashboard_shows_queues_pipe_and_functions(template: dict[str, Any], widgets: list[dict[str, Any]]) -> None:
    rows = metric_rows(widgets)
    depth = {row[3] for row in rows if row[1] == "ApproximateNumberOfMessagesVisible"}
    assert len(depth) == len(QUEUES)
    assert any(row[1] == "ApproximateAgeOfOldestMessage" for row in rows)
    pipe = {row[1] for row in rows if row[0] == "AWS/EventBridge/Pipes"}
    assert {"Invocations", "ExecutionFailed", "ExecutionThrottled", "Duration"} <= pipe
    for metric in ("Errors", "Duration", "Throttles"):
        assert len({row[3] for row in rows if row[:2] == ["AWS/Lambda", metric]}) == len(FUNCTIONS), metric


def test_alarm_status_widget_lists_every_alarm(template: dict[str, Any], widgets: list[dict[str, Any]]) -> None:
    (status,) = [w for w in widgets if w["type"] == "alarm"]
    listed = {arn.removeprefix("<<").removesuffix(">>") for arn in status["properties"]["alarms"]}
    assert listed == set(of_type(template, ALARM)) | set(of_type(template, "AWS::CloudWatch::CompositeAlarm"))


@pytest.mark.parametrize(("healing", "returns"), [({"sourceReturnPerSecond": 0}, False), ({"maxAttempts": 0}, False),
                                                  ({}, True)], ids=["no return pace", "no attempts", "default"])
def test_the_source_dlq_alarm_notifies_and_the_redriver_keeps_off_it_when_nothing_returns_it(
        tmp_path: Path, healing: dict[str, int], returns: bool) -> None:
    """Where the Redriver does not send the source DLQ back, SourceDlqNotEmpty notifies, SourceDlqNeedsAPerson does
    not exist, and the Redriver's role may not read the source DLQ."""
    from fire_and_forget.construct import PipelineSettings
    from tests.pipeline import minimal

    scope = minimal.stack()
    settings = PipelineSettings.model_validate({"healing": healing})
    minimal.pipeline(scope, minimal.write(tmp_path, minimal.valid_definition()), settings=settings)
    built = scope.node.root.synth().get_stack_by_name("Minimal").template  # type: ignore[attr-defined]
    alarms = {lid: r["Properties"] for lid, r in built["Resources"].items() if r["Type"] == ALARM}
    (source_dlq_alarm,) = [props for lid, props in alarms.items()
                           if lid.startswith("PipelineMonitoringSourceDlqNotEmpty")]
    assert bool(source_dlq_alarm.get("AlarmActions")) is not returns
    assert any(lid.startswith("PipelineMonitoringSourceDlqNeedsAPerson") for lid in alarms) is returns
    (source_dlq,) = [lid for lid, r in built["Resources"].items()
                     if r["Type"] == "AWS::SQS::Queue" and lid.startswith("PipelineSourceQueueSourceDlq")]
    (redriver_role,) = [lid for lid, r in built["Resources"].items()
                        if r["Type"] == "AWS::IAM::Role" and lid.startswith("PipelineHealingRedriverRole")]
    policies = [r["Properties"] for r in built["Resources"].values() if r["Type"] == "AWS::IAM::Policy"
                and {"Ref": redriver_role} in r["Properties"]["Roles"]]
    reads = [s for p in policies for s in p["PolicyDocument"]["Statement"]
             if "sqs:ReceiveMessage" in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])
             and source_dlq in json.dumps(s["Resource"])]
    assert bool(reads) is returns
