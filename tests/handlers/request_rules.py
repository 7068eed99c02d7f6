"""DynamoDB rules that moto does not enforce, checked on every request a client sends (a botocore event hook).

botocore already validates each request against the service model (types, required members) before moto sees it;
these are the rules the model cannot express:
- a number (``N``, ``NS``) is a decimal number in a string: DynamoDB refuses ``{"N": "None"}``, moto stores it;
- every ``:value`` and ``#name`` an expression uses is defined, and every one defined is used: DynamoDB refuses
  both ("unused in expressions");
- the read that explains a failed conditional write is strongly consistent: moto is always consistent, DynamoDB's
  default eventually consistent read may return the row as it was before the write that made the condition fail.
Docs: https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_AttributeValue.html,
https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Expressions.ExpressionAttributeValues.html,
https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/HowItWorks.ReadConsistency.html
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

NUMBER = re.compile(r"^-?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")
PLACEHOLDER = re.compile(r"[:#][A-Za-z0-9_]+")
CONDITION_FAILURES = {"ConditionalCheckFailedException", "TransactionCanceledException"}
EXPRESSIONS = (
    "UpdateExpression",
    "ConditionExpression",
    "ProjectionExpression",
    "KeyConditionExpression",
    "FilterExpression",
)


def number_problems(value: Any, where: str = "") -> Iterator[str]:
    """Every ``N``/``NS`` in a request that is not a decimal number."""
    if isinstance(value, dict):
        for key, member in value.items():
            if key == "N" and isinstance(member, str) and not NUMBER.match(member):
                yield f"{where}: N {member!r} is not a number"
            elif key == "NS" and isinstance(member, list):
                yield from (f"{where}: NS {n!r} is not a number" for n in member if not NUMBER.match(str(n)))
            else:
                yield from number_problems(member, f"{where}.{key}" if where else str(key))
    elif isinstance(value, list):
        for index, member in enumerate(value):
            yield from number_problems(member, f"{where}[{index}]")


def placeholder_problems(request: dict[str, Any], where: str = "") -> Iterator[str]:
    """Placeholders used but not defined, or defined but not used, in one request or transaction action."""
    used = {token for name in EXPRESSIONS for token in PLACEHOLDER.findall(str(request.get(name, "")))}
    defined = set(request.get("ExpressionAttributeValues", {})) | set(request.get("ExpressionAttributeNames", {}))
    for token in sorted(used - defined):
        yield f"{where}: {token} is used but not defined"
    for token in sorted(defined - used):
        yield f"{where}: {token} is defined but unused (DynamoDB refuses it)"


def tables_of(operation: str, params: dict[str, Any]) -> set[str]:
    if operation == "TransactWriteItems":
        return {next(iter(action.values()))["TableName"] for action in params.get("TransactItems", [])}
    return {params["TableName"]} if "TableName" in params else set()


class RequestRules:
    """Attach to a DynamoDB client; ``violations`` lists every broken rule, ``explaining_reads`` the reads checked."""

    def __init__(self) -> None:
        self.violations: list[str] = []
        self.requests = 0
        self.explaining_reads = 0
        self._pending: tuple[str, dict[str, Any]] = ("", {})
        self._failed_on: set[str] = set()  # tables whose last conditional write failed and was not read since

    def attach(self, client: Any) -> RequestRules:
        client.meta.events.register("before-parameter-build.dynamodb", self.before)
        client.meta.events.register("after-call.dynamodb", self.after)
        return self

    def before(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        operation = model.name
        self.requests += 1
        self._pending = (operation, params)
        self.violations.extend(f"{operation} {problem}" for problem in number_problems(params))
        actions = [next(iter(a.values())) for a in params.get("TransactItems", [])] or [params]
        for index, action in enumerate(actions):
            self.violations.extend(f"{operation} {p}" for p in placeholder_problems(action, f"action {index}"))
        if operation == "GetItem" and params.get("TableName") in self._failed_on:
            self._failed_on.discard(params["TableName"])
            self.explaining_reads += 1
            if params.get("ConsistentRead") is not True:
                self.violations.append(f"GetItem on {params['TableName']} after a failed condition is not consistent")

    def after(self, parsed: dict[str, Any], **_: Any) -> None:
        operation, params = self._pending
        if parsed.get("Error", {}).get("Code") in CONDITION_FAILURES:
            self._failed_on |= tables_of(operation, params)
