"""The operator's edges: every boto3 call ff-ops (src/fire_and_forget/cli/) makes, judged on the stack's
OperatorPolicy."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from fire_and_forget.runtime.status import REDRIVE_LINK_ATTRIBUTES, TICKET_ATTRIBUTES
from tests.permissions.checks import NO_TLS, OPERATOR, SQS_SEND_KEY, TLS, Check, kms_via
from tests.permissions.matrix import MatrixBuilder
from tests.permissions.resolver import ACCOUNT, STACK_NAME, arn
from tests.permissions.webhook_edges import TICKETS

REPO = Path(__file__).resolve().parents[2]
OPS = REPO / "src" / "fire_and_forget" / "cli"
RUNTIME = REPO / "src" / "fire_and_forget" / "runtime"
# The order example's smoke test, which an operator runs with the same policy.
SMOKE = REPO / "demos" / "orders"

# boto3 method -> the IAM actions it needs, on which of the stack's resources (by output key).
# StartMessageMoveTask also needs what the move itself does: read and delete on the DLQ, send to the destination
# (SQS Developer Guide, "Configure queue permissions for dead-letter queue redrive").
OPS_CALLS: dict[str, list[tuple[str, str]]] = {
    "describe_stacks": [("cloudformation:DescribeStacks", "stack")],
    "get_queue_attributes": [
        ("sqs:GetQueueAttributes", key)
        for key in ("SourceQueueUrl", "SourceDlqUrl", "FailureDlqUrl", "FailureEventsQueueUrl", "EventTargetDlqUrl",
                    "ReconcilerDlqUrl", "ScheduleDlqUrl")
    ],
    # The failure DLQ (list, show, redrive, discard, trace) and the source DLQ (trace): read, then made visible again.
    "receive_message": [("sqs:ReceiveMessage", "FailureDlqUrl"), ("kms:Decrypt", "FailureDlqUrl"),
                        ("sqs:ReceiveMessage", "SourceDlqUrl"), ("kms:Decrypt", "SourceDlqUrl")],
    "change_message_visibility_batch": [("sqs:ChangeMessageVisibility", "FailureDlqUrl"),
                                        ("sqs:ChangeMessageVisibility", "SourceDlqUrl")],
    "delete_message": [("sqs:DeleteMessage", "FailureDlqUrl")],
    "send_message": [("sqs:SendMessage", "SourceQueueUrl")] + [(k, "SourceQueueUrl") for k in SQS_SEND_KEY],
    "start_message_move_task": [
        ("sqs:StartMessageMoveTask", "SourceDlqUrl"),
        ("sqs:ReceiveMessage", "SourceDlqUrl"),
        ("sqs:DeleteMessage", "SourceDlqUrl"),
        ("sqs:GetQueueAttributes", "SourceDlqUrl"),
        ("kms:Decrypt", "SourceDlqUrl"),
        ("sqs:SendMessage", "SourceQueueUrl"),
        ("kms:GenerateDataKey", "SourceQueueUrl"),
    ],
    "list_message_move_tasks": [("sqs:ListMessageMoveTasks", "SourceDlqUrl")],
    "list_executions": [("states:ListExecutions", "StateMachineArn")],
    "describe_execution": [("states:DescribeExecution", "execution")],
    "get_execution_history": [("states:GetExecutionHistory", "execution")],  # trace
    "redrive_execution": [("states:RedriveExecution", "execution")],
    "get_metric_data": [("cloudwatch:GetMetricData", "*")],
    "list_metrics": [("cloudwatch:ListMetrics", "*")],  # status: the healing functions' counts
    "describe_pipe": [("pipes:DescribePipe", "PipeArn")],
    # executions redrive: the Reconciler's claim on an execution's message (the deliveries table, encrypted); message:
    # the caller's message's row.
    "get_item": [("dynamodb:GetItem", "DeliveriesTableName"), ("kms:Decrypt", "DeliveriesTableName")],
    # failures redrive: each copy linked to its caller's message, on the link's attributes only (runtime/status.py).
    "update_item": [("dynamodb:UpdateItem", "DeliveriesTableName"), ("kms:GenerateDataKey", "DeliveriesTableName")],
    # failures discard: the discarded message's OpsCenter ticket resolved (with the tickets only; runtime/status.py).
    "update_ops_item": [("ssm:UpdateOpsItem", "opsitem")],
    # the smoke test: its own stock item in the inventory table (encrypted with the stack's key).
    "put_item": [("dynamodb:PutItem", "InventoryTableName"), ("kms:GenerateDataKey", "InventoryTableName")],
    "delete_item": [("dynamodb:DeleteItem", "InventoryTableName"), ("kms:Decrypt", "InventoryTableName")],
}
SMOKE_CALLS = ("put_item", "delete_item")
# What ff-ops calls on a REQUEST_RESPONSE stack (`status` and `source-dlq redrive`, the commands that apply there;
# tests/catalog/test_request_response_ops.py records the calls and holds them to this set). None on Step Functions:
# ListExecutions, DescribeExecution, GetExecutionHistory and RedriveExecution support no Express workflow.
REQUEST_RESPONSE_CALLS = ("describe_stacks", "get_queue_attributes", "receive_message",
                          "change_message_visibility_batch", "start_message_move_task", "list_message_move_tasks",
                          "get_metric_data", "describe_pipe")
SMOKE_TABLE = "InventoryTableName"
# Granted whether or not src/fire_and_forget/cli/ calls it (none today: `ff-ops trace` reads execution histories
# itself).
GRANTED_BEYOND_OPS: dict[str, list[tuple[str, str]]] = {}
OPS_ITEM = arn("ssm", "opsitem/oi-0123456789ab")
_CLIENT_CALL = re.compile(r"\b(?:sqs|_sqs|sfn|cloudformation|pipes|cloudwatch|dynamodb|ssm)\.(\w+)\(")
_PAGINATOR = re.compile(r"get_paginator\(\"(\w+)\"\)")


def operator_sources() -> list[Path]:
    """ff-ops (src/fire_and_forget/cli/*.py), the runtime modules it imports (the redrive and the DLQ reader it
    shares with the Redriver) and the smoke test (demos/orders/smoke*.py)."""
    cli = sorted(OPS.glob("*.py"))
    imported = {m for path in cli for m in re.findall(r"^from fire_and_forget\.runtime\.(\w+) import",
                                                       path.read_text(encoding="utf-8"), re.M)}
    return cli + [RUNTIME / f"{name}.py" for name in sorted(imported)] + sorted(SMOKE.glob("smoke*.py"))


def ops_boto3_calls() -> set[str]:
    """Every boto3 client method named in operator_sources()."""
    found: set[str] = set()
    for path in operator_sources():
        text = path.read_text(encoding="utf-8")
        found.update(m for m in _CLIENT_CALL.findall(text) if m != "get_paginator")
        found.update(_PAGINATOR.findall(text))
    return found


def operator_policy_lid(template: dict[str, Any]) -> str:
    value = template["Outputs"]["OperatorPolicyArn"]["Value"]
    return str(value["Ref"])


def operator_checks(builder: MatrixBuilder, stack_name: str = STACK_NAME) -> None:
    a = builder.a
    policy = operator_policy_lid(a.template)
    a.covered.add(("managed-policy", policy))
    identity = (a.resolver.resolve(a.props(policy)["PolicyDocument"]),)
    outputs = a.template["Outputs"]
    machine = a.lid(outputs["StateMachineArn"]["Value"])

    tickets = any(lid.startswith(TICKETS) for lid in a.of_type("AWS::Lambda::Function"))
    fixed = {"opsitem": OPS_ITEM, "*": "*",
             "stack": arn("cloudformation", f"stack/{stack_name}/0a1b2c3d-0000-0000-0000-000000000000"),
             "execution": arn("states", f"execution:{a.att(machine, 'Name')}:order-1")}

    def target(key: str) -> tuple[str | None, str]:
        if key in fixed:
            return None, fixed[key]
        lid = a.lid(outputs[key]["Value"])
        return lid, a.att(lid, "Ref" if key == "StateMachineArn" else "Arn")

    request_response = outputs.get("InvocationType", {}).get("Value") == "REQUEST_RESPONSE"
    for method, action, key in _granted_calls(outputs, request_response):
        if key == "opsitem" and not tickets:
            continue  # judged as denied below
        lid, resource = target(key)
        _ops_call(builder, f"operator ff-ops {method}", identity, action, lid, resource)
    if tickets:
        _ticket_note_checks(builder, identity, a.att(a.lid(outputs["DeliveriesTableName"]["Value"])))

    edge = "operator beyond ff-ops"
    source = a.lid(outputs["SourceQueueUrl"]["Value"])
    kept = a.lid(outputs["FailureDlqUrl"]["Value"]) if "FailureDlqUrl" in outputs else a.lid(
        outputs["SourceDlqUrl"]["Value"])
    for action, lid in (
        ("sqs:DeleteQueue", source),
        ("sqs:PurgeQueue", kept),
        ("sqs:SetQueueAttributes", source),
        ("sqs:ReceiveMessage", source),
    ):
        builder._add(
            Check(
                edge,
                OPERATOR,
                action,
                a.att(lid),
                False,
                "not an ff-ops call",
                dict(TLS),
                identity,
                a.resource_policy(lid),
            )
        )
    for action, resource in (
        ("states:StartExecution", a.att(machine, "Ref")),
        ("states:StopExecution", arn("states", f"execution:{a.att(machine, 'Name')}:order-1")),
        ("states:RedriveExecution", arn("states", "execution:AnotherStateMachine:order-1")),
        ("states:ListExecutions", arn("states", "stateMachine:AnotherStateMachine")),
        ("sqs:SendMessage", arn("sqs", "AnotherQueue")),
        ("pipes:StopPipe", a.att(a.lid(outputs["PipeArn"]["Value"]))),
        # No write to the delivery claims: a forged claim would make a message's executions end as duplicates.
        ("dynamodb:PutItem", a.att(a.lid(outputs["DeliveriesTableName"]["Value"]))),
        ("ssm:DeleteOpsItem", OPS_ITEM),
        *(() if tickets else (("ssm:UpdateOpsItem", OPS_ITEM),)),
        *_beyond_the_smoke(a, outputs),
        *_beyond_request_response(a, outputs, machine, request_response),
    ):
        builder._add(Check(edge, OPERATOR, action, resource, False, "not an ff-ops call", dict(TLS), identity))


def _ticket_note_checks(builder: MatrixBuilder, identity: tuple[dict[str, Any], ...], table: str) -> None:
    """`failures discard` notes the discarded message's ticket as resolved, on the ticket's attributes only."""
    noted = Check("operator ff-ops update_item (ticket)", OPERATOR, "dynamodb:UpdateItem", table, True,
                  "ff-ops needs it", dict(TLS) | {"dynamodb:Attributes": list(TICKET_ATTRIBUTES)},  # type: ignore[dict-item]
                  identity)
    builder._add(noted)
    builder._add(replace(noted, allowed=False, why="a forged outcome", context=dict(TLS) | {
        "dynamodb:Attributes": [*TICKET_ATTRIBUTES, "outcome"]}))  # type: ignore[dict-item]


def _link_checks(builder: MatrixBuilder, base: Check) -> Check:
    """The redrive link's UpdateItem is allowed on its own attributes only (the request's dynamodb:Attributes):
    denied when it would also touch the claim or the outcome, or return the item's other attributes."""
    link = dict(TLS) | {"dynamodb:Attributes": list(REDRIVE_LINK_ATTRIBUTES)}  # type: ignore[dict-item]
    for extra, why in (("executionArn", "a forged claim"), ("outcome", "a forged outcome")):
        forged = dict(TLS) | {"dynamodb:Attributes": [*REDRIVE_LINK_ATTRIBUTES, extra]}  # type: ignore[dict-item]
        builder._add(replace(base, allowed=False, why=why, context=forged))
    builder._add(replace(base, allowed=False, why="the item's other attributes returned",
                         context=link | {"dynamodb:ReturnValues": "ALL_OLD"}))
    return replace(base, context=link)


def _granted_calls(outputs: dict[str, Any], request_response: bool) -> list[tuple[str, str, str]]:
    """(boto3 method, IAM action, resource key) of every call the stack's operator policy must allow."""
    granted = []
    for method, calls in (OPS_CALLS | GRANTED_BEYOND_OPS).items():
        if method in SMOKE_CALLS and SMOKE_TABLE not in outputs:
            continue  # the smoke test sends an order: only the order example grants its stock item
        if request_response and method not in REQUEST_RESPONSE_CALLS:
            continue  # judged as denied (_beyond_request_response)
        # A queue the mode does not build (the failure DLQ, the healing queues) has no output and no call.
        granted += [(method, action, key) for action, key in calls
                    if key in ("stack", "execution", "*") or key in outputs]
    return granted


def _beyond_request_response(a: Any, outputs: dict[str, Any], machine: str,
                             request_response: bool) -> list[tuple[str, str]]:
    """In REQUEST_RESPONSE no execution call at all (AWS supports none on Express executions, and ff-ops makes none),
    no read of the delivery claims, no search of the metrics."""
    if not request_response:
        return []
    execution = arn("states", f"express:{a.att(machine, 'Name')}:product-1:0")
    return [
        ("states:ListExecutions", a.att(machine, "Ref")),
        ("states:StartSyncExecution", a.att(machine, "Ref")),
        ("states:DescribeExecution", execution),
        ("states:GetExecutionHistory", execution),
        ("dynamodb:GetItem", a.att(a.lid(outputs["DeliveriesTableName"]["Value"]))),
        ("cloudwatch:ListMetrics", "*"),
    ]


def _beyond_the_smoke(a: Any, outputs: dict[str, Any]) -> list[tuple[str, str]]:
    """The smoke's stock item is the only table write: no other table, no read of the catalogue (order example)."""
    if SMOKE_TABLE not in outputs:
        return []
    return [
        ("dynamodb:PutItem", a.att(a.lid(outputs["PaymentsTableName"]["Value"]))),
        ("dynamodb:Scan", a.att(a.lid(outputs["InventoryTableName"]["Value"]))),
        ("dynamodb:UpdateItem", a.att(a.lid(outputs["InventoryTableName"]["Value"]))),
    ]


def _ops_call(
    builder: MatrixBuilder, edge: str, identity: tuple[dict[str, Any], ...], action: str, lid: str | None, resource: str
) -> None:
    """One ff-ops call allowed; on another account's copy, without TLS, or on the key directly denied."""
    a = builder.a
    if action.startswith("kms:"):
        assert lid is not None
        key_lid = a.key_of(lid)
        assert key_lid is not None, f"{lid} is not encrypted"
        service = "dynamodb" if a.template["Resources"][lid]["Type"] == "AWS::DynamoDB::Table" else "sqs"
        base = Check(
            edge,
            OPERATOR,
            action,
            a.att(key_lid),
            True,
            "ff-ops needs it",
            dict(TLS) | kms_via(service),
            identity,
            a.resource_policy(key_lid),
        )
        builder._add(base)
        builder._add(replace(base, allowed=False, why=f"the key used directly, not through {service}",
                             context=dict(TLS)))
        return
    resource_policy = a.resource_policy(lid) if lid else None
    base = Check(edge, OPERATOR, action, resource, True, "ff-ops needs it", dict(TLS), identity, resource_policy)
    if action == "dynamodb:UpdateItem":
        base = _link_checks(builder, base)
    builder._add(base)
    if resource.startswith("arn:") and resource.split(":")[4] == ACCOUNT:
        builder.denied_on_another_accounts_copy(base)
    if resource_policy and "SecureTransport" in str(resource_policy):
        builder._add(replace(base, allowed=False, why="without TLS", context=dict(NO_TLS)))
