"""The AWS clients of one ff-ops run, made the usual AWS way (profile, region, environment).

boto3 and botocore's Config are imported when the first clients are made, not with the module: they are most of
ff-ops' start-up, and `ff-ops --help`, `--version` and a usage error need neither.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from botocore.config import Config
    from mypy_boto3_cloudformation import CloudFormationClient
    from mypy_boto3_cloudwatch import CloudWatchClient
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_pipes import EventBridgePipesClient
    from mypy_boto3_sqs import SQSClient
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


@dataclass(frozen=True)
class Clients:
    """One client per service ff-ops calls."""

    region: str
    cloudformation: CloudFormationClient
    sqs: SQSClient
    sfn: SFNClient
    pipes: EventBridgePipesClient
    cloudwatch: CloudWatchClient
    dynamodb: DynamoDBClient  # `executions redrive` reads the Reconciler's claims in the deliveries table
    sts: Any  # GetCallerIdentity, the audit's "who" (no stubs for STS among the dev dependencies)


def connect(region: str | None = None, profile: str | None = None) -> Clients:
    """Clients for `region` / `profile`; None falls back to AWS_REGION, AWS_PROFILE and the config files."""
    import boto3

    retries = _retries()
    # botocore reads AWS_DEFAULT_REGION; AWS_REGION is what the AWS CLI v2 and the SDKs of other languages read.
    session = boto3.Session(region_name=region or os.environ.get("AWS_REGION") or None, profile_name=profile)
    return Clients(
        region=session.region_name or "",
        cloudformation=session.client("cloudformation", config=retries),
        sqs=session.client("sqs", config=retries),
        sfn=session.client("stepfunctions", config=retries),
        pipes=session.client("pipes", config=retries),
        cloudwatch=session.client("cloudwatch", config=retries),
        dynamodb=session.client("dynamodb", config=retries),
        sts=session.client("sts", config=retries),
    )
