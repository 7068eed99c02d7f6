"""The AWS clients of one ff-ops run, made the usual AWS way (profile, region, environment)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

import boto3
from botocore.config import Config

if TYPE_CHECKING:
    from mypy_boto3_cloudformation import CloudFormationClient
    from mypy_boto3_cloudwatch import CloudWatchClient
    from mypy_boto3_pipes import EventBridgePipesClient
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_stepfunctions import SFNClient

# Standard mode retries throttling and 5xx with backoff; what still fails after that is reported (exit code 6).
RETRIES = Config(retries={"mode": "standard", "max_attempts": 6}, user_agent_extra="ff-ops")


@dataclass(frozen=True)
class Clients:
    """One client per service ff-ops calls."""

    region: str
    cloudformation: CloudFormationClient
    sqs: SQSClient
    sfn: SFNClient
    pipes: EventBridgePipesClient
    cloudwatch: CloudWatchClient


def connect(region: str | None = None, profile: str | None = None) -> Clients:
    """Clients for `region` / `profile`; None falls back to AWS_REGION, AWS_PROFILE and the config files."""
    # botocore reads AWS_DEFAULT_REGION; AWS_REGION is what the AWS CLI v2 and the SDKs of other languages read.
    session = boto3.Session(region_name=region or os.environ.get("AWS_REGION") or None, profile_name=profile)
    return Clients(
        region=session.region_name or "",
        cloudformation=session.client("cloudformation", config=RETRIES),
        sqs=session.client("sqs", config=RETRIES),
        sfn=session.client("stepfunctions", config=RETRIES),
        pipes=session.client("pipes", config=RETRIES),
        cloudwatch=session.client("cloudwatch", config=RETRIES),
    )
