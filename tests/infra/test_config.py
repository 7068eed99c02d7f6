"""The typed config: defaults deploy as they are, bad values fail synth with a message that names the key."""

from __future__ import annotations

import pytest

from stacks.config import AppConfig, ConfigError
from tests.support.cdk import cdk_context


def test_cdk_json_context_is_a_valid_config() -> None:
    config = AppConfig.from_context(cdk_context())
    assert config == AppConfig()  # cdk.json spells out the defaults, nothing else


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("ff:logRetentionDays", 31, "ff:logRetentionDays: Value error, must be one of"),
        ("ff:maxReceiveCount", 2, "ff:maxReceiveCount: Input should be greater than or equal to 5"),
        ("ff:dlqRetentionDays", 15, "ff:dlqRetentionDays: Input should be less than or equal to 14"),
        ("ff:idempotencyExpiryDays", 7, "ff:idempotencyExpiryDays: Input should be greater than or equal to 14"),
        ("ff:alarmEmail", "not-an-email", "ff:alarmEmail: String should match pattern"),
        ("ff:removalPolicy", "keep", "ff:removalPolicy: Input should be 'retain' or 'destroy'"),
        ("ff:servedCountries", "JP,usa", "ff:servedCountries: Value error, needs ISO 3166-1 alpha-2"),
        ("ff:retry", '{"maxAttempts": 99}', "ff:retry.maxAttempts: Input should be less than or equal to 10"),
        ("ff:retyr", {}, "ff:retyr: Extra inputs are not permitted"),
    ],
)
def test_bad_values_fail_with_the_key_named(key: str, value: object, message: str) -> None:
    with pytest.raises(ConfigError, match="Invalid CDK context") as raised:
        AppConfig.from_context({key: value})
    assert message in str(raised.value)


def test_command_line_strings_are_accepted() -> None:
    config = AppConfig.from_context({"ff:maxReceiveCount": "7", "ff:includeExecutionData": "true",
                                     "ff:servedCountries": "JP, US", "ff:alarmEmail": "ops@example.com"})
    assert (config.max_receive_count, config.include_execution_data) == (7, True)
    assert config.served_countries == ("JP", "US")


def test_slack_needs_both_ids() -> None:
    with pytest.raises(ConfigError, match="slackWorkspaceId and slackChannelId go together"):
        AppConfig.from_context({"ff:slackWorkspaceId": "T0123"})
