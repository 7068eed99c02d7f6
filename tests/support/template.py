"""Small lookups into a synthesized CloudFormation template."""

from __future__ import annotations

import json
from typing import Any


def of_type(template: dict[str, Any], resource_type: str) -> dict[str, dict[str, Any]]:
    """Logical id -> resource, for every resource of one type."""
    return {lid: res for lid, res in template["Resources"].items() if res["Type"] == resource_type}


def one(template: dict[str, Any], resource_type: str, id_prefix: str) -> tuple[str, dict[str, Any]]:
    """The single resource of `resource_type` whose logical id starts with `id_prefix`."""
    found = [(lid, res) for lid, res in of_type(template, resource_type).items() if lid.startswith(id_prefix)]
    assert len(found) == 1, f"expected one {resource_type} named {id_prefix}*, found {[lid for lid, _ in found]}"
    return found[0]


def statements(template: dict[str, Any], role_logical_id: str) -> list[dict[str, Any]]:
    """Every statement of every AWS::IAM::Policy attached to the role."""
    found: list[dict[str, Any]] = []
    for policy in of_type(template, "AWS::IAM::Policy").values():
        if {"Ref": role_logical_id} in policy["Properties"]["Roles"]:
            found.extend(policy["Properties"]["PolicyDocument"]["Statement"])
    return found


def actions(statement: dict[str, Any]) -> set[str]:
    action = statement["Action"]
    return {action} if isinstance(action, str) else set(action)


def ref_or_att(value: Any) -> str | None:
    """The logical id a Ref or Fn::GetAtt points to."""
    if isinstance(value, dict):
        if "Ref" in value:
            return str(value["Ref"])
        if "Fn::GetAtt" in value:
            return str(value["Fn::GetAtt"][0])
    return None


def event_pattern(rule: dict[str, Any], values: dict[str, str] | None = None) -> dict[str, Any]:
    """A rule's EventPattern as a dict, whether the template holds an object or a JSON string under Fn::Sub.

    `values` maps each Fn::Sub variable (or Ref'd logical id) to what it should read as, e.g. a sample ARN.
    """
    raw = rule["Properties"]["EventPattern"]
    if isinstance(raw, dict) and "Fn::Sub" in raw:
        text, variables = raw["Fn::Sub"] if isinstance(raw["Fn::Sub"], list) else (raw["Fn::Sub"], {})
        for name in variables:
            text = text.replace(f"${{{name}}}", (values or {}).get(name, f"<{name}>"))
        parsed: dict[str, Any] = json.loads(text)
        return parsed
    if isinstance(raw, str):
        loaded: dict[str, Any] = json.loads(raw)
        return loaded
    return dict(raw)
