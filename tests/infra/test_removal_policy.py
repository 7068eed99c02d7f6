"""Data-bearing resources survive an update or a deletion, and a failed first deploy leaves nothing behind.

CloudFormation keeps a `Retain` resource even when stack *creation* rolls back, so every failed first deploy would
orphan a key, six tables, the queues and the log groups. `RetainExceptOnCreate` keeps them on update and delete
only: https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-attribute-deletionpolicy.html
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support.cdk import cdk_context, load_template, synthesize

DATA_BEARING = (
    "AWS::KMS::Key", "AWS::DynamoDB::Table", "AWS::SQS::Queue", "AWS::Logs::LogGroup",
)


def _policies(template: dict[str, Any]) -> dict[str, tuple[str | None, str | None]]:
    return {
        logical_id: (resource.get("DeletionPolicy"), resource.get("UpdateReplacePolicy"))
        for logical_id, resource in template["Resources"].items()
        if resource["Type"] in DATA_BEARING
    }


def test_retain_keeps_data_on_update_and_delete_but_not_after_a_failed_create(template: dict[str, Any]) -> None:
    policies = _policies(template)
    assert len(policies) >= 20  # key, 6 tables, queues, log groups: the check below is not vacuous
    wrong = {lid: p for lid, p in policies.items() if p != ("RetainExceptOnCreate", "Retain")}
    assert wrong == {}


def test_destroy_deletes_everything_for_throwaway_stacks(tmp_path: Path) -> None:
    template = load_template(synthesize(tmp_path, cdk_context() | {"ff:removalPolicy": "destroy"}))
    wrong = {lid: p for lid, p in _policies(template).items() if p != ("Delete", "Delete")}
    assert wrong == {}
