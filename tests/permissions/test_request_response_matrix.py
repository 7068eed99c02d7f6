"""The permission matrix of the pipeline in REQUEST_RESPONSE mode (tests/infra/request_response_app.py): every call
of its roles and policies judged by the IAM simulator, the pipe's StartSyncExecution allowed and StartExecution not."""

from __future__ import annotations

from typing import Any

import pytest

from tests.infra import request_response_app
from tests.permissions.matrix import MatrixBuilder, uncovered
from tests.permissions.operator import operator_checks
from tests.permissions.simulator import available, simulate


@pytest.fixture(scope="module")
def matrix() -> MatrixBuilder:
    builder = MatrixBuilder(request_response_app.template()).build()
    operator_checks(builder, request_response_app.STACK_NAME)
    return builder


@pytest.fixture(scope="module")
def verdicts(matrix: MatrixBuilder) -> dict[str, dict[str, Any]]:
    reason = available()
    if reason is not None:
        pytest.fail(f"the permission matrix needs the IAM simulator: {reason}")
    return simulate([check.request() for check in matrix.checks])


def test_every_call_of_the_request_response_stack_gets_the_verdict_aws_would_give(
    matrix: MatrixBuilder, verdicts: dict[str, dict[str, Any]]
) -> None:
    assert not uncovered(matrix)
    wrong = [f"{c.id}: got {verdicts[c.id]['result']} ({verdicts[c.id].get('decisive')})" for c in matrix.checks
             if (verdicts[c.id]["result"] == "Allowed") != c.allowed]
    assert not wrong, "\n".join(wrong)


def test_the_pipe_may_start_only_synchronous_executions_of_its_workflow(matrix: MatrixBuilder) -> None:
    pipe = [c for c in matrix.checks if c.principal == "pipes.amazonaws.com" or "PipeRole" in c.principal]
    allowed = {c.action for c in pipe if c.allowed and c.action.startswith("states:")}
    denied = {c.action for c in pipe if not c.allowed and c.action.startswith("states:")}
    assert allowed == {"states:StartSyncExecution"}
    assert "states:StartExecution" in denied


def test_the_operator_may_run_status_and_the_source_dlq_redrive_and_nothing_on_executions(
        matrix: MatrixBuilder) -> None:
    operator = [c for c in matrix.checks if c.edge.startswith("operator")]
    allowed = {c.action for c in operator if c.allowed}
    assert {"sqs:StartMessageMoveTask", "sqs:ListMessageMoveTasks", "pipes:DescribePipe",
            "cloudwatch:GetMetricData"} <= allowed
    assert not {action for action in allowed if action.startswith(("states:", "dynamodb:"))}
    denied = {c.action for c in operator if not c.allowed and c.why == "not an ff-ops call"}
    assert {"states:ListExecutions", "states:DescribeExecution", "dynamodb:GetItem"} <= denied
