"""cfn-lint on synthesized templates, with the repository's settings (.cfnlintrc.yaml), as its command line runs it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support.cdk import REPO

CONFIG_FILE = REPO / ".cfnlintrc.yaml"
# What `cfn-lint`'s exit code counts at each --non-zero-exit-code level (cfnlint.runner.cli.Runner._exit).
_COUNTED = {"informational": {"informational", "warning", "error"}, "warning": {"warning", "error"},
            "error": {"error"}, "none": set()}


def cfn_lint(templates: list[Path]) -> str:
    """cfn-lint's findings on the templates, "" when its command line would exit 0.

    In this process, through what its command line runs (cfnlint.runner.cli: the arguments and the config file read by
    ConfigMixIn, the Runner, the formatter): most of a `cfn-lint` process is importing cfnlint and loading its
    schemas, which this process does once for all its calls. tests/infra/test_compliance.py proves the two agree on
    a template with a finding and on one without."""
    from cfnlint.config import ConfigMixIn
    from cfnlint.runner import Runner
    from cfnlint.runner.cli import get_formatter

    config = ConfigMixIn(["--config-file", str(CONFIG_FILE), *map(str, templates)])
    runner = Runner(config)
    matches = sorted(runner.run(), key=lambda match: (match.filename, match.linenumber, match.rule.id))
    counted = _COUNTED[config.non_zero_exit_code or "informational"]
    if not any(match.rule.severity in counted for match in matches):
        return ""
    return str(get_formatter(config).print_matches(matches, runner.rules, config=config))


def registry_schema(type_name: str) -> dict[str, Any]:
    """A resource type's registry schema in us-east-1, as cfn-lint ships it: imported when asked for, as importing
    cfnlint.schema loads every schema (seconds of a test worker that may never need one)."""
    from cfnlint.schema import PROVIDER_SCHEMA_MANAGER

    schema: dict[str, Any] = PROVIDER_SCHEMA_MANAGER.get_resource_schema("us-east-1", type_name).schema
    return schema
