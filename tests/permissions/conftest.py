"""One synthesized app with every optional principal (e-mail DLQ, Slack and Teams channels, the carrier's answerer:
tests/conftest.py's `full_assembly`), one simulator run per session."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.permissions.matrix import MatrixBuilder
from tests.permissions.operator import operator_checks
from tests.permissions.simulator import available, simulate
from tests.support.cdk import CATALOG_STACK_NAME, STACK_NAME, load_template

_STATS: dict[str, Any] = {}


@pytest.fixture(scope="session", params=[STACK_NAME, CATALOG_STACK_NAME], ids=["orders", "catalog"])
def stack_name(request: pytest.FixtureRequest) -> str:
    """Each example: the same construct, so the same matrix, built from each stack's own template."""
    name: str = request.param
    return name


@pytest.fixture(scope="session")
def full_template(full_assembly: Path, stack_name: str) -> dict[str, Any]:
    return load_template(full_assembly, stack_name)


@pytest.fixture(scope="session")
def matrix(full_template: dict[str, Any], stack_name: str) -> MatrixBuilder:
    builder = MatrixBuilder(full_template).build()
    operator_checks(builder, stack_name)
    return builder


@pytest.fixture(scope="session")
def verdicts(matrix: MatrixBuilder) -> dict[str, dict[str, Any]]:
    """Check id -> the simulator's verdict, for every check of the matrix, from one Node process."""
    reason = available()
    if reason is not None:
        pytest.fail(f"the permission matrix needs the IAM simulator: {reason}")
    started = time.perf_counter()
    results = simulate([check.request() for check in matrix.checks])
    for key, value in (("edges", len(matrix.edges)), ("checks", len(matrix.checks)),
                       ("seconds", time.perf_counter() - started), ("allowed", sum(c.allowed for c in matrix.checks))):
        _STATS[key] = _STATS.get(key, 0) + value  # summed over the two stacks
    return results


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _STATS:
        terminalreporter.write_line(
            f"permission matrix: {_STATS['edges']} edges, {_STATS['checks']} checks "
            f"({_STATS['allowed']} must be allowed, {_STATS['checks'] - _STATS['allowed']} denied), "
            f"simulated in {_STATS['seconds']:.1f} s"
        )
