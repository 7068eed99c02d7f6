"""The five saga functions and their tables: runtime, limits, layer, and least-privilege grants."""

from __future__ import annotations

import json
from typing import Any

import pytest

from stacks.orders.tasks import TABLES, TASKS
from tests.support.template import actions, of_type, one, ref_or_att, statements


@pytest.fixture(scope="module")
def functions(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {spec.construct_id: one(template, "AWS::Lambda::Function", f"SagaTasks{spec.construct_id}Function")[1]
            for spec in TASKS}


@pytest.mark.parametrize("spec", TASKS, ids=lambda spec: spec.construct_id)
def test_function_runtime_and_limits(template: dict[str, Any], functions: dict[str, dict[str, Any]], spec: Any) -> None:
    props = functions[spec.construct_id]["Properties"]
    assert props["Runtime"] == "python3.13"
    assert props["Architectures"] == ["arm64"]
    assert props["TracingConfig"] == {"Mode": "Active"}
    assert props["Handler"] == f"{spec.module}.handler.handler"
    assert props["Timeout"] < 30  # below the Task's TimeoutSeconds, so the function's own timeout shows first
    log_group_id = ref_or_att(props["LoggingConfig"]["LogGroup"])
    assert log_group_id is not None
    assert template["Resources"][log_group_id]["Properties"]["RetentionInDays"] == 30
    (layer,) = props["Layers"]  # the stack's own dependencies layer: tests/infra/test_lambda_layer.py
    assert template["Resources"][layer["Ref"]]["Type"] == "AWS::Lambda::LayerVersion"


@pytest.mark.parametrize("spec", TASKS, ids=lambda spec: spec.construct_id)
def test_function_reaches_only_its_own_tables(template: dict[str, Any], functions: dict[str, dict[str, Any]],
                                              spec: Any) -> None:
    props = functions[spec.construct_id]["Properties"]
    role_id = ref_or_att(props["Role"])
    assert role_id is not None
    assert "ManagedPolicyArns" not in template["Resources"][role_id]["Properties"]
    table_ids = {one(template, "AWS::DynamoDB::Table", f"SagaTasks{name}Table")[0]: name for name in TABLES}
    granted: set[str] = set()
    for statement in statements(template, role_id):
        resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
        for resource in resources:
            target = ref_or_att(resource)
            if target in table_ids:
                granted.add(table_ids[target])
                assert not actions(statement) & {"dynamodb:DeleteTable", "dynamodb:*"}
    assert granted == {*spec.tables, "Idempotency"}
    env = props["Environment"]["Variables"]
    for table in spec.tables:
        assert ref_or_att(env[f"{table.upper()}_TABLE_NAME"]) in table_ids
    assert int(env["IDEMPOTENCY_EXPIRY_SECONDS"]) >= 14 * 24 * 3600


def test_tables_are_on_demand_with_point_in_time_recovery(template: dict[str, Any]) -> None:
    tables = of_type(template, "AWS::DynamoDB::Table")
    assert len(tables) == len(TABLES) + 1  # the order saga's, and the pipeline's deliveries table
    for table in tables.values():
        props = table["Properties"]
        assert props["BillingMode"] == "PAY_PER_REQUEST"
        assert props["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
        assert table["DeletionPolicy"] == "RetainExceptOnCreate"


def test_state_machine_invokes_exactly_the_five_functions(template: dict[str, Any]) -> None:
    machine_id, machine = one(template, "AWS::StepFunctions::StateMachine", "PipelineWorkflow")
    role_id = ref_or_att(machine["Properties"]["RoleArn"])
    assert role_id is not None
    invoke = [s for s in statements(template, role_id) if "lambda:InvokeFunction" in actions(s)]
    (statement,) = invoke
    function_ids = {one(template, "AWS::Lambda::Function", f"SagaTasks{spec.construct_id}Function")[0]
                    for spec in TASKS}
    assert {ref_or_att(r) for r in statement["Resource"]} == function_ids  # no `arn:*` versions or aliases
    sends = [s for s in statements(template, role_id) if actions(s) & {"sqs:SendMessage", "sns:Publish",
                                                                       "dynamodb:PutItem", "dynamodb:UpdateItem"}]
    assert {(frozenset(actions(s)), ref_or_att(s["Resource"])) for s in sends} == {
        (frozenset({"sqs:SendMessage"}), one(template, "AWS::SQS::Queue", "PipelineFailureHandlingFailureDlq")[0]),
        (frozenset({"sns:Publish"}), one(template, "AWS::SNS::Topic", "PipelineFailureHandlingAlertsTopic")[0]),
        # ClaimFailure's update of the message's row, never a put that would replace it
        (frozenset({"dynamodb:UpdateItem"}), one(template, "AWS::DynamoDB::Table", "PipelineDeliveriesTable")[0]),
    }


def test_outputs_name_every_resource_the_operator_tools_need(template: dict[str, Any]) -> None:
    assert {
        "SourceQueueUrl", "SourceDlqUrl", "FailureDlqUrl", "FailureEventsQueueUrl", "EventTargetDlqUrl",
        "AlertsTopicArn", "StateMachineArn", "PipeName", "PipeArn", "FailureRuleName", "InventoryTableName",
        # self-healing: ff-ops lists these DLQs and reads the policy the Redriver applies
        "ReconcilerDlqUrl", "ScheduleDlqUrl", "ReconcilerFunctionName", "RedriverFunctionName", "HealingPolicy",
    } <= set(template["Outputs"])


REFERRING_TO_A_FUNCTION = ("AWS::Lambda::EventInvokeConfig", "AWS::Lambda::EventSourceMapping",
                           "AWS::Lambda::Permission")


def test_no_physical_names(template: dict[str, Any]) -> None:
    name_props = ("QueueName", "TopicName", "TableName", "FunctionName", "StateMachineName", "RoleName",
                  "LogGroupName", "Name")
    for logical_id, resource in template["Resources"].items():
        for prop in name_props:
            value = resource.get("Properties", {}).get(prop)
            # The one exception, on purpose: Step Functions asks for /aws/vendedlogs/states/ (docs/design.md,
            # "Compliance, and what a first deployment needs"), and the name is derived from the stack name, so two
            # stacks never collide (tests/infra/test_log_groups.py).
            if prop == "LogGroupName" and json.dumps(value).startswith('"/aws/vendedlogs/states/'):
                continue
            # A mapping or an async-invoke config names the function it belongs to by reference: not a name we chose.
            if prop == "FunctionName" and resource["Type"] in REFERRING_TO_A_FUNCTION:
                assert ref_or_att(value) in template["Resources"], f"{logical_id} names a function by hand"
                continue
            assert value is None, f"{logical_id} sets {prop}"
