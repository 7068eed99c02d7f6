"""The pipeline's deployment settings: one typed, validated object with the defaults every pipeline deploys with.

Read from the CDK context by the app (stacks/config.py, keys `ff:<camelCase>`), or built directly in code by a
stack that uses the construct: `PipelineSettings(environment_name="prod", alarm_email="ops@example.com")`.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

# The values CloudWatch Logs accepts for a retention period.
LOG_RETENTION_DAYS = (
    1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653,
)

# SQS keeps a message at most 14 days; Step Functions redrives executions up to 14 days old.
MAX_RETENTION_DAYS = 14
# What the two queues that feed a DLQ keep a message: the source queue (docs/design.md, "Source queue: sizes,
# visibility timeout, duplicates") and the failure-events queue ("Self-healing resources: what AWS enforces"). SQS
# moves a message to its DLQ with its original enqueue timestamp, so every DLQ must keep a message longer than its
# source: dlqRetentionDays starts above both (docs/decisions/0014-every-dlq-outlives-its-source.md).
SOURCE_QUEUE_RETENTION_DAYS = 4
FAILURE_EVENTS_RETENTION_DAYS = 4
MIN_DLQ_RETENTION_DAYS = max(SOURCE_QUEUE_RETENTION_DAYS, FAILURE_EVENTS_RETENTION_DAYS) + 1

# Where alarm descriptions link the runbook: a placeholder for the fork that deploys this; set ff:runbookUrl to the
# runbook's address in your own repository or wiki (an e-mail or a Slack message cannot open a relative path).
DEFAULT_RUNBOOK_URL = "https://github.com/YOUR-ORG/fire-and-forget/blob/main/docs/runbook.md"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, alias_generator=to_camel, populate_by_name=True)


class RetryConfig(_Model):
    """Backoff for transient errors of the workflow's Lambda tasks (FULL jitter is always on)."""

    interval_seconds: int = Field(default=2, ge=1, le=60)
    max_attempts: int = Field(default=4, ge=0, le=10)
    backoff_rate: float = Field(default=2.0, ge=1.0, le=5.0)
    max_delay_seconds: int = Field(default=30, ge=1, le=900)
    compensation_max_attempts: int = Field(default=6, ge=1, le=10)
    # Lambda's throttle (429 TooManyRequestsException: the concurrency is used up) says the function did not run. A
    # FIRE_AND_FORGET workflow retries it with a retrier of its own, longer than other transient errors, so that a
    # burst that exhausts Lambda's concurrency is waited out, its compensations included, rather than failed (0:
    # throttles share the transient-error retrier). REQUEST_RESPONSE leaves the waiting to the source queue.
    throttle_max_attempts: int = Field(default=10, ge=0, le=20)
    throttle_max_delay_seconds: int = Field(default=30, ge=1, le=900)


class AlarmConfig(_Model):
    """Thresholds and periods of the detection alarms."""

    period_minutes: int = Field(default=5, ge=1, le=60)
    executions_failed_threshold: int = Field(default=1, ge=1)
    failure_rate_percent: float = Field(default=5.0, gt=0, le=100)
    failure_rate_window_minutes: int = Field(default=60, ge=5, le=1440)
    failure_rate_min_started: int = Field(default=20, ge=1)
    source_queue_max_age_seconds: int = Field(default=300, ge=60)
    # The reconciler consumes the failure-events queue: an event older than this means it is behind or failing.
    failure_events_max_age_seconds: int = Field(default=600, ge=60, le=86_400)


