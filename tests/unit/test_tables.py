"""create_tables_from_template copies what deploys: keys, GSIs, billing mode, TTL."""

from __future__ import annotations

from typing import Any

import boto3
from moto import mock_aws

from tests.support.tables import create_tables_from_template, function_environments

TEMPLATE: dict[str, Any] = {
    "Resources": {
        "Orders": {
            "Type": "AWS::DynamoDB::Table",
            "Properties": {
                "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
                "AttributeDefinitions": [
                    {"AttributeName": "pk", "AttributeType": "S"},
                    {"AttributeName": "sk", "AttributeType": "S"},
                    {"AttributeName": "gsi1pk", "AttributeType": "S"},
                ],
                "BillingMode": "PAY_PER_REQUEST",
                "GlobalSecondaryIndexes": [
                    {
                        "IndexName": "byCustomer",
                        "KeySchema": [{"AttributeName": "gsi1pk", "KeyType": "HASH"}],
                        "Projection": {"ProjectionType": "ALL"},
                    }
                ],
                "TimeToLiveSpecification": {"AttributeName": "expiresAt", "Enabled": True},
            },
        },
        "Fn": {
            "Type": "AWS::Lambda::Function",
            "Properties": {
                "Handler": "x.handler.handler",
                "Environment": {"Variables": {"ORDERS_TABLE_NAME": {"Ref": "Orders"}, "LEVEL": "INFO"}},
            },
        },
        "Queue": {"Type": "AWS::SQS::Queue", "Properties": {}},
    }
}


@mock_aws
def test_tables_are_created_as_the_template_defines_them() -> None:
    client = boto3.client("dynamodb", region_name="us-east-1")

    names = create_tables_from_template(TEMPLATE, client)

    assert names == {"Orders": "Orders"}
    table = client.describe_table(TableName="Orders")["Table"]
    assert table["KeySchema"] == TEMPLATE["Resources"]["Orders"]["Properties"]["KeySchema"]
    assert table["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"
    assert [index["IndexName"] for index in table["GlobalSecondaryIndexes"]] == ["byCustomer"]
    ttl = client.describe_time_to_live(TableName="Orders")["TimeToLiveDescription"]
    assert (ttl["TimeToLiveStatus"], ttl["AttributeName"]) == ("ENABLED", "expiresAt")
    assert function_environments(TEMPLATE, names) == {
        "x.handler.handler": {"ORDERS_TABLE_NAME": "Orders", "LEVEL": "INFO"}
    }
