"""The self-healing resources against the rules AWS enforces at deploy or run time and moto does not.

moto creates an event source mapping whatever the queue's visibility timeout, stores a schedule without
FlexibleTimeWindow, and lets any role send to an SSE-KMS queue: each rule is therefore checked here, over the
synthesized template, with the AWS page that states it (docs/design.md, "Self-healing resources: what AWS enforces").
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.support.template import actions, of_type, one, ref_or_att, statements

TEMPLATES = ("template", "catalog_template")
SCHEDULES = ("PipelineHealingSweep", "PipelineHealingRedrive")
FUNCTIONS = ("PipelineHealingReconcilerFunction", "PipelineHealingRedriverFunction")
SCHEDULE_DLQ = "PipelineHealingScheduleDlq"
# https://docs.aws.amazon.com/scheduler/latest/UserGuide/schedule-types.html#rate-based: rate(value unit), value a
# positive integer, unit minute(s) | hour(s) | day(s); the singular unit for a value of 1, the plural otherwise.
RATE = re.compile(r"rate\((?P<value>[1-9]\d*) (?P<unit>minute|minutes|hour|hours|day|days)\)")


@pytest.fixture(scope="module", params=TEMPLATES)
def stack(request: pytest.FixtureRequest) -> dict[str, Any]:
    found: dict[str, Any] = request.getfixturevalue(request.param)
    return found


def _schedule(stack: dict[str, Any], prefix: str) -> dict[str, Any]:
    props: dict[str, Any] = one(stack, "AWS::Scheduler::Schedule", prefix)[1]["Properties"]
    return props


def _role_id(value: Any) -> str:
    """The role a `Fn::GetAtt [Role, Arn]` names."""
    role = ref_or_att(value)
    assert role is not None, value
    return role


def _allows(stack: dict[str, Any], role: str, action: str, resource_id: str) -> bool:
    """Whether an identity policy of the role allows `action` on the resource named by its logical id (or `*`)."""
    for statement in statements(stack, role):
        if statement["Effect"] != "Allow":
            continue
        granted = actions(statement)
        if action not in granted and not any(g.endswith("*") and action.startswith(g[:-1]) for g in granted):
            continue
        resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
        if "*" in resources or any(ref_or_att(r) == resource_id for r in resources):
            return True
    return False


def test_both_stacks_have_the_healing_resources(stack: dict[str, Any]) -> None:
    assert len(of_type(stack, "AWS::Scheduler::Schedule")) == len(SCHEDULES)
    assert len(of_type(stack, "AWS::Lambda::EventSourceMapping")) == 1
    for prefix in FUNCTIONS:
        one(stack, "AWS::Lambda::Function", prefix)


def test_the_failure_events_queue_outlasts_the_reconciler(stack: dict[str, Any]) -> None:
    """Lambda refuses a mapping whose queue's visibility timeout is below the function's timeout, and recommends six
    times it (https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html, "Configuring a queue")."""
    (mapping,) = of_type(stack, "AWS::Lambda::EventSourceMapping").values()
    queue_id = ref_or_att(mapping["Properties"]["EventSourceArn"])
    function_id = ref_or_att(mapping["Properties"]["FunctionName"])
    assert queue_id is not None
    assert queue_id.startswith("PipelineExecutionEventsFailureEventsQueue")
    assert function_id is not None
    assert function_id.startswith("PipelineHealingReconcilerFunction")
    visibility = stack["Resources"][queue_id]["Properties"]["VisibilityTimeout"]
    timeout = stack["Resources"][function_id]["Properties"]["Timeout"]
    assert visibility >= timeout
    # the recommendation the design follows (docs/design.md, "Self-healing resources: what AWS enforces")
    assert visibility >= 6 * timeout


def test_an_event_the_reconciler_has_not_taken_is_alarmed_on_long_before_it_expires(stack: dict[str, Any]) -> None:
    """SQS deletes a message that is never received when its retention ends, without moving it to the DLQ; the alarm
    on the queue's oldest message fires first, at any threshold the settings accept (docs/design.md, "Self-healing
    resources: what AWS enforces")."""
    from fire_and_forget.construct.settings import AlarmConfig

    queue_id, queue = one(stack, "AWS::SQS::Queue", "PipelineExecutionEventsFailureEventsQueue")
    alarm = one(stack, "AWS::CloudWatch::Alarm", "PipelineMonitoringFailureEventsWaiting")[1]["Properties"]
    (metric,) = alarm["Metrics"]
    assert metric["MetricStat"]["Metric"]["MetricName"] == "ApproximateAgeOfOldestMessage"
    assert ref_or_att(metric["MetricStat"]["Metric"]["Dimensions"][0]["Value"]) == queue_id
    (widest,) = [m.le for m in AlarmConfig.model_fields["failure_events_max_age_seconds"].metadata if hasattr(m, "le")]
    retention = queue["Properties"]["MessageRetentionPeriod"]
    assert alarm["Threshold"] <= widest < retention / 2  # the alarm fires with at least half the retention left


