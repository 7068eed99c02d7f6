"""Typed, validated build-time configuration read once from the CDK context."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator
from pydantic.alias_generators import to_camel

from fire_and_forget.construct import (  # re-exported: the app's config keys are the pipeline's and its own
    DEFAULT_RUNBOOK_URL,
    LOG_RETENTION_DAYS,
    MAX_RETENTION_DAYS,
    AlarmConfig,
    PipelineSettings,
    RetryConfig,
)
from stacks.names import DEFAULT_STACK_NAME, catalog_stack_name

__all__ = ["DEFAULT_RUNBOOK_URL", "DEFAULT_STACK_NAME", "LOG_RETENTION_DAYS", "MAX_RETENTION_DAYS", "AlarmConfig",
           "AppConfig", "ConfigError", "PipelineSettings", "RetryConfig"]

CONTEXT_PREFIX = "ff:"

# What a pattern-checked value must look like, in words (pydantic's own message quotes the regular expression).
PATTERN_HELP = {
    "stackName": "a CloudFormation stack name: a letter, then letters, digits or '-', at most 128 characters",
    "environmentName": "lowercase letters, digits and '-', starting with a letter, at most 16 characters",
    "alarmEmail": "an e-mail address such as ops@example.com",
    "alertPathEmail": "an e-mail address such as ops@example.com",
    "slackWorkspaceId": "the Slack workspace (team) id, upper-case letters and digits such as T0123ABCD",
    "slackChannelId": "the Slack channel id, letters and digits such as C0123ABCD",
    "teamsTeamId": "the Microsoft Teams team id, a GUID such as 0123abcd-0123-4567-89ab-0123456789ab",
    "teamsTenantId": "the Microsoft Teams tenant id, a GUID such as 0123abcd-0123-4567-89ab-0123456789ab",
    "teamsChannelId": "the Teams channel id URL-encoded as in the channel's link, such as "
                      "19%3a0123abcd%40thread.tacv2 (write ':' as %3a and '@' as %40)",
    "webhookUrl": "an https:// URL",
    "completionWebhookUrl": "an https:// URL",
    "completionWebhookSecretArn": "the ARN of a Secrets Manager secret "
                                  "(arn:aws:secretsmanager:us-east-1:123456789012:secret:name-AbCdEf)",
    "completionWebhookHeader": "an HTTP header name such as x-api-key or Authorization",
    "runbookUrl": "an https:// URL without a #fragment (each alarm adds its own section)",
    "carrierAnswererArn": "the ARN of an IAM role, user or account root (arn:aws:iam::123456789012:role/carrier)",
}


class ConfigError(ValueError):
    """The CDK context holds a value the app cannot deploy: one plain line per problem, naming the key and the fix."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("Invalid CDK context (cdk.json, or -c ff:<key>=<value>):\n" + "\n".join(
            f"  {problem}" for problem in problems))


class AppConfig(PipelineSettings):
    """Everything a deployment of this app may choose: the pipelines' settings, and the order example's own."""

    # Two deployments (dev and prod) can share an account and region under different stack names.
    stack_name: str = Field(default=DEFAULT_STACK_NAME, pattern=r"^[A-Za-z][A-Za-z0-9-]{0,127}$")
    default_credit_limit: Decimal = Field(default=Decimal("5000"), gt=0)
    served_countries: tuple[str, ...] = ("JP", "US", "CA", "GB", "DE", "FR", "AU", "NZ", "SG")
    # The carrier confirms each booking itself, hours later (the saga's BookCarrier step, a .waitForTaskToken task;
    # docs/construct.md, "A step done by someone else"). Off: the saga goes without the step.
    carrier_confirmation: bool = False
    # Who may answer for the carrier through the entry point's function URL (signed requests), besides the
    # account's own principals given lambda:InvokeFunctionUrl by an identity policy.
    carrier_answerer_arn: str | None = Field(
        default=None, max_length=2048,
        pattern=r"^arn:aws[a-z-]*:iam::[0-9]{12}:(root|role/[A-Za-z0-9+=,.@_/-]+|user/[A-Za-z0-9+=,.@_/-]+)$")

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
    def _answerer_needs_the_step(self) -> AppConfig:
        if self.carrier_answerer_arn is not None and not self.carrier_confirmation:
            raise ValueError("carrierAnswererArn is set but carrierConfirmation is false: set ff:carrierConfirmation "
                             "to true, or drop the answerer")
        return self

    @property
    def catalog_stack_name(self) -> str:
        """The second example's stack (the catalog search index), named after the first."""
        return catalog_stack_name(self.stack_name)

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
