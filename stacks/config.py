"""Typed, validated build-time configuration read once from the CDK context."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic.alias_generators import to_camel

CONTEXT_PREFIX = "ff:"

# The values CloudWatch Logs accepts for a retention period.
LOG_RETENTION_DAYS = (
    1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653,
)

# SQS keeps a message at most 14 days; Step Functions redrives executions up to 14 days old.
MAX_RETENTION_DAYS = 14


DEFAULT_STACK_NAME = "FireAndForget"
# Where alarm descriptions link the runbook: a placeholder for the fork that deploys this; set ff:runbookUrl to the
# runbook's address in your own repository or wiki (an e-mail or a Slack message cannot open a relative path).
DEFAULT_RUNBOOK_URL = "https://github.com/YOUR-ORG/fire-and-forget/blob/main/docs/runbook.md"

# What a pattern-checked value must look like, in words (pydantic's own message quotes the regular expression).
PATTERN_HELP = {
    "stackName": "a CloudFormation stack name: a letter, then letters, digits or '-', at most 128 characters",
    "environmentName": "lowercase letters, digits and '-', starting with a letter, at most 16 characters",
    "alarmEmail": "an e-mail address such as ops@example.com",
    "alertPathEmail": "an e-mail address such as ops@example.com",
    "slackWorkspaceId": "the Slack workspace (team) id, upper-case letters and digits such as T0123ABCD",
    "slackChannelId": "the Slack channel id, letters and digits such as C0123ABCD",
    "webhookUrl": "an https:// URL",
    "runbookUrl": "an https:// URL without a #fragment (each alarm adds its own section)",
}


class ConfigError(ValueError):
    """The CDK context holds a value the app cannot deploy: one plain line per problem, naming the key and the fix."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("Invalid CDK context (cdk.json, or -c ff:<key>=<value>):\n" + "\n".join(
            f"  {problem}" for problem in problems))


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, alias_generator=to_camel, populate_by_name=True)


class RetryConfig(_Model):
    """Backoff for transient errors of the saga's Lambda tasks (FULL jitter is always on)."""

    interval_seconds: int = Field(default=2, ge=1, le=60)
    max_attempts: int = Field(default=4, ge=0, le=10)
    backoff_rate: float = Field(default=2.0, ge=1.0, le=5.0)
    max_delay_seconds: int = Field(default=30, ge=1, le=900)
    compensation_max_attempts: int = Field(default=6, ge=1, le=10)


class AlarmConfig(_Model):
    """Thresholds and periods of the detection alarms."""

    period_minutes: int = Field(default=5, ge=1, le=60)
    executions_failed_threshold: int = Field(default=1, ge=1)
    failure_rate_percent: float = Field(default=5.0, gt=0, le=100)
    failure_rate_window_minutes: int = Field(default=60, ge=5, le=1440)
    failure_rate_min_started: int = Field(default=20, ge=1)
    source_queue_max_age_seconds: int = Field(default=300, ge=60)
    failure_events_queue_depth: int = Field(default=1, ge=1)


