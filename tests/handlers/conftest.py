"""Handler-test fixtures: a moto account whose tables come from the synthesized template, and a Lambda context."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from moto import mock_aws

# Powertools reads these when common.observability is first imported, before any fixture runs.
os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "order-saga")
os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "FireAndForget")

from common import aws, idempotency  # noqa: E402 - after the Powertools environment above
from tests.handlers.account import Account  # noqa: E402
from tests.support.tables import create_tables_from_template, function_environments  # noqa: E402


@dataclass
class FakeLambdaContext:
    function_name: str = "order-saga-test"
    function_version: str = "$LATEST"
    memory_limit_in_mb: int = 256
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:order-saga-test"
    aws_request_id: str = "5b2a6a40-5d5b-4f7e-9f6f-0c1d2e3f4a5b"
    log_group_name: str = "/aws/lambda/order-saga-test"
    log_stream_name: str = "2026/11/29/[$LATEST]0123456789abcdef"

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


@pytest.fixture
def lambda_context() -> FakeLambdaContext:
    return FakeLambdaContext()


@contextmanager
def emulated_account(template: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> Iterator[Account]:
    """A fresh emulated account holding every table of the template, with each function's environment set."""
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        names = create_tables_from_template(template, client)
        environments = function_environments(template, names)
        for environment in environments.values():
            for key, value in environment.items():
                monkeypatch.setenv(key, value)
        # Cached clients and idempotency stores belong to the previous emulated account.
        aws.reset()
        idempotency.reset()
        try:
            yield Account(client, environments)
        finally:
            aws.reset()
            idempotency.reset()


@pytest.fixture
def account(template: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> Iterator[Account]:
    with emulated_account(template, monkeypatch) as emulated:
        yield emulated
