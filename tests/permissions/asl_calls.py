"""What the state machine's Task states call: read from its definition as deployed, for the permission matrix."""

from __future__ import annotations

import re
from typing import Any

from tests.permissions.architecture import Architecture


def definition_text(a: Architecture, props: dict[str, Any]) -> str:
    """The state machine's definition with its substitutions written in."""
    text = str(a.resolver.resolve(props["DefinitionString"]))
    substitutions = a.resolver.resolve(props.get("DefinitionSubstitutions", {}))
    return re.sub(r"\$\{(\w+)\}", lambda m: str(substitutions[m.group(1)]), text)


def task_call(a: Architecture, task: dict[str, Any], state: str) -> tuple[str, str]:
    """The IAM action a Task state needs and the logical id of the resource it acts on."""
    resource, params = task["Resource"], task.get("Parameters", {})
    service_integrations = {
        "lambda:invoke": ("lambda:InvokeFunction", "FunctionName"),
        "sqs:sendMessage": ("sqs:SendMessage", "QueueUrl"),
        "sns:publish": ("sns:Publish", "TopicArn"),
        "dynamodb:putItem": ("dynamodb:PutItem", "TableName"),
        "dynamodb:updateItem": ("dynamodb:UpdateItem", "TableName"),
        "dynamodb:getItem": ("dynamodb:GetItem", "TableName"),
        "dynamodb:deleteItem": ("dynamodb:DeleteItem", "TableName"),
    }
    integration = resource.split(":::", 1)[1].split(".")[0] if ":::" in resource else None
    if integration in service_integrations:
        action, parameter = service_integrations[integration]
        value = params.get(parameter)
        if not isinstance(value, str):
            raise AssertionError(f"Task {state}: {parameter} is not a fixed value; the matrix cannot judge it")
        target = a.by_value.get(value) or a.by_value.get(value.split(":$")[0])
        if target is None:
            raise AssertionError(f"Task {state}: {value} is no resource of the template")
        return action, target
    raise AssertionError(f"Task {state}: the matrix does not model the integration {resource}")


def tasks(states: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Every Task state, with those inside Parallel branches and Map iterators."""
    found: list[tuple[str, dict[str, Any]]] = []
    for name, state in states.items():
        if state["Type"] == "Task":
            found.append((name, state))
        for branch in state.get("Branches", []):
            found.extend(tasks(branch["States"]))
        for key in ("Iterator", "ItemProcessor"):
            if key in state:
                found.extend(tasks(state[key]["States"]))
    return found
