"""The alert path's own channel: a second topic, under its own key, for the alarms about the alerting itself."""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from constructs import Construct

from fire_and_forget.construct.compliance import acknowledge
from fire_and_forget.construct.defaults import delivering_key
from fire_and_forget.construct.settings import PipelineSettings

# The alarms that watch the alerting path itself (the alerts topic, the rule that feeds it, their DLQs). Each also
# notifies the AlertPathTopic: when the alerts topic is the thing failing, its own alarm cannot be delivered there.
ALERT_PATH_ALARMS = (
    "RuleFailedInvocations",
    "RuleTargetDlqNotEmpty",
    "UndeliveredAlertsDlqNotEmpty",
    "ReconcilerDlqNotEmpty",
    "ReconcilerErrors",
    "AlertsTopicNotificationsFailed",
)
ALARMS_PRINCIPAL = "cloudwatch.amazonaws.com"


class AlertPath(Construct):
    """`.topic`, encrypted with `.key` (not the messaging key), e-mailed to `alertPathEmail` (default `alarmEmail`).

    Independent of the alerts topic in everything one outage could share: another topic, another customer-managed
    key, another subscription. Only CloudWatch alarms of this account may publish to it. Why: docs/design.md,
    "When the alerts topic itself is down".
    """

    def __init__(self, scope: Construct, construct_id: str, *, settings: PipelineSettings) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        # Confused-deputy guard: CloudWatch publishes on behalf of this account's alarms only.
        alarms_of_this_account = {
            "StringEquals": {"aws:SourceAccount": stack.account},
            "ArnLike": {"aws:SourceArn": f"arn:{stack.partition}:cloudwatch:{stack.region}:{stack.account}:alarm:*"},
        }
        # An encrypted topic as an alarm action needs a customer-managed key that lets CloudWatch use it.
        self.key = delivering_key(
            self, "Key", description="Encrypts the fire-and-forget alert-path topic (apart from the messaging key)",
            sid="AllowCloudWatchAlarms", services=(ALARMS_PRINCIPAL,), settings=settings,
        )
        self.topic = sns.Topic(
            self,
            "AlertPathTopic",
            display_name=f"Fire-and-forget alert path ({settings.environment_name})",
            master_key=self.key,
            enforce_ssl=True,
        )
        # enforce_ssl writes a topic policy, which replaces the default one: the alarms need their own Allow.
        self.topic.add_to_resource_policy(
            iam.PolicyStatement(
                sid="AllowCloudWatchAlarms",
                principals=[iam.ServicePrincipal(ALARMS_PRINCIPAL)],
                actions=["sns:Publish"],
                resources=[self.topic.topic_arn],
                conditions=alarms_of_this_account,
            )
        )
        self.email = settings.alert_path_email or settings.alarm_email
        if self.email:
            subscription = self.topic.add_subscription(subscriptions.EmailSubscription(self.email))
            acknowledge(
                subscription,
                "Serverless-SNSRedrivePolicy",
                "The second channel's failed deliveries are told on the first: AlertPathNotificationsFailed "
                "(NumberOfNotificationsFailed of this topic) notifies the alerts topic. A DLQ here would hold "
                "alarm notifications nobody reads; the alarm state stays visible in CloudWatch.",
            )
