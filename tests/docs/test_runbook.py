"""docs/runbook.md against the code: the alarms it explains list what the stack really counts, and no procedure
deletes what a healer is still to consume. Its commands run against a practice account in tests/demo/test_practice.py.
"""

from __future__ import annotations

import re

from stacks.orders.tasks import ORDER_METRICS, TASKS
from tests.demo.runbook import RUNBOOK, commands

TEXT = RUNBOOK.read_text(encoding="utf-8")


def _tasks_unhealthy() -> str:
    start = TEXT.index("### TasksUnhealthy")
    return TEXT[start:TEXT.index("\n## ", start)]


def test_tasks_unhealthy_names_every_saga_function() -> None:
    listed = re.search(r"two per saga function \(([^)]*)\)", _tasks_unhealthy())
    assert listed is not None
    assert [name.strip() for name in listed.group(1).split(",")] == [spec.construct_id for spec in TASKS]


def test_tasks_unhealthy_lists_the_expected_errors_the_alarms_subtract() -> None:
    listed = re.search(r"raises on purpose\s*\(([^)]*)\)", _tasks_unhealthy())
    assert listed is not None
    documented = {}
    for part in " ".join(listed.group(1).split()).split(";"):
        function, _, metrics = part.partition(":")
        documented[function.strip()] = sorted(re.findall(r"`(\w+)`", metrics))
    assert documented == {task: sorted(metrics) for task, metrics in ORDER_METRICS.expected_errors.items()}


def test_no_procedure_deletes_from_the_queue_the_reconciler_consumes() -> None:
    deletes = [c.text for c in commands(TEXT) if re.search(r"\baws sqs (delete-message|purge-queue)\b", c.text)]
    assert deletes and not [d for d in deletes if "$FAILURE_EVENTS" in d]
