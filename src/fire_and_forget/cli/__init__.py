"""ff-ops, the operator CLI (`ff-ops --help`, docs/operator-cli.md), and the plumbing a team's own operator
commands build on: the clients, the stack's outputs, the shared options, the exit codes and the trend page.

The names below are the public API; the submodules are not. Needs the `cli` extra.
"""

from typing import TYPE_CHECKING, Any

from fire_and_forget.cli.aws import Clients
from fire_and_forget.cli.cli_common import AsJson, OutputOption, Profile, Query, Region, checked_presentation, run
from fire_and_forget.cli.errors import ExitCode, UsageError
from fire_and_forget.cli.output import OutputFormat, Presentation
from fire_and_forget.cli.stack import DeployedStack
from fire_and_forget.cli.trend_page import Run as TrendRun
from fire_and_forget.cli.trend_page import Table as TrendTable
from fire_and_forget.cli.trend_page import page as trend_page
from fire_and_forget.cli.trend_page import runs_window as trend_window

if TYPE_CHECKING:
    from fire_and_forget.cli.aws import RETRIES

__all__ = ["RETRIES", "AsJson", "Clients", "DeployedStack", "ExitCode", "OutputFormat", "OutputOption", "Presentation",
           "Profile", "Query", "Region", "TrendRun", "TrendTable", "UsageError", "checked_presentation", "run",
           "trend_page", "trend_window"]


def __getattr__(name: str) -> Any:
    if name == "RETRIES":  # botocore's Config, made on first use (fire_and_forget/cli/aws.py)
        from fire_and_forget.cli import aws

        return aws.RETRIES
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
