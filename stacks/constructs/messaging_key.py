"""The customer-managed KMS key that encrypts every queue, the alerts topic and the tables."""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from constructs import Construct

from stacks.config import AppConfig
from stacks.constructs.defaults import removal_policy

# CloudWatch alarm actions and EventBridge rule targets publish to the encrypted alerts topic (and EventBridge sends
# to the encrypted queues) on their own behalf. With the AWS-managed SNS key their deliveries are silently dropped,
# because that key's policy cannot be changed. Each may use the key only for this account's resources.
DELIVERING_SERVICES = ("cloudwatch.amazonaws.com", "events.amazonaws.com")


class MessagingKey(Construct):
    """A rotating customer-managed key whose policy lets EventBridge and CloudWatch alarms deliver with it."""

    def __init__(self, scope: Construct, construct_id: str, *, config: AppConfig) -> None:
        super().__init__(scope, construct_id)
        self.key = kms.Key(
            self,
            "Key",
            description="Encrypts the fire-and-forget queues, alerts topic and tables",
            enable_key_rotation=True,
            removal_policy=removal_policy(config),
        )
        self.key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="AllowDeliveringServices",
                principals=[iam.ServicePrincipal(service) for service in DELIVERING_SERVICES],
                actions=["kms:Decrypt", "kms:GenerateDataKey*"],
                resources=["*"],  # in a key policy "*" means this key
                conditions={"StringEquals": {"aws:SourceAccount": Stack.of(self).account}},
            )
        )