class AppConfig(_Model):
    """Everything a deployment may choose; the defaults deploy as they are."""

    # Two deployments (dev and prod) can share an account and region under different stack names.
    stack_name: str = Field(default=DEFAULT_STACK_NAME, pattern=r"^[A-Za-z][A-Za-z0-9-]{0,127}$")
    environment_name: str = Field(default="dev", pattern=r"^[a-z][a-z0-9-]{0,15}$")
    alarm_email: str | None = Field(default=None, pattern=r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
    # The alert path's own channel (AlertPathTopic): who hears that the alerts themselves fail. Default: alarmEmail.
    alert_path_email: str | None = Field(default=None, pattern=r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
    # Amazon Q Developer in chat applications (AWS Chatbot): the Slack team id (T...) and channel id (C...).
    slack_workspace_id: str | None = Field(default=None, pattern=r"^[0-9A-Z]{1,255}$")
    slack_channel_id: str | None = Field(default=None, pattern=r"^[A-Za-z0-9]{1,255}$")
    webhook_url: str | None = Field(default=None, pattern=r"^https://\S+$")
    runbook_url: str = Field(default=DEFAULT_RUNBOOK_URL, pattern=r"^https://[^\s#]+$")
    log_retention_days: int = 30
    dlq_retention_days: int = Field(default=MAX_RETENTION_DAYS, ge=1, le=MAX_RETENTION_DAYS)
    max_receive_count: int = Field(default=5, ge=5, le=1000)
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    include_execution_data: bool = False
    removal_policy: Literal["retain", "destroy"] = "retain"
    task_timeout_seconds: int = Field(default=30, ge=10, le=900)
    execution_timeout_minutes: int = Field(default=60, ge=5, le=525_600)
    idempotency_expiry_days: int = Field(default=15, ge=MAX_RETENTION_DAYS, le=365)
    default_credit_limit: Decimal = Field(default=Decimal("5000"), gt=0)
    served_countries: tuple[str, ...] = ("JP", "US", "CA", "GB", "DE", "FR", "AU", "NZ", "SG")
    retry: RetryConfig = RetryConfig()
    alarms: AlarmConfig = AlarmConfig()

    @field_validator("retry", "alarms", mode="before")
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

    @field_validator("served_countries", mode="before")
    @classmethod
    def _split_countries(cls, value: Any) -> Any:
        # `cdk deploy -c ff:servedCountries=JP,US` arrives as one string.
        return tuple(part.strip() for part in value.split(",") if part.strip()) if isinstance(value, str) else value

    @field_validator("served_countries")
    @classmethod
    def _iso_countries(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        bad = [code for code in value if len(code) != 2 or not code.isalpha() or not code.isupper()]
        if bad or not value:
            raise ValueError("needs ISO 3166-1 alpha-2 codes such as JP or US")
        return value

    @model_validator(mode="after")
    def _slack_pair(self) -> AppConfig:
        if (self.slack_workspace_id is None) != (self.slack_channel_id is None):
            raise ValueError("slackWorkspaceId and slackChannelId go together: set both or neither")
        return self

    @property
    def lambda_timeout_seconds(self) -> int:
        """Below the Task timeout, so Step Functions sees the function's own timeout error first."""
        return self.task_timeout_seconds - 5

    @classmethod
    def from_context(cls, context: dict[str, Any]) -> AppConfig:
        """Build the config from every `ff:` context key; unknown keys, bad values and keys that lack the `ff:`
        prefix (`-c alarmEmail=...` would otherwise be ignored in silence) fail synth."""
        values = {key.removeprefix(CONTEXT_PREFIX): value for key, value in context.items()
                  if key.startswith(CONTEXT_PREFIX)}
        problems = _unprefixed_keys(context)
        try:
            config = cls.model_validate(values)
        except ValidationError as error:
            problems += [_describe(issue) for issue in error.errors()]
        if problems:
            raise ConfigError(problems)
        return config


def _field_names() -> dict[str, str]:
    """Every config key a user can write (camelCase, nested ones dotted), lower-cased -> as spelled."""
    names = {}
    for name, info in AppConfig.model_fields.items():
        names[to_camel(name).lower()] = to_camel(name)
        nested = info.annotation
        if isinstance(nested, type) and issubclass(nested, BaseModel):
            for inner in nested.model_fields:
                names[to_camel(inner).lower()] = f"{to_camel(name)}.{to_camel(inner)}"
    return names


def _unprefixed_keys(context: dict[str, Any]) -> list[str]:
    known = _field_names()
    problems = []
    for key in context:
        if key.startswith((CONTEXT_PREFIX, "@")):
            continue
        bare = key.lower()
        for separator in ("ff-", "ff.", "ff_", "ff"):
            bare = bare.removeprefix(separator) if bare.startswith(separator) and bare != separator else bare
        if bare in known:
            problems.append(f"{key}: not read, config keys take the prefix {CONTEXT_PREFIX!r}: "
                            f"write {CONTEXT_PREFIX}{known[bare].split('.')[0]}")
    return problems


def _describe(issue: Any) -> str:
    """One plain line: the key, what is wrong in words, and the value that was given."""
    location = [str(part) for part in issue["loc"]]
    key = CONTEXT_PREFIX + ".".join(location)
    field_name = str(issue["loc"][0]) if issue["loc"] else ""
    if issue["type"] == "string_pattern_mismatch" and field_name in PATTERN_HELP:
        message = f"must be {PATTERN_HELP[field_name]}"
    elif issue["type"] == "extra_forbidden":
        suggestions = ", ".join(f"{CONTEXT_PREFIX}{to_camel(name)}" for name in AppConfig.model_fields)
        message = f"unknown key; the keys are {suggestions}"
    else:
        message = str(issue["msg"]).removeprefix("Value error, ")
    given = issue.get("input")
    shown = "" if issue["type"] in {"extra_forbidden", "missing"} or isinstance(given, dict) else f" (got {given!r})"
    return f"{key}: {message}{shown}"
