"""The typed config: defaults deploy as they are, bad values fail synth with a message that names the key."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import BaseModel

from fire_and_forget.construct.settings import MIN_DLQ_RETENTION_DAYS, HealingConfig
from stacks.config import AppConfig, ConfigError
from tests.support.cdk import REPO, cdk_context, synthesize


def test_cdk_json_context_is_a_valid_config() -> None:
    config = AppConfig.from_context(cdk_context())
    assert config == AppConfig()  # cdk.json spells out the defaults, nothing else


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("ff:logRetentionDays", 31, "ff:logRetentionDays: must be one of"),
        ("ff:maxReceiveCount", 2, "ff:maxReceiveCount: Input should be greater than or equal to 5"),
        ("ff:dlqRetentionDays", 15, "ff:dlqRetentionDays: Input should be less than or equal to 14"),
        ("ff:dlqRetentionDays", 4, "ff:dlqRetentionDays: Input should be greater than or equal to 5"),
        ("ff:idempotencyExpiryDays", 7, "ff:idempotencyExpiryDays: Input should be greater than or equal to 14"),
        (
            "ff:alarmEmail",
            "not-an-email",
            "ff:alarmEmail: must be an e-mail address such as ops@example.com (got 'not-an-email')",
        ),
        ("ff:removalPolicy", "keep", "ff:removalPolicy: Input should be 'retain' or 'destroy'"),
        (
            "ff:servedCountries",
            "JP,usa",
            "ff:servedCountries: needs ISO 3166-1 alpha-2 codes such as JP or US (got 'JP,usa')",
        ),
        ("ff:retry", '{"maxAttempts": 99}', "ff:retry.maxAttempts: Input should be less than or equal to 10"),
        ("ff:healing", '{"maxAttempts": 10}', "ff:healing.maxAttempts: Input should be less than or equal to 9"),
        ("ff:healing", {"coolOffMinutes": 30, "maxCoolOffMinutes": 10}, "maxCoolOffMinutes must be at least"),
        ("ff:healing", {"sweepEveryMinutes": 60, "sweepLookbackMinutes": 90}, "at least twice sweepEveryMinutes"),
        ("ff:retyr", {}, "ff:retyr: unknown key; the keys are ff:environmentName, ff:alarmEmail"),
        ("ff:environmentName", "Prod_1", "ff:environmentName: must be lowercase letters, digits and '-'"),
        ("ff:stackName", "9lives", "ff:stackName: must be a CloudFormation stack name"),
    ],
)
def test_bad_values_fail_with_the_key_named(key: str, value: object, message: str) -> None:
    with pytest.raises(ConfigError, match="Invalid CDK context") as raised:
        AppConfig.from_context({key: value})
    assert message in str(raised.value)


def _upper_bound(model: type[BaseModel], field: str) -> int:
    (bound,) = [m.le for m in model.model_fields[field].metadata if hasattr(m, "le")]
    return int(bound)


def test_the_longest_automatic_redrive_fits_in_the_shortest_dlq_retention() -> None:
    # Given every healing setting at the bound that makes a record wait longest for its automatic attempts
    widest = {name: _upper_bound(HealingConfig, name)
              for name in ("max_attempts", "cool_off_minutes", "max_cool_off_minutes", "redrive_every_minutes")}
    healing = HealingConfig(**widest)
    # Then the record is still in the failure DLQ at the shortest retention the settings accept
    assert healing.longest_wait_minutes() < MIN_DLQ_RETENTION_DAYS * 24 * 60
    settings = AppConfig.from_context({"ff:dlqRetentionDays": MIN_DLQ_RETENTION_DAYS,
                                       "ff:healing": healing.model_dump(by_alias=True)})
    assert settings.dlq_retention_days == MIN_DLQ_RETENTION_DAYS


def test_command_line_strings_are_accepted() -> None:
    config = AppConfig.from_context(
        {
            "ff:maxReceiveCount": "7",
            "ff:includeExecutionData": "true",
            "ff:servedCountries": "JP, US",
            "ff:alarmEmail": "ops@example.com",
        }
    )
    assert (config.max_receive_count, config.include_execution_data) == (7, True)
    assert config.served_countries == ("JP", "US")


def test_slack_needs_both_ids() -> None:
    with pytest.raises(ConfigError, match="slackWorkspaceId and slackChannelId go together"):
        AppConfig.from_context({"ff:slackWorkspaceId": "T0123"})


TEAM, TENANT, CHANNEL = "0123abcd-0123-4567-89ab-0123456789ab", "89abcdef-0123-4567-89ab-0123456789ab", \
    "19%3a0123abcd4567%40thread.tacv2"


@pytest.mark.parametrize("given", [{"ff:teamsTeamId": TEAM}, {"ff:teamsTeamId": TEAM, "ff:teamsTenantId": TENANT},
                                   {"ff:teamsChannelId": CHANNEL}])
def test_teams_needs_all_three_ids(given: dict[str, str]) -> None:
    with pytest.raises(ConfigError, match="teamsTeamId, teamsTenantId and teamsChannelId go together"):
        AppConfig.from_context(given)


def test_a_teams_channel_id_written_as_teams_shows_it_is_refused_with_the_form_chatbot_takes() -> None:
    # Given the channel id as Teams displays it, not as its link encodes it
    with pytest.raises(ConfigError) as raised:
        AppConfig.from_context({"ff:teamsTeamId": TEAM, "ff:teamsTenantId": TENANT,
                                "ff:teamsChannelId": "19:0123abcd4567@thread.tacv2"})
    # Then the problem says how to write it
    (problem,) = raised.value.problems
    assert problem.startswith("ff:teamsChannelId: must be the Teams channel id URL-encoded")
    assert "write ':' as %3a and '@' as %40" in problem


def test_each_problem_is_one_plain_line_with_the_value_given() -> None:
    with pytest.raises(ConfigError) as raised:
        AppConfig.from_context({"ff:removalPolicy": "keep", "ff:maxReceiveCount": 2})
    assert raised.value.problems == [
        "ff:maxReceiveCount: Input should be greater than or equal to 5 (got 2)",
        "ff:removalPolicy: Input should be 'retain' or 'destroy' (got 'keep')",
    ]
    assert "String should match pattern" not in str(raised.value) and "^" not in str(raised.value)


@pytest.mark.parametrize("key", ["alarmEmail", "ff-alarmEmail", "FF.alarmemail", "maxAttempts"])
def test_a_config_key_without_its_prefix_is_refused_not_ignored(key: str) -> None:
    with pytest.raises(ConfigError) as raised:
        AppConfig.from_context({key: "ops@example.com"})
    (problem,) = raised.value.problems
    assert problem.startswith(f"{key}: not read, config keys take the prefix 'ff:'")


def test_the_carriers_answerer_needs_the_carrier_step() -> None:
    with pytest.raises(ConfigError, match="carrierAnswererArn is set but carrierConfirmation is false"):
        AppConfig.from_context({"ff:carrierAnswererArn": "arn:aws:iam::210987654321:role/carrier"})


@pytest.mark.parametrize("arn", ["arn:aws:iam::21098765432:role/carrier", "arn:aws:sts::210987654321:role/c",
                                 "*", "arn:aws:iam::210987654321:group/carriers"])
def test_the_carriers_answerer_is_an_iam_role_user_or_account(arn: str) -> None:
    with pytest.raises(ConfigError) as raised:
        AppConfig.from_context({"ff:carrierConfirmation": True, "ff:carrierAnswererArn": arn})
    (problem,) = raised.value.problems
    assert problem.startswith("ff:carrierAnswererArn: must be the ARN of an IAM role, user or account root")


def test_the_carrier_step_needs_an_execution_that_outlasts_its_wait(tmp_path: Path) -> None:
    from app import build_app

    # Given the carrier's 48-hour wait and the default one-hour execution timeout
    with pytest.raises(ConfigError) as raised:
        build_app(cdk_context() | {"ff:carrierConfirmation": True}, outdir=str(tmp_path))
    # Then synth stops before building anything, naming the key and the least value that works
    assert raised.value.problems == [
        "ff:executionTimeoutMinutes: must be longer than the 2880 minutes ff:carrierConfirmation waits for the "
        "carrier (BookCarrier's TimeoutSeconds), 2940 or more (got 60)"]


@pytest.mark.parametrize(("minutes", "refused"), [(2880, True), (2939, True), (2940, False)])
def test_the_carrier_step_leaves_the_rest_of_the_saga_its_hour(minutes: int, refused: bool) -> None:
    from stacks.orders.stack import carrier_timeout_seconds, check_carrier_wait

    config = AppConfig.from_context({"ff:carrierConfirmation": True, "ff:executionTimeoutMinutes": minutes})
    if refused:
        with pytest.raises(ConfigError, match=f"2940 or more \\(got {minutes}\\)"):
            check_carrier_wait(config, carrier_timeout_seconds())
    else:
        check_carrier_wait(config, carrier_timeout_seconds())


def test_cdk_own_context_keys_are_left_alone() -> None:
    context = {"cli-telemetry": False, "aws:cdk:enable-path-metadata": True, "@aws-cdk/core:checkSecretUsage": True}
    assert AppConfig.from_context(context) == AppConfig()


def test_a_bad_config_prints_plain_lines_and_no_traceback(tmp_path: Path) -> None:
    env = os.environ | {
        "CDK_CONTEXT_JSON": json.dumps(cdk_context() | {"ff:removalPolicy": "keep"}),
        "CDK_OUTDIR": str(tmp_path),
    }
    done = subprocess.run([sys.executable, "app.py"], cwd=REPO, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert "  ff:removalPolicy: Input should be 'retain' or 'destroy' (got 'keep')" in done.stderr.splitlines()


def test_the_stack_name_is_configurable(tmp_path: Path) -> None:
    assembly = synthesize(tmp_path, cdk_context() | {"ff:stackName": "FireAndForget-prod"})
    template = json.loads((assembly / "FireAndForget-prod.template.json").read_text(encoding="utf-8"))
    names = [
        json.dumps(group["Properties"].get("LogGroupName"))
        for group in template["Resources"].values()
        if group["Type"] == "AWS::Logs::LogGroup" and group["Properties"].get("LogGroupName")
    ]
    assert names and all("FireAndForget-prod-" in name for name in names)
