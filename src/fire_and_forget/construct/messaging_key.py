"""The customer-managed KMS key that encrypts every queue, the alerts topic and the tables."""

from __future__ import annotations

from constructs import Construct

from fire_and_forget.construct.defaults import delivering_key
from fire_and_forget.construct.settings import PipelineSettings

# CloudWatch alarm actions publish to the encrypted alerts topic on their own behalf. With an AWS-managed key their
# deliveries are dropped, because that key's policy cannot be changed. EventBridge's statement, for the queues its
# rule writes to, is added by ExecutionEvents to whichever key the pipeline uses.
ALARMS_PRINCIPAL = "cloudwatch.amazonaws.com"


class MessagingKey(Construct):
    """A rotating customer-managed key whose policy lets CloudWatch alarms deliver with it."""

    def __init__(self, scope: Construct, construct_id: str, *, settings: PipelineSettings) -> None:
        super().__init__(scope, construct_id)
        self.key = delivering_key(
            self, "Key", description="Encrypts the fire-and-forget queues, alerts topic and tables",
            sid="AllowCloudWatchAlarms", services=(ALARMS_PRINCIPAL,), settings=settings,
        )
