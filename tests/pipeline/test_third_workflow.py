"""The third-workflow example of docs/construct.md: the file the doc shows verbatim synthesizes and passes cdk-nag."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest

from fire_and_forget.construct import OUTPUT_KEYS, PipelineSettings
from fire_and_forget.construct.compliance import add_compliance_checks
from fire_and_forget.construct.workflow import ANNOUNCE_OR_WAIT, failure_tail
from tests.pipeline import third_workflow
from tests.pipeline.third_workflow import ConfirmationStack
from tests.support.cdk import REPO
from tests.support.template import one

DOC = REPO / "docs" / "construct.md"
MARKER = "<!-- verbatim: tests/pipeline/third_workflow.py -->"


def shown_in_the_doc() -> str:
    """The ```python block right after the marker line in docs/construct.md."""
    found = re.search(re.escape(MARKER) + r"\n```python\n(.*?)```\n", DOC.read_text(encoding="utf-8"), re.DOTALL)
    assert found, f"docs/construct.md has no ```python block right after {MARKER}"
    return found.group(1)


def test_the_doc_shows_the_example_exactly_as_it_is_synthesized() -> None:
    assert shown_in_the_doc() == Path(third_workflow.__file__).read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def confirmation_template(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Synthesized with the compliance packs on: any unacknowledged cdk-nag finding would raise here."""
    app = cdk.App(outdir=str(tmp_path_factory.mktemp("cdk.out")))
    ConfirmationStack(app, "Confirmations", settings=PipelineSettings())
    add_compliance_checks(app)
    template: dict[str, Any] = app.synth().get_stack_by_name("Confirmations").template
    return template


def test_the_example_synthesizes_with_cdk_nag_and_the_pipeline_outputs(confirmation_template: dict[str, Any]) -> None:
    assert sorted(confirmation_template["Outputs"]) == sorted(OUTPUT_KEYS)
    assert confirmation_template["Outputs"]["PipelineName"]["Value"] == "confirmations"


def test_the_example_runs_its_one_step_then_the_tail(confirmation_template: dict[str, Any]) -> None:
    machine = one(confirmation_template, "AWS::StepFunctions::StateMachine", "PipelineWorkflow")[1]["Properties"]
    states = json.loads(machine["DefinitionString"])["States"]
    # Automatic redrives are on by default (maxAttempts 3): the tail records a retryable failure unannounced.
    assert set(states) == {"SendConfirmation", "SendConfirmationFailed", ANNOUNCE_OR_WAIT} | set(failure_tail())
    assert states["SendConfirmation"]["End"] is True
