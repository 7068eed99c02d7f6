"""Logical ids are pinned from here on: a changed id makes CloudFormation replace the resource, and a replaced
table, queue, key or log group comes back empty (the old one is retained or deleted, never moved).

The pins are tests/infra/logical_ids/<stack>.txt, one `<type> <logical id>` per line. After a deliberate change
(a new resource, or a rename you have a migration for), rewrite them with `python -m tests.infra.test_logical_ids`
and say in the commit why the removed ids may go.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.cdk import CATALOG_STACK_NAME, STACK_NAME, load_template, synthesize

PINS = Path(__file__).resolve().parent / "logical_ids"
# Replacing one of these loses what it holds; the test names them apart.
STATEFUL = ("AWS::DynamoDB::Table", "AWS::SQS::Queue", "AWS::KMS::Key", "AWS::Logs::LogGroup", "AWS::SNS::Topic")


def ids(template: dict[str, Any]) -> list[str]:
    return sorted(f"{resource['Type']} {logical_id}" for logical_id, resource in template["Resources"].items())


def pinned(stack: str) -> list[str]:
    return (PINS / f"{stack}.txt").read_text(encoding="utf-8").split("\n")[:-1]


@pytest.mark.parametrize("fixture", ["template", "catalog_template"])
def test_no_logical_id_changes_unnoticed(fixture: str, request: pytest.FixtureRequest) -> None:
    template = request.getfixturevalue(fixture)
    stack = STACK_NAME if fixture == "template" else CATALOG_STACK_NAME
    now, before = set(ids(template)), set(pinned(stack))
    gone = sorted(before - now)
    lost = [line for line in gone if line.split()[0] in STATEFUL]
    assert not gone, (
        f"{stack}: logical ids changed, so CloudFormation would replace these resources"
        + (f"; these hold data and would come back empty: {lost}" if lost else "")
        + f"\nremoved: {gone}\nadded: {sorted(now - before)}\n"
        "If this is deliberate, rewrite the pins: python -m tests.infra.test_logical_ids"
    )
    added = sorted(now - before)
    assert not added, f"{stack}: new resources {added}; pin them: python -m tests.infra.test_logical_ids"


def test_every_stateful_resource_is_pinned() -> None:
    for stack in (STACK_NAME, CATALOG_STACK_NAME):
        kinds = {line.split()[0] for line in pinned(stack)}
        assert {"AWS::DynamoDB::Table", "AWS::SQS::Queue", "AWS::KMS::Key"} <= kinds, stack


if __name__ == "__main__":
    import tempfile

    assembly = synthesize(Path(tempfile.mkdtemp()))
    for name in (STACK_NAME, CATALOG_STACK_NAME):
        (PINS / f"{name}.txt").write_text("\n".join(ids(load_template(assembly, name))) + "\n", encoding="utf-8")
        print(f"pinned {name}", file=sys.stderr)
