"""The customer-managed KMS key that encrypts every queue, the alerts topic and the tables."""

from __future__ import annotations

from constructs import Construct

from stacks.fire_and_forget.defaults import delivering_key
from stacks.fire_and_forget.settings import PipelineSettings

# CloudWatch alarm actions and EventBridge rule targets publish to the encrypted alerts topic (and EventBridge sends
# to the encrypted queues) on their own behalf. With the AWS-managed SNS key their deliveries are silently dropped,
# because that key's policy cannot be changed. Each may use the key only for this account's resources.
DELIVERING_SERVICES = ("cloudwatch.amazonaws.com", "events.amazonaws.com")


class MessagingKey(Construct):
    """A rotating customer-managed key whose policy lets EventBridge and CloudWatch alarms deliver with it."""

    def __init__(self, scope: Construct, construct_id: str, *, config: PipelineSettings) -> None:
        super().__init__(scope, construct_id)
        self.key = delivering_key(
            self, "Key", description="Encrypts the fire-and-forget queues, alerts topic and tables",
            sid="AllowDeliveringServices", services=DELIVERING_SERVICES, config=config,
        )