def test_the_mapping_batch_needs_no_batching_window(stack: dict[str, Any]) -> None:
    """A standard queue's mapping takes up to 10 records without MaximumBatchingWindowInSeconds; more needs a window
    of at least 1 s (https://docs.aws.amazon.com/lambda/latest/api/API_CreateEventSourceMapping.html, BatchSize)."""
    (mapping,) = of_type(stack, "AWS::Lambda::EventSourceMapping").values()
    props = mapping["Properties"]
    assert 1 <= props["BatchSize"] <= 10
    assert props.get("MaximumBatchingWindowInSeconds", 0) == 0
    # The partial batch response the Reconciler returns is ignored unless the mapping asks for it
    # (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-errorhandling.html).
    assert props["FunctionResponseTypes"] == ["ReportBatchItemFailures"]


@pytest.mark.parametrize("prefix", SCHEDULES)
def test_each_schedule_is_a_valid_rate_with_a_flexible_time_window(stack: dict[str, Any], prefix: str) -> None:
    """FlexibleTimeWindow is required by CloudFormation
    (https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-resource-scheduler-schedule.html)."""
    props = _schedule(stack, prefix)
    match = RATE.fullmatch(props["ScheduleExpression"])
    assert match, props["ScheduleExpression"]
    assert (match["value"] == "1") == (not match["unit"].endswith("s"))
    window = props["FlexibleTimeWindow"]
    assert window["Mode"] in ("OFF", "FLEXIBLE")
    if window["Mode"] == "FLEXIBLE":
        assert 1 <= window["MaximumWindowInMinutes"] <= 1440
    assert props["State"] == "ENABLED"


@pytest.mark.parametrize("minutes", [1, 2, 60])
def test_the_construct_writes_the_singular_unit_for_one(minutes: int) -> None:
    """The rule above, on the expression the construct builds for any configured period (1 is the edge)."""
    from fire_and_forget.construct.healing import rate_expression

    expression = rate_expression(minutes)
    match = RATE.fullmatch(expression)
    assert match, expression
    assert match["unit"] == ("minute" if minutes == 1 else "minutes")


