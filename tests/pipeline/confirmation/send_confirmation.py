"""SendConfirmation (``send_confirmation.handler``): the third-workflow example's task, run by the tests in the
rehearsal: it shows how a task uses the construct's runtime (the delivery claim, transient errors)."""

from __future__ import annotations

import json
import os
from typing import Any

import boto3

from fire_and_forget.runtime.deliveries import DynamoDBDeliveryClaims
from fire_and_forget.runtime.errors import DuplicateDelivery, aws_errors_as_transient


def handler(event: dict[str, Any], context: object) -> dict[str, Any]:
    record = event["record"]  # the pipe's SQS record: $$.Execution.Input[0]
    claims = DynamoDBDeliveryClaims(
        boto3.client("dynamodb"), os.environ["DELIVERIES_TABLE_NAME"], int(os.environ["DELIVERY_CLAIM_TTL_SECONDS"])
    )
    # Claim before the side effect: a redelivered message's second execution ends at DuplicateDeliveryIgnored.
    if not claims.claim(record["messageId"], event["executionArn"]):
        raise DuplicateDelivery(record["messageId"])
    request = json.loads(record["body"])
    with aws_errors_as_transient("sending the confirmation"):
        boto3.client("sesv2").send_email(
            FromEmailAddress=os.environ["SENDER"],
            Destination={"ToAddresses": [request["email"]]},
            Content={"Simple": {"Subject": {"Data": "Confirmed"}, "Body": {"Text": {"Data": request["text"]}}}},
        )
    return {"requestId": request["requestId"], "sent": True}
