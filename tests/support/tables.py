"""DynamoDB tables for moto, built from the synthesized template so test schemas cannot drift from what deploys."""

from __future__ import annotations

from typing import Any

_GSI_KEYS = ("IndexName", "KeySchema", "Projection")


def create_tables_from_template(template: dict[str, Any], dynamodb_client: Any) -> dict[str, str]:
    """Create every AWS::DynamoDB::Table of ``template``; return {logical id: table name}.

    Key schema, attribute definitions, GSIs, LSIs, billing mode, stream and TTL are copied; settings moto
    ignores (PITR, SSE, tags) are left out. A table without TableName gets its logical id as its name.
    """
    names: dict[str, str] = {}
    for logical_id, resource in template.get("Resources", {}).items():
        if resource.get("Type") != "AWS::DynamoDB::Table":
            continue
        props = resource.get("Properties", {})
        name = props.get("TableName") if isinstance(props.get("TableName"), str) else logical_id
        request: dict[str, Any] = {
            "TableName": name,
            "KeySchema": props["KeySchema"],
            "AttributeDefinitions": props["AttributeDefinitions"],
            "BillingMode": props.get("BillingMode", "PROVISIONED"),
        }
        if request["BillingMode"] == "PROVISIONED":
            request["ProvisionedThroughput"] = props["ProvisionedThroughput"]
        if props.get("GlobalSecondaryIndexes"):
            request["GlobalSecondaryIndexes"] = [
                _index(gsi, request["BillingMode"]) for gsi in props["GlobalSecondaryIndexes"]
            ]
        if props.get("LocalSecondaryIndexes"):
            request["LocalSecondaryIndexes"] = [
                _index(lsi, "PAY_PER_REQUEST") for lsi in props["LocalSecondaryIndexes"]
            ]
        if props.get("StreamSpecification"):
            request["StreamSpecification"] = {"StreamEnabled": True, **props["StreamSpecification"]}
        dynamodb_client.create_table(**request)
        ttl = props.get("TimeToLiveSpecification")
        if ttl and ttl.get("Enabled"):
            dynamodb_client.update_time_to_live(
                TableName=name,
                TimeToLiveSpecification={"AttributeName": ttl["AttributeName"], "Enabled": True},
            )
        names[logical_id] = name
    return names


def _index(index: dict[str, Any], billing_mode: str) -> dict[str, Any]:
    spec = {key: index[key] for key in _GSI_KEYS if key in index}
    if billing_mode == "PROVISIONED" and "ProvisionedThroughput" in index:
        spec["ProvisionedThroughput"] = index["ProvisionedThroughput"]
    return spec


def function_environments(template: dict[str, Any], table_names: dict[str, str]) -> dict[str, dict[str, str]]:
    """{Lambda Handler string: its environment}, with each ``{"Ref": <table>}`` resolved to the table's name."""
    environments: dict[str, dict[str, str]] = {}
    for resource in template.get("Resources", {}).values():
        if resource.get("Type") != "AWS::Lambda::Function":
            continue
        props = resource.get("Properties", {})
        variables = props.get("Environment", {}).get("Variables", {})
        resolved = {}
        for key, value in variables.items():
            if isinstance(value, dict) and value.get("Ref") in table_names:
                resolved[key] = table_names[value["Ref"]]
            elif isinstance(value, str):
                resolved[key] = value
        if isinstance(props.get("Handler"), str):
            environments[props["Handler"]] = resolved
    return environments
