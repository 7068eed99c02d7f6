"""The optional chat channels of the alerts topic, through Amazon Q Developer in chat applications (AWS Chatbot):
a Slack channel, a Microsoft Teams channel, or both."""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_chatbot as chatbot
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sns as sns
from constructs import Construct

from fire_and_forget.construct.settings import PipelineSettings

# What channel members may do at most, whatever role a channel uses: look at alarms and metrics, nothing else.
GUARDRAIL_POLICY = "CloudWatchReadOnlyAccess"


class ChatNotifications(Construct):
    """A channel configuration subscribed to the alerts topic for each chat application whose ids are configured.

    `.channel` (Slack) and `.teams_channel` are None when theirs are not. E-mail and webhook subscriptions stay on the
    topic itself (FailureHandling).
    """

    def __init__(self, scope: Construct, construct_id: str, *, settings: PipelineSettings, topic: sns.ITopic) -> None:
        super().__init__(scope, construct_id)
        self.channel: chatbot.SlackChannelConfiguration | None = None
        self.teams_channel: chatbot.CfnMicrosoftTeamsChannelConfiguration | None = None
        workspace, slack_channel = settings.slack_workspace_id, settings.slack_channel_id
        team, tenant, teams_channel = settings.teams_team_id, settings.teams_tenant_id, settings.teams_channel_id
        # The settings take each application's ids all together or not at all.
        if workspace is None and team is None:
            return
        # The channels only relay notifications: their role has no permissions at all, and the guardrail caps what
        # any channel member could ever run from the chat to read-only CloudWatch.
        role = iam.Role(self, "ChannelRole", assumed_by=iam.ServicePrincipal("chatbot.amazonaws.com"),
                        description="Chat channels of the fire-and-forget alerts: notifications only")
        guardrail = iam.ManagedPolicy.from_aws_managed_policy_name(GUARDRAIL_POLICY)
        # Chatbot requires a name per configuration; derived from the stack so two deployments never collide.
        name = f"{Stack.of(self).stack_name}-{settings.environment_name}-alerts"
        if workspace is not None and slack_channel is not None:
            self.channel = chatbot.SlackChannelConfiguration(
                self,
                "SlackChannel",
                slack_channel_configuration_name=name,
                slack_workspace_id=workspace,
                slack_channel_id=slack_channel,
                notification_topics=[topic],
                role=role,
                guardrail_policies=[guardrail],
                user_role_required=False,
                logging_level=chatbot.LoggingLevel.ERROR,
            )
        if team is not None and tenant is not None and teams_channel is not None:
            # No L2 construct for Teams in aws-cdk-lib: the resource itself, with the same role, guardrail and level.
            self.teams_channel = chatbot.CfnMicrosoftTeamsChannelConfiguration(
                self,
                "TeamsChannel",
                configuration_name=f"{name}-teams",
                team_id=team,
                teams_tenant_id=tenant,
                teams_channel_id=teams_channel,
                iam_role_arn=role.role_arn,
                sns_topic_arns=[topic.topic_arn],
                guardrail_policies=[guardrail.managed_policy_arn],
                user_role_required=False,
                logging_level="ERROR",
            )
