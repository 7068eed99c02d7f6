"""Where HandleFailure puts what failed: the failure DLQ, and the alerts topic that announces it."""

from __future__ import annotations

from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from constructs import Construct

from stacks.config import AppConfig
from stacks.constructs.defaults import dead_letter_queue


class FailureHandling(Construct):
    """The failure DLQ (failed orders with their error) and the encrypted, TLS-only alerts topic."""

    def __init__(self, scope: Construct, construct_id: str, *, key: kms.IKey, config: AppConfig) -> None:
        super().__init__(scope, construct_id)
        self.failure_dlq = dead_letter_queue(self, "FailureDlq", key=key, config=config)
        self.alerts_topic = sns.Topic(
            self,
            "AlertsTopic",
            display_name=f"Fire-and-forget alerts ({config.environment_name})",
            master_key=key,
            enforce_ssl=True,
        )
        if config.alarm_email:
            self.alerts_topic.add_subscription(subscriptions.EmailSubscription(config.alarm_email))
        if config.webhook_url:
            self.alerts_topic.add_subscription(subscriptions.UrlSubscription(config.webhook_url))
