"""Every event pattern in the template obeys EventBridge's own validation, which moto's matcher does not apply.

EventBridge rejects a pattern with an empty array ("Event pattern is not valid. Reason: Empty arrays are not
allowed"), a leaf that is not an array, or an unknown operator. moto accepts all three, so only this check over the
synthesized template would have caught `"error": []` before a first `cdk deploy`.
Rules: https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-event-patterns.html and
https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-create-pattern-operators.html
"""

from __future__ import annotations

from typing import Any

from tests.support.template import event_pattern, of_type

# The content-filter operators EventBridge documents, with the value shape each takes.
OPERATORS = {"prefix", "suffix", "anything-but", "numeric", "exists", "cidr", "equals-ignore-case", "wildcard"}


def pattern_problems(pattern: Any, path: str = "$") -> list[str]:
    """Everything EventBridge would refuse in a pattern, one line per problem (empty when valid)."""
    if not isinstance(pattern, dict) or not pattern:
        return [f"{path}: a pattern level must be a non-empty object"]
    problems: list[str] = []
    for key, value in pattern.items():
        where = f"{path}.{key}"
        if key == "$or":
            if not isinstance(value, list) or len(value) < 2:
                problems.append(f"{where}: $or takes an array of at least two patterns")
                continue
            for index, branch in enumerate(value):
                problems += pattern_problems(branch, f"{where}[{index}]")
        elif isinstance(value, dict):
            problems += pattern_problems(value, where)
        elif not isinstance(value, list):
            problems.append(f"{where}: a leaf must be an array of values, got {type(value).__name__}")
        elif not value:
            problems.append(f"{where}: empty arrays are not allowed")
        else:
            problems += [p for item in value for p in _matcher_problems(item, where)]
    return problems


def _matcher_problems(item: Any, where: str) -> list[str]:
    if item is None or isinstance(item, str | int | float | bool):
        return []
    if not isinstance(item, dict) or len(item) != 1:
        return [f"{where}: a matcher is a value or an object with exactly one operator, got {item!r}"]
    (operator, argument), = item.items()
    if operator not in OPERATORS:
        return [f"{where}: unknown operator {operator!r}"]
    if operator == "exists" and not isinstance(argument, bool):
        return [f"{where}: exists takes true or false"]
    if operator == "anything-but" and (argument == [] or argument == {} or argument is None):
        return [f"{where}: anything-but needs a value, a non-empty array or an operator"]
    if operator == "numeric" and (not isinstance(argument, list) or not argument):
        return [f"{where}: numeric takes a non-empty array"]
    return []


def test_the_validator_refuses_what_eventbridge_refuses() -> None:
    # The defect CDK produced from `[None]`, and the other shapes EventBridge rejects.
    assert pattern_problems({"detail": {"error": []}}) == ["$.detail.error: empty arrays are not allowed"]
    assert pattern_problems({"detail": {"status": "FAILED"}})
    assert pattern_problems({"detail": {"status": [{"starts-with": "F"}]}})
    assert pattern_problems({"detail": {"$or": [{"a": ["x"]}]}})
    assert pattern_problems({"detail": {"error": [{"exists": "no"}]}})
    pattern = {"detail": {"error": [None, {"anything-but": ["FailureRecorded"]}, {"exists": False}]}}
    assert pattern_problems(pattern) == []


def test_the_template_has_rules_to_check(template: dict[str, Any]) -> None:
    assert of_type(template, "AWS::Events::Rule"), "no rule found: the check below would pass vacuously"


def test_every_rule_pattern_is_one_eventbridge_accepts(template: dict[str, Any]) -> None:
    for logical_id, rule in of_type(template, "AWS::Events::Rule").items():
        if "EventPattern" not in rule["Properties"]:
            continue  # a schedule rule
        assert pattern_problems(event_pattern(rule)) == [], logical_id


def test_the_failure_rule_keeps_its_null_match(template: dict[str, Any]) -> None:
    # CDK drops None from an L2 pattern; only the JSON-string pattern keeps it, and only the template shows it.
    rule = next(r for lid, r in of_type(template, "AWS::Events::Rule").items()
                if lid.startswith("PipelineExecutionEvents"))
    branches = event_pattern(rule)["detail"]["$or"]
    assert {"status": ["FAILED"], "error": [None]} in branches
    assert {"status": ["FAILED"], "error": [{"exists": False}]} in branches
