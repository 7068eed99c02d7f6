"""A DynamoDB table's stream as moto records it (its DynamoDB Streams API is not served in-process), each record in
the shape a pipe or an event source mapping passes on (the Lambda/Pipes DynamoDB event's)."""

from __future__ import annotations

import json
from typing import Any

from moto.dynamodb.models import dynamodb_backends

from fire_and_forget.rehearsal.deployment import ACCOUNT


def stream_records(table: str, region: str, since: int = 0) -> list[dict[str, Any]]:
    """The table's stream records from the `since`-th on, in the order DynamoDB recorded them."""
    recorded = dynamodb_backends[ACCOUNT][region].get_table(table).stream_shard.items[since:]
    return [json.loads(json.dumps(record.to_json(), default=str)) for record in recorded]