@pytest.mark.parametrize("prefix", SCHEDULES)
def test_each_schedule_role_trusts_only_scheduler_of_this_account(stack: dict[str, Any], prefix: str) -> None:
    """https://docs.aws.amazon.com/scheduler/latest/UserGuide/setting-up.html#setting-up-execution-role: the trust
    policy names scheduler.amazonaws.com, with aws:SourceAccount against the confused deputy."""
    role_id = _role_id(_schedule(stack, prefix)["Target"]["RoleArn"])
    (trust,) = stack["Resources"][role_id]["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Effect"] == "Allow"
    assert trust["Action"] == "sts:AssumeRole"
    assert trust["Principal"] == {"Service": "scheduler.amazonaws.com"}
    assert trust["Condition"] == {"StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}}


@pytest.mark.parametrize(("prefix", "function"), list(zip(SCHEDULES, FUNCTIONS, strict=True)))
def test_each_schedule_role_may_invoke_its_function_and_send_to_its_dlq(
    stack: dict[str, Any], prefix: str, function: str
) -> None:
    """The role invokes the target and sends the dead-letter event
    (https://docs.aws.amazon.com/scheduler/latest/UserGuide/configuring-schedule-dlq.html)."""
    props = _schedule(stack, prefix)
    role_id = _role_id(props["Target"]["RoleArn"])
    function_id = one(stack, "AWS::Lambda::Function", function)[0]
    dlq_id = one(stack, "AWS::SQS::Queue", SCHEDULE_DLQ)[0]
    assert ref_or_att(props["Target"]["Arn"]) == function_id
    assert ref_or_att(props["Target"]["DeadLetterConfig"]["Arn"]) == dlq_id
    assert _allows(stack, role_id, "lambda:InvokeFunction", function_id)
    assert _allows(stack, role_id, "sqs:SendMessage", dlq_id)
    other = one(stack, "AWS::Lambda::Function", next(f for f in FUNCTIONS if f != function))[0]
    assert not _allows(stack, role_id, "lambda:InvokeFunction", other)


@pytest.mark.parametrize(("prefix", "function"), list(zip(SCHEDULES, FUNCTIONS, strict=True)))
def test_each_schedule_role_may_invoke_only_the_unqualified_function(
    stack: dict[str, Any], prefix: str, function: str
) -> None:
    """Scheduler invokes the target's unqualified ARN; `<function ARN>:*` would add every version and alias, each of
    which is a resource of its own (https://docs.aws.amazon.com/lambda/latest/dg/lambda-api-permissions-ref.html)."""
    role_id = _role_id(_schedule(stack, prefix)["Target"]["RoleArn"])
    function_id = one(stack, "AWS::Lambda::Function", function)[0]
    invoking = [s for s in statements(stack, role_id)
                if s["Effect"] == "Allow" and any(a in ("lambda:InvokeFunction", "lambda:*", "*") for a in actions(s))]
    resources = [r for s in invoking for r in (s["Resource"] if isinstance(s["Resource"], list) else [s["Resource"]])]
    assert resources == [{"Fn::GetAtt": [function_id, "Arn"]}], resources


@pytest.mark.parametrize("prefix", SCHEDULES)
def test_each_schedule_role_may_use_the_schedule_dlq_s_key(stack: dict[str, Any], prefix: str) -> None:
    """The ScheduleDlq is SSE-KMS under a customer-managed key. Scheduler sends the dead-letter event with the
    schedule's role (configuring-schedule-dlq.html), and a producer of an SSE-KMS queue needs kms:GenerateDataKey and
    kms:Decrypt on its key (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/
    sqs-key-management.html); the key policy delegates to IAM (the account root), so the role's policy decides."""
    role_id = _role_id(_schedule(stack, prefix)["Target"]["RoleArn"])
    dlq = one(stack, "AWS::SQS::Queue", SCHEDULE_DLQ)[1]["Properties"]
    key_id = ref_or_att(dlq["KmsMasterKeyId"])
    assert key_id is not None
    assert stack["Resources"][key_id]["Type"] == "AWS::KMS::Key"
    key_policy = stack["Resources"][key_id]["Properties"]["KeyPolicy"]["Statement"]
    assert any(s["Effect"] == "Allow" and s["Action"] == "kms:*" and ":root" in str(s["Principal"]) for s in key_policy)
    for action in ("kms:GenerateDataKey", "kms:Decrypt"):
        assert _allows(stack, role_id, action, key_id), action


@pytest.mark.parametrize("function", FUNCTIONS)
def test_each_function_s_failed_runs_go_to_the_schedule_dlq(stack: dict[str, Any], function: str) -> None:
    """Scheduler invokes Lambda asynchronously: a failed run is Lambda's to retry and then send to the function's
    on-failure destination (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-retain-records.html), which
    Lambda sends with the function's execution role."""
    function_id, resource = one(stack, "AWS::Lambda::Function", function)
    configs = [
        c["Properties"]
        for c in of_type(stack, "AWS::Lambda::EventInvokeConfig").values()
        if ref_or_att(c["Properties"]["FunctionName"]) == function_id
    ]
    assert len(configs) == 1
    (config,) = configs
    dlq_id = one(stack, "AWS::SQS::Queue", SCHEDULE_DLQ)[0]
    assert ref_or_att(config["DestinationConfig"]["OnFailure"]["Destination"]) == dlq_id
    assert config["Qualifier"] == "$LATEST"
    assert 0 <= config["MaximumRetryAttempts"] <= 2
    role_id = _role_id(resource["Properties"]["Role"])
    key_id = ref_or_att(one(stack, "AWS::SQS::Queue", SCHEDULE_DLQ)[1]["Properties"]["KmsMasterKeyId"])
    assert key_id is not None
    assert _allows(stack, role_id, "sqs:SendMessage", dlq_id)
    assert _allows(stack, role_id, "kms:GenerateDataKey", key_id)