class HealingConfig(_Model):
    """Self-healing: the automatic redrive of transient failures and the reconciler's sweep (docs/design.md, "The
    healing policy", "The Redriver: automatic redrive", "The sweep").

    A transient failure goes back to the source queue after `coolOffMinutes * 2**attempt` (capped at
    `maxCoolOffMinutes`, with equal jitter: between half and all of it), at most `maxAttempts` times (0: never).
    The redriver looks every `redriveEveryMinutes`; the sweep every `sweepEveryMinutes` reconciles executions that
    ended in the last `sweepLookbackMinutes` unreconciled (a status-change event is best-effort). The redriver also
    sends what the pipe could not hand over back from the source DLQ, `sourceReturnPerSecond` messages a second at
    most, from the same `maxAttempts` (0: it leaves them for a person).
    """

    max_attempts: int = Field(default=3, ge=0, le=9)  # <= 9: the failure tail compares the count as one digit
    cool_off_minutes: int = Field(default=5, ge=1, le=720)
    max_cool_off_minutes: int = Field(default=60, ge=1, le=720)
    redrive_every_minutes: int = Field(default=5, ge=1, le=60)
    sweep_every_minutes: int = Field(default=15, ge=5, le=1440)
    sweep_lookback_minutes: int = Field(default=360, ge=10, le=20_160)
    # Below the smaller Regions' StartExecution refill of 150 a second (fire_and_forget/rehearsal/quotas.py), a third.
    source_return_per_second: float = Field(default=50, ge=0, le=300)

    @model_validator(mode="after")
    def _consistent(self) -> HealingConfig:
        if self.max_cool_off_minutes < self.cool_off_minutes:
            raise ValueError("maxCoolOffMinutes must be at least coolOffMinutes")
        if self.sweep_lookback_minutes < 2 * self.sweep_every_minutes:
            raise ValueError("sweepLookbackMinutes must be at least twice sweepEveryMinutes, so that every execution "
                             "is seen by two sweeps")
        return self

    def longest_wait_minutes(self) -> int:
        """The most a record can spend in the failure DLQ over all its automatic attempts."""
        return sum(min(self.max_cool_off_minutes, self.cool_off_minutes * 2 ** attempt) + self.redrive_every_minutes
                   for attempt in range(self.max_attempts))


_GUID = r"^[0-9A-Fa-f]{8}(?:-[0-9A-Fa-f]{4}){3}-[0-9A-Fa-f]{12}$"


