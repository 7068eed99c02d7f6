"""Where HandleFailure puts what failed: the failure DLQ, and the alerts topic that announces it."""

from __future__ import annotations

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from fire_and_forget.construct.defaults import dead_letter_queue
from fire_and_forget.construct.settings import PipelineSettings


class FailureHandling(Construct):
    """The failure DLQ (failed messages with their error) and the encrypted, TLS-only alerts topic.

    The topic's policy replaces SNS's default one, so every AWS service that publishes to it on its own behalf is
    allowed here by name, scoped to this account's own resources (confused deputy): CloudWatch alarms. Nothing
    else needs a statement: the workflow and the Reconciler publish with their roles' identity policies, and no
    EventBridge rule targets the topic directly (the failure rule feeds the Reconciler, which announces).
    """

    def __init__(self, scope: Construct, construct_id: str, *, key: kms.IKey, settings: PipelineSettings,
                 failure_dlq: bool = True) -> None:
        super().__init__(scope, construct_id)
        self.undelivered_alerts: sqs.Queue | None = None
        # REQUEST_RESPONSE has none: a failed message stays in the source queue, and ends in the source DLQ.
        self.failure_dlq = dead_letter_queue(self, "FailureDlq", key=key, settings=settings) if failure_dlq else None
        self.alerts_topic = sns.Topic(
            self,
            "AlertsTopic",
            display_name=f"Fire-and-forget alerts ({settings.environment_name})",
            master_key=key,
            enforce_ssl=True,
        )
        self._allow_alarms_to_publish()
        if settings.alarm_email or settings.webhook_url:
            self._subscribe(key, settings)

    def _allow_alarms_to_publish(self) -> None:
        stack = Stack.of(self)
        self.alerts_topic.add_to_resource_policy(
            iam.PolicyStatement(
                sid="AllowThisAccountsAlarms",
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["sns:Publish"],
                resources=[self.alerts_topic.topic_arn],
                conditions={
                    "ArnLike": {
                        "aws:SourceArn": stack.format_arn(
                            service="cloudwatch",
                            resource="alarm",
                            resource_name="*",
                            arn_format=ArnFormat.COLON_RESOURCE_NAME,
                        )
                    },
                    "StringEquals": {"aws:SourceAccount": stack.account},
                },
            )
        )

    def _subscribe(self, key: kms.IKey, settings: PipelineSettings) -> None:
        # An alert SNS could not deliver after its retries is kept here instead of being dropped. SNS writes to
        # the encrypted queue on its own behalf, so the key must let it.
        self.undelivered_alerts = dead_letter_queue(self, "UndeliveredAlertsDlq", key=key, settings=settings)
        key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="AllowSnsDeadLetterDeliveries",
                principals=[iam.ServicePrincipal("sns.amazonaws.com")],
                actions=["kms:Decrypt", "kms:GenerateDataKey*"],
                resources=["*"],  # in a key policy "*" means this key
                # The topic's own ARN here would make the key and the topic depend on each other.
                conditions={"StringEquals": {"aws:SourceAccount": Stack.of(self).account}},
            )
        )
        if settings.alarm_email:
            self.alerts_topic.add_subscription(
                subscriptions.EmailSubscription(settings.alarm_email, dead_letter_queue=self.undelivered_alerts)
            )
        if settings.webhook_url:
            self.alerts_topic.add_subscription(
                subscriptions.UrlSubscription(settings.webhook_url, dead_letter_queue=self.undelivered_alerts)
            )
