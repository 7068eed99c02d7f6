"""ff-ops, the operator CLI (`ff-ops --help`, docs/operator-cli.md), and the plumbing a team's own operator
commands build on: the clients, the stack's outputs, the shared options, the exit codes and the trend page.

The names below are the public API; the submodules are not. Needs the `cli` extra.
"""

from fire_and_forget.cli.aws import RETRIES, Clients
from fire_and_forget.cli.cli_common import AsJson, Profile, Region, run
from fire_and_forget.cli.errors import ExitCode, UsageError
from fire_and_forget.cli.stack import DeployedStack
from fire_and_forget.cli.trend_page import page as trend_page

__all__ = ["RETRIES", "AsJson", "Clients", "DeployedStack", "ExitCode", "Profile", "Region", "UsageError", "run",
           "trend_page"]
