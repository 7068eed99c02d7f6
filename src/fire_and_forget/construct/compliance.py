"""cdk-nag packs that run in every synth, and the helper every acknowledged finding goes through."""

from __future__ import annotations

from aws_cdk import Acknowledgment, App, Validations
from cdk_nag import AwsSolutionsChecks, ServerlessChecks
from constructs import IConstruct


def add_compliance_checks(app: App) -> None:
    """Run the AwsSolutions and Serverless packs; any unacknowledged finding fails synth."""
    Validations.of(app).add_plugins(AwsSolutionsChecks(app), ServerlessChecks(app))


def acknowledge(scope: IConstruct, rule: str, reason: str) -> None:
    """Acknowledge one finding on `scope` and its children only; `rule` carries the pack and the scope of it,
    e.g. `AwsSolutions-IAM5[Resource::*]`, so a wider finding of the same rule still fails synth."""
    pack = rule.split("-", 1)[0]
    Validations.of(scope).acknowledge(Acknowledgment(id=f"{pack}::{rule}", reason=reason))
