"""A fresh offline deployment of the synthesized app for each workflow test."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from demos.orders.samples import seed_inventory
from fire_and_forget.rehearsal.rehearsal import Rehearsal

# The interpreter logs every failed state at ERROR; the tests assert on the executions instead.
logging.getLogger("moto.stepfunctions.parser").setLevel(logging.CRITICAL)


@pytest.fixture
def aws(cloud_assembly: Path) -> Iterator[Rehearsal]:
    """The template and Lambda assets of this test session, deployed into moto, inventory seeded."""
    with Rehearsal.start(cloud_assembly) as rehearsal:
        seed_inventory(rehearsal.dynamodb, rehearsal.outputs["InventoryTableName"])
        yield rehearsal
