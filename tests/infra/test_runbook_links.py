"""Alarm descriptions link the runbook by an absolute URL built from ff:runbookUrl, to a section that exists."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from stacks.config import DEFAULT_RUNBOOK_URL, AppConfig, ConfigError
from tests.support.cdk import REPO, cdk_context, load_template, synthesize
from tests.support.template import of_type

CUSTOM = "https://wiki.example.com/ops/fire-and-forget-runbook"
RUNBOOK = REPO / "docs" / "runbook.md"
ALARM_TYPES = ("AWS::CloudWatch::Alarm", "AWS::CloudWatch::CompositeAlarm")


def _descriptions(template: dict[str, Any]) -> dict[str, str]:
    return {
        lid: r["Properties"]["AlarmDescription"] for kind in ALARM_TYPES for lid, r in of_type(template, kind).items()
    }


def test_every_alarm_links_the_default_runbook_url_absolutely(template: dict[str, Any]) -> None:
    descriptions = _descriptions(template)
    assert descriptions
    for lid, text in descriptions.items():
        (link,) = re.findall(r"Runbook: (\S+)", text)
        assert link.startswith(f"{DEFAULT_RUNBOOK_URL}#"), (lid, link)


def test_ff_runbook_url_is_the_base_of_every_alarm_link(tmp_path_factory: pytest.TempPathFactory) -> None:
    context = cdk_context() | {"ff:runbookUrl": CUSTOM}
    configured = load_template(synthesize(Path(tmp_path_factory.mktemp("runbook")), context=context))

    links = [re.findall(r"Runbook: (\S+)", text) for text in _descriptions(configured).values()]

    assert links and all(len(found) == 1 and found[0].startswith(f"{CUSTOM}#") for found in links)


@pytest.mark.parametrize("bad", ["docs/runbook.md", "http://wiki.example.com/runbook", "https://x.example/r#part"])
def test_a_relative_plain_http_or_fragment_url_is_refused(bad: str) -> None:
    with pytest.raises(ConfigError, match="runbookUrl"):
        AppConfig.from_context({"ff:runbookUrl": bad})


def _anchors() -> set[str]:
    """GitHub's anchors of the runbook's headings: lower case, punctuation but hyphens dropped, spaces as hyphens."""
    headings = re.findall(r"^#+ (.+)$", RUNBOOK.read_text(encoding="utf-8"), flags=re.MULTILINE)
    return {re.sub(r"[^a-z0-9 _-]", "", heading.lower()).replace(" ", "-") for heading in headings}


@pytest.mark.parametrize("which", ["default", "every option"])
def test_every_alarm_links_a_section_the_runbook_has(which: str, template: dict[str, Any],
                                                     full_assembly: Path) -> None:
    chosen = template if which == "default" else load_template(full_assembly)
    anchors = _anchors()
    for lid, text in _descriptions(chosen).items():
        (link,) = re.findall(r"Runbook: (\S+)", text)
        assert link.rpartition("#")[2] in anchors, (lid, link)
