"""The operator CLI against one offline deployment for the whole package, reset before each test.

One rehearsal per package instead of per test keeps tests/ops fast (a deployment takes 1.5-2 s); each test starts from
empty queues and tables and freshly seeded inventory. Probes that look at executions or notifications
(fire_and_forget.rehearsal.accounting) only count the message ids a test passes them and the executions the pipe started
since the reset, so earlier tests' executions do not leak in.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import fire_and_forget.cli.guard
import fire_and_forget.runtime.dlq
from demos.orders.samples import seed_inventory
from fire_and_forget.rehearsal.deployment import ACCOUNT
from fire_and_forget.rehearsal.rehearsal import Rehearsal
from tests.ops.helpers import forget_releases

logging.getLogger("moto.stepfunctions.parser").setLevel(logging.CRITICAL)

HEALING_OUTPUTS = ("HealingPolicy", "ReconcilerDlqUrl", "ScheduleDlqUrl", "ReconcilerFunctionName",
                   "RedriverFunctionName")
QUEUE_OUTPUTS = ("SourceQueueUrl", "SourceDlqUrl", "FailureDlqUrl", "FailureEventsQueueUrl", "EventTargetDlqUrl",
                 "ReconcilerDlqUrl", "ScheduleDlqUrl")


@pytest.fixture(scope="package")
def deployment(cloud_assembly: Path) -> Iterator[Rehearsal]:
    with Rehearsal.start(cloud_assembly) as rehearsal:
        rehearsal.publish_pipe()
        yield rehearsal


@pytest.fixture
def aws(deployment: Rehearsal, monkeypatch: pytest.MonkeyPatch) -> Rehearsal:
    """The deployment with empty queues and tables, inventory seeded, no faults."""
    # Long polling makes the last, empty receive of a read wait 1 s in moto; short polling is exact in moto.
    monkeypatch.setattr(fire_and_forget.runtime.dlq, "DEFAULT_WAIT_SECONDS", 0)
    # SQS allows one PurgeQueue a minute per queue; resetting between tests is not what that rule is about.
    monkeypatch.setenv("MOTO_SQS_ENFORCE_STRICT_QUEUE_PURGE_BEHAVIOUR", "false")
    deployment.faults.clear()
    forget_releases(deployment)
    # rehearsal.run() describes every execution the pipe ever started; earlier tests' are done and not ours.
    deployment.pipe.stats.started.clear()
    for key in QUEUE_OUTPUTS:
        deployment.sqs.purge_queue(QueueUrl=deployment.outputs[key])
    for key in [k for k in deployment.outputs if k.endswith("TableName")]:
        _empty_table(deployment.dynamodb, deployment.outputs[key])
    seed_inventory(deployment.dynamodb, deployment.outputs["InventoryTableName"])
    return deployment


@pytest.fixture
def stack_before_healing(aws: Rehearsal) -> Iterator[Rehearsal]:
    """The deployment as a stack deployed before self-healing looks: without its outputs (restored afterwards)."""
    from moto.cloudformation.models import cloudformation_backends

    stack = next(s for s in cloudformation_backends[ACCOUNT][aws.region].stacks.values() if s.name == aws.stack.name)
    outputs = stack.output_map._output_json_map
    removed = {key: outputs.pop(key) for key in HEALING_OUTPUTS if key in outputs}
    assert set(removed) == set(HEALING_OUTPUTS)
    try:
        yield aws
    finally:
        outputs.update(removed)


@pytest.fixture
def cli() -> CliRunner:
    return CliRunner()


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """ff-ops sees a terminal on stdin, so it asks for confirmation (CliRunner's stdin is a pipe, and ff-ops refuses to
    ask a pipe): the test answers through `input=`."""
    monkeypatch.setattr(fire_and_forget.cli.guard, "stdin_is_terminal", lambda: True)


def _empty_table(dynamodb: Any, table: str) -> None:
    keys = [k["AttributeName"] for k in dynamodb.describe_table(TableName=table)["Table"]["KeySchema"]]
    for page in dynamodb.get_paginator("scan").paginate(TableName=table):
        for item in page["Items"]:
            dynamodb.delete_item(TableName=table, Key={k: item[k] for k in keys})
