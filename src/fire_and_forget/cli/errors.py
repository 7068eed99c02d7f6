"""What can go wrong for an operator, as exception types with the exit code a script can act on."""

from __future__ import annotations

from enum import IntEnum

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    NoCredentialsError,
    NoRegionError,
    PartialCredentialsError,
    ProfileNotFound,
)

from fire_and_forget.runtime.errors import ACCESS_CODES, THROTTLING_CODES, error_code


class ExitCode(IntEnum):
    """The process exit codes of ff-ops (documented in docs/operator-cli.md)."""

    OK = 0
    INTERNAL = 1  # a bug in ff-ops: please report it with the traceback
    USAGE = 2  # bad flags or arguments (Typer/Click's own code)
    STACK_NOT_FOUND = 3
    OUTPUTS_MISSING = 4
    ACCESS_DENIED = 5  # missing permission, or no / expired credentials
    THROTTLED = 6  # still throttled after botocore's retries
    AWS_ERROR = 7  # any other AWS error
    INCOMPLETE = 8  # the command ran, but some selected items were left where they were (see its summary)
    NOT_FOUND = 9  # nothing matched what was asked for (failures show)
    CHECK_FAILED = 10  # smoke: a check of the deployment failed (see its table)
    DECLINED = 11  # the operator answered no at the confirmation: nothing was changed


class OpsError(Exception):
    """An error ff-ops reports as one clear line (plus a hint) and an exit code, never as a traceback."""

    exit_code = ExitCode.AWS_ERROR

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class StackNotFound(OpsError):
    exit_code = ExitCode.STACK_NOT_FOUND


class OutputsMissing(OpsError):
    exit_code = ExitCode.OUTPUTS_MISSING


class AccessDenied(OpsError):
    exit_code = ExitCode.ACCESS_DENIED


class Throttled(OpsError):
    exit_code = ExitCode.THROTTLED


class AwsError(OpsError):
    exit_code = ExitCode.AWS_ERROR


class NotFound(OpsError):
    exit_code = ExitCode.NOT_FOUND


class UsageError(OpsError):
    exit_code = ExitCode.USAGE


def translate(error: BaseException, action: str) -> OpsError | None:
    """The OpsError for an AWS SDK exception raised while doing `action`; None when it is not an AWS error."""
    if isinstance(error, OpsError):
        return error
    if isinstance(error, NoCredentialsError | PartialCredentialsError):
        return AccessDenied(f"{action}: no AWS credentials found",
                            "set AWS_PROFILE or --profile, or run `aws sso login` / `aws configure`")
    if isinstance(error, NoRegionError):
        return UsageError(f"{action}: no AWS region", "pass --region or set AWS_REGION")
    if isinstance(error, ProfileNotFound):
        return UsageError(f"{action}: {error}", "check --profile / AWS_PROFILE against ~/.aws/config")
    if isinstance(error, BotoCoreError):
        return AwsError(f"{action}: {error}", "check the network and the region's endpoint; safe to run again")
    if not isinstance(error, ClientError):
        return None
    code = error_code(error)
    message = error.response.get("Error", {}).get("Message", "") or code
    operation = error.operation_name
    if code in THROTTLING_CODES:
        return Throttled(f"{action}: {operation} is throttled ({code}) even after retries",
                         "wait a minute and run the command again; it is safe to repeat")
    if code in ACCESS_CODES:
        return AccessDenied(f"{action}: {operation} was denied ({code}): {message}",
                            "see docs/operator-cli.md, 'IAM permissions', for what this command needs")
    return AwsError(f"{action}: {operation} failed ({code}): {message}")
