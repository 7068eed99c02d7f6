"""The optional Slack channel for the alerts topic, through AWS Chatbot (Amazon Q Developer in chat applications)."""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_chatbot as chatbot
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sns as sns
from constructs import Construct

from fire_and_forget.construct.settings import PipelineSettings

# What channel members may do at most, whatever role a channel uses: look at alarms and metrics, nothing else.
GUARDRAIL_POLICY = "CloudWatchReadOnlyAccess"


class SlackNotifications(Construct):
    """A Slack channel configuration subscribed to the alerts topic, when both Slack ids are configured.

    `.channel` is None otherwise. E-mail and webhook subscriptions stay on the topic itself (FailureHandling).
    """

    def __init__(self, scope: Construct, construct_id: str, *, settings: PipelineSettings, topic: sns.ITopic) -> None:
        super().__init__(scope, construct_id)
        self.channel: chatbot.SlackChannelConfiguration | None = None
        if settings.slack_workspace_id is None or settings.slack_channel_id is None:
            return
        # The channel only relays notifications: its role has no permissions at all, and the guardrail caps what
        # any channel member could ever run from Slack to read-only CloudWatch.
        role = iam.Role(self, "ChannelRole", assumed_by=iam.ServicePrincipal("chatbot.amazonaws.com"),
                        description="Slack channel of the fire-and-forget alerts: notifications only")
        self.channel = chatbot.SlackChannelConfiguration(
            self,
            "SlackChannel",
            # Chatbot requires a name; derived from the stack so two deployments never collide.
            slack_channel_configuration_name=f"{Stack.of(self).stack_name}-{settings.environment_name}-alerts",
            slack_workspace_id=settings.slack_workspace_id,
            slack_channel_id=settings.slack_channel_id,
            notification_topics=[topic],
            role=role,
            guardrail_policies=[iam.ManagedPolicy.from_aws_managed_policy_name(GUARDRAIL_POLICY)],
            user_role_required=False,
            logging_level=chatbot.LoggingLevel.ERROR,
        )