class PipelineSettings(_Model):
    """What a deployment of a pipeline may choose; the defaults deploy as they are."""

    environment_name: str = Field(default="dev", pattern=r"^[a-z][a-z0-9-]{0,15}$")
    alarm_email: str | None = Field(default=None, pattern=r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
    # The alert path's own channel (AlertPathTopic): who hears that the alerts themselves fail. Default: alarmEmail.
    alert_path_email: str | None = Field(default=None, pattern=r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
    # Amazon Q Developer in chat applications (AWS Chatbot): the Slack team id (T...) and channel id (C...).
    slack_workspace_id: str | None = Field(default=None, pattern=r"^[0-9A-Z]{1,255}$")
    slack_channel_id: str | None = Field(default=None, pattern=r"^[A-Za-z0-9]{1,255}$")
    # The same service's Microsoft Teams channel: the team's and the tenant's ids (GUIDs) and the channel's id as its
    # link writes it, URL-encoded (19%3a...%40thread.tacv2): the patterns of AWS::Chatbot::MicrosoftTeamsChannel-
    # Configuration's registry schema.
    teams_team_id: str | None = Field(default=None, pattern=_GUID)
    teams_tenant_id: str | None = Field(default=None, pattern=_GUID)
    teams_channel_id: str | None = Field(default=None, max_length=256,
                                         pattern=r"^[a-zA-Z0-9-_=+/.,]*%3[aA][a-zA-Z0-9-_=+/.,]*%40[a-zA-Z0-9-_=+/.,]*$")
    webhook_url: str | None = Field(default=None, pattern=r"^https://\S+$")
    # The caller's completion webhook (docs/construct.md, "The completion webhook"): one POST per message whose outcome
    # became final, through an EventBridge API destination. The URL, the ARN of the Secrets Manager secret whose value
    # the connection sends in the header `completion_webhook_header` (the connection's API key authorization), and
    # the destination's rate (InvocationRateLimitPerSecond: 1 to 300).
    completion_webhook_url: str | None = Field(default=None, max_length=2048, pattern=r"^https://\S+$")
    completion_webhook_secret_arn: str | None = Field(
        default=None, max_length=2048, pattern=r"^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:[0-9]{12}:secret:\S+$")
    completion_webhook_header: str = Field(default="x-api-key", min_length=1, max_length=512,
                                           pattern=r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")
    completion_webhook_rate_per_second: int = Field(default=10, ge=1, le=300)
    # One Systems Manager OpsCenter OpsItem per message that failed for good, resolved when a later attempt succeeds
    # or an operator discards it (docs/construct.md, "Tickets in OpsCenter").
    ops_center_tickets: bool = False
    runbook_url: str = Field(default=DEFAULT_RUNBOOK_URL, pattern=r"^https://[^\s#]+$")
    log_retention_days: int = 30
    # Longer than every queue that feeds a DLQ keeps a message, and than the longest wait HealingConfig's bounds
    # allow for a record's automatic attempts (9 x (720 + 60) minutes, under 5 days): tests/infra/test_config.py.
    dlq_retention_days: int = Field(default=MAX_RETENTION_DAYS, ge=MIN_DLQ_RETENTION_DAYS, le=MAX_RETENTION_DAYS)
    max_receive_count: int = Field(default=5, ge=5, le=1000)
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    include_execution_data: bool = False
    removal_policy: Literal["retain", "destroy"] = "retain"
    task_timeout_seconds: int = Field(default=30, ge=10, le=900)
    execution_timeout_minutes: int = Field(default=60, ge=5, le=525_600)
    # REQUEST_RESPONSE only: the Express workflow's TimeoutSeconds, at most Express's 5 minutes (docs/construct.md,
    # "The two modes"); the source queue's visibility timeout is derived from it.
    express_timeout_seconds: int = Field(default=300, ge=30, le=300)
    # The source queue's visibility timeout; None derives it from the mode (docs/construct.md, "The two modes").
    source_visibility_timeout_seconds: int | None = Field(default=None, ge=30, le=43_200)
    idempotency_expiry_days: int = Field(default=15, ge=MAX_RETENTION_DAYS, le=365)
    retry: RetryConfig = RetryConfig()
    alarms: AlarmConfig = AlarmConfig()
    healing: HealingConfig = HealingConfig()

    @field_validator("retry", "alarms", "healing", mode="before")
    @classmethod
    def _json_object(cls, value: Any) -> Any:
        # `cdk deploy -c 'ff:retry={"maxAttempts":3}'` arrives as a JSON string.
        return json.loads(value) if isinstance(value, str) else value

    @field_validator("log_retention_days")
    @classmethod
    def _known_retention(cls, value: int) -> int:
        if value not in LOG_RETENTION_DAYS:
            raise ValueError(f"must be one of the CloudWatch Logs retention periods {LOG_RETENTION_DAYS}")
        return value

    @model_validator(mode="after")
    def _chat_ids_together(self) -> PipelineSettings:
        if (self.slack_workspace_id is None) != (self.slack_channel_id is None):
            raise ValueError("slackWorkspaceId and slackChannelId go together: set both or neither")
        teams = (self.teams_team_id, self.teams_tenant_id, self.teams_channel_id)
        if any(value is None for value in teams) and any(value is not None for value in teams):
            raise ValueError("teamsTeamId, teamsTenantId and teamsChannelId go together: set all three or none")
        if (self.completion_webhook_url is None) != (self.completion_webhook_secret_arn is None):
            raise ValueError("completionWebhookUrl and completionWebhookSecretArn go together: the webhook's requests "
                             "carry the secret's value in their completionWebhookHeader, so set both or neither")
        return self

    @property
    def idempotency_expiry_seconds(self) -> int:
        """How long idempotency records and delivery claims are kept: a duplicate cannot outlive the claim."""
        return self.idempotency_expiry_days * 24 * 3600

    @property
    def lambda_timeout_seconds(self) -> int:
        """Below the Task timeout, so Step Functions sees the function's own timeout error first."""
        return self.task_timeout_seconds - 5
