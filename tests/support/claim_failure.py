"""What the failure tail's ClaimFailure writes on a message's row, with the expressions of its own ASL
(fire_and_forget/construct/asl/failure_tail.asl.json), for tests that write the row the workflow would."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import fire_and_forget

TAIL = Path(fire_and_forget.__file__).resolve().parent / "construct" / "asl" / "failure_tail.asl.json"


@cache
def _parameters() -> dict[str, Any]:
    parameters: dict[str, Any] = json.loads(TAIL.read_text(encoding="utf-8"))["States"]["ClaimFailure"]["Parameters"]
    return parameters


def claim_failure(dynamodb: Any, table: str, message_id: str, execution_arn: str, *, error: str, state: str,
                  manual_repair: bool = False) -> None:
    """ClaimFailure's UpdateItem, its expressions read from the ASL and its values the execution's own."""
    parameters = _parameters()
    values = {":execution": {"S": execution_arn}, ":failed": {"S": "FAILED"}, ":error": {"S": error},
              ":state": {"S": state}, ":manual": {"BOOL": manual_repair}}
    assert set(values) == set(parameters["ExpressionAttributeValues"]), "ClaimFailure's values changed"
    dynamodb.update_item(TableName=table, Key={"messageId": {"S": message_id}},
                         UpdateExpression=parameters["UpdateExpression"],
                         ConditionExpression=parameters["ConditionExpression"],
                         ExpressionAttributeNames=parameters["ExpressionAttributeNames"],
                         ExpressionAttributeValues=values)
