"""The AWS clients of one ff-ops run, made the usual AWS way (profile, region, environment).

boto3 and botocore's Config are imported when the first clients are made, not with the module: they are most of
ff-ops' start-up, and `ff-ops --help`, `--version` and a usage error need neither.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from botocore.config import Config
    from mypy_boto3_cloudformation import CloudFormationClient
    from mypy_boto3_cloudwatch import CloudWatchClient
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_pipes import EventBridgePipesClient
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_ssm import SSMClient
    from mypy_boto3_stepfunctions import SFNClient

    RETRIES: Config  # made on first use, by __getattr__ below


@functools.cache
def _retries() -> Config:
    """RETRIES: standard mode retries throttling and 5xx with backoff; what still fails after that is reported (exit
    code 6)."""
    from botocore.config import Config

    return Config(retries={"mode": "standard", "max_attempts": 6}, user_agent_extra="ff-ops")


def __getattr__(name: str) -> Any:
    if name == "RETRIES":
        return _retries()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class Clients:
    """One client per service ff-ops calls, each made the first time a command asks for it: a client loads its
    service's model from disk (about 20 ms apiece), and most commands call two or three of the seven services."""

    def __init__(self, region: str, make: Callable[[str], Any]) -> None:
        self.region = region
        self._make = make  # boto3 service name -> a client of it

    @functools.cached_property
    def cloudformation(self) -> CloudFormationClient:
        return cast("CloudFormationClient", self._make("cloudformation"))

    @functools.cached_property
    def sqs(self) -> SQSClient:
        return cast("SQSClient", self._make("sqs"))

    @functools.cached_property
    def sfn(self) -> SFNClient:
        return cast("SFNClient", self._make("stepfunctions"))

    @functools.cached_property
    def ssm(self) -> SSMClient:
        return cast("SSMClient", self._make("ssm"))

    @functools.cached_property
    def pipes(self) -> EventBridgePipesClient:
        return cast("EventBridgePipesClient", self._make("pipes"))

    @functools.cached_property
    def cloudwatch(self) -> CloudWatchClient:
        return cast("CloudWatchClient", self._make("cloudwatch"))

    @functools.cached_property
    def dynamodb(self) -> DynamoDBClient:
        """`executions redrive` reads the Reconciler's claims in the deliveries table."""
        return cast("DynamoDBClient", self._make("dynamodb"))

    @functools.cached_property
    def sts(self) -> Any:
        """GetCallerIdentity, the audit's "who" (no stubs for STS among the dev dependencies)."""
        return self._make("sts")


def connect(region: str | None = None, profile: str | None = None) -> Clients:
    """Clients for `region` / `profile`; None falls back to AWS_REGION, AWS_PROFILE and the config files."""
    import boto3

    retries = _retries()
    # botocore reads AWS_DEFAULT_REGION; AWS_REGION is what the AWS CLI v2 and the SDKs of other languages read.
    session = boto3.Session(region_name=region or os.environ.get("AWS_REGION") or None, profile_name=profile)

    def make(service: str) -> Any:
        return session.client(service, config=retries)  # type: ignore[call-overload]

    return Clients(session.region_name or "", make)
