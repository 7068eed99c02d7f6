"""The synthesized template's resources, resolved, with lookups by ARN, URL and name, and the policies on each."""

from __future__ import annotations

from typing import Any

from tests.permissions.resolver import Resolver


def _doc(statements: list[dict[str, Any]]) -> dict[str, Any] | None:
    return {"Version": "2012-10-17", "Statement": statements} if statements else None


ENCRYPTION_CONTEXT = "kms:encryptioncontext:"


def without_encryption_context(policy: dict[str, Any]) -> dict[str, Any]:
    """The key policy with its kms:EncryptionContext:* conditions removed.

    @cloud-copilot/iam-simulate drops those keys from a request, so a statement that names one could never apply
    there. Without them the policy is wider than the real one: a denial the simulator finds still holds for the
    real policy, and what the dropped conditions add is asserted on the template (test_key_conditions.py).
    """
    statements = []
    for statement in policy["Statement"]:
        conditions = {
            operator: kept
            for operator, keys in statement.get("Condition", {}).items()
            if (kept := {k: v for k, v in keys.items() if not k.lower().startswith(ENCRYPTION_CONTEXT)})
        }
        statements.append({k: v for k, v in statement.items() if k != "Condition"}
                          | ({"Condition": conditions} if conditions else {}))
    return policy | {"Statement": statements}


def lambda_policy(a: Architecture, function: str) -> dict[str, Any] | None:
    """The function's resource policy as Lambda writes it from the template's AWS::Lambda::Permission resources
    (access-control-resource-based.html; a function URL's, urls-auth.html)."""
    statements = []
    function_arn = a.att(function)
    for permission in a.of_type("AWS::Lambda::Permission").values():
        props = a.resolver.resolve(permission["Properties"])
        if props["FunctionName"] != function_arn:
            continue
        principal = props["Principal"]
        statement: dict[str, Any] = {
            "Effect": "Allow", "Action": props["Action"], "Resource": function_arn,
            "Principal": {"Service": principal} if principal.endswith(".amazonaws.com") else {"AWS": principal},
        }
        conditions: dict[str, dict[str, str]] = {}
        if "FunctionUrlAuthType" in props:
            conditions.setdefault("StringEquals", {})["lambda:FunctionUrlAuthType"] = props["FunctionUrlAuthType"]
        if props.get("InvokedViaFunctionUrl"):
            conditions.setdefault("Bool", {})["lambda:InvokedViaFunctionUrl"] = "true"
        if "SourceAccount" in props:
            conditions.setdefault("StringEquals", {})["aws:SourceAccount"] = props["SourceAccount"]
        if "SourceArn" in props:
            conditions.setdefault("ArnLike", {})["aws:SourceArn"] = props["SourceArn"]
        statements.append(statement | ({"Condition": conditions} if conditions else {}))
    return {"Version": "2012-10-17", "Statement": statements} if statements else None


class Architecture:
    """The template's resources, resolved, with lookups by ARN, URL and name."""

    def __init__(self, template: dict[str, Any]) -> None:
        self.template = template
        self.resolver = Resolver(template)
        self.resources: dict[str, dict[str, Any]] = template["Resources"]
        self.by_value: dict[str, str] = {}
        for lid in self.resources:
            for name in ("Ref", "Arn", "TopicArn"):
                try:
                    self.by_value[self.resolver.attribute(lid, name)] = lid
                except KeyError:
                    continue
        self.covered: set[tuple[str, str]] = set()  # (kind, logical id) every edge touched

    def of_type(self, resource_type: str) -> dict[str, dict[str, Any]]:
        return {lid: r for lid, r in self.resources.items() if r["Type"] == resource_type}

    def lid(self, value: Any) -> str:
        resolved = self.resolver.resolve(value)
        return self.by_value[resolved]

    def att(self, lid: str, name: str = "Arn") -> str:
        return self.resolver.attribute(lid, name)

    def props(self, lid: str) -> dict[str, Any]:
        props: dict[str, Any] = self.resources[lid].get("Properties", {})
        return props

    def attached_policy(self, kind: str, key: str, lid: str) -> dict[str, Any] | None:
        statements: list[dict[str, Any]] = []
        for policy in self.of_type(kind).values():
            if {"Ref": lid} in policy["Properties"][key]:
                statements.extend(self.resolver.resolve(policy["Properties"]["PolicyDocument"])["Statement"])
        return _doc(statements)

    def identity(self, role_lid: str) -> tuple[dict[str, Any], ...]:
        docs = [
            self.resolver.resolve(p["Properties"]["PolicyDocument"])
            for p in self.of_type("AWS::IAM::Policy").values()
            if {"Ref": role_lid} in p["Properties"].get("Roles", [])
        ]
        for inline in self.props(role_lid).get("Policies", []):
            docs.append(self.resolver.resolve(inline["PolicyDocument"]))
        for managed in self.props(role_lid).get("ManagedPolicyArns", []):
            docs.append(self.resolver.resolve(self.props(self.lid(managed))["PolicyDocument"]))
        return tuple(docs)

    def resource_policy(self, lid: str) -> dict[str, Any] | None:
        kind = self.resources[lid]["Type"]
        if kind == "AWS::SQS::Queue":
            return self.attached_policy("AWS::SQS::QueuePolicy", "Queues", lid)
        if kind == "AWS::SNS::Topic":
            return self.attached_policy("AWS::SNS::TopicPolicy", "Topics", lid)
        if kind == "AWS::KMS::Key":
            return without_encryption_context(self.resolver.resolve(self.props(lid)["KeyPolicy"]))
        if kind == "AWS::Lambda::Function":
            return lambda_policy(self, lid)
        return None

    def key_of(self, lid: str) -> str | None:
        props = self.props(lid)
        key = props.get("KmsMasterKeyId") or props.get("SSESpecification", {}).get("KMSMasterKeyId")
        return self.lid(key) if key is not None else None
