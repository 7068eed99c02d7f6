"""The third-workflow example of docs/construct.md: the file the doc shows verbatim synthesizes and passes cdk-nag, the
documents state what it takes, and it runs: deployed into the rehearsal, a request is e-mailed once and a bad one
ends in the failure DLQ with its alert."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import boto3
import pytest
from moto.ses.models import ses_backends

from fire_and_forget.construct import OUTPUT_KEYS, PipelineSettings
from fire_and_forget.construct.compliance import add_compliance_checks
from fire_and_forget.construct.workflow import ANNOUNCE_OR_WAIT, failure_tail
from fire_and_forget.rehearsal.deployment import ACCOUNT
from fire_and_forget.rehearsal.rehearsal import Rehearsal
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
def confirmation_assembly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Synthesized with the compliance packs on: any unacknowledged cdk-nag finding would raise here."""
    app = cdk.App(outdir=str(tmp_path_factory.mktemp("cdk.out")))
    ConfirmationStack(app, "Confirmations", settings=PipelineSettings())
    add_compliance_checks(app)
    return Path(app.synth().directory)


@pytest.fixture(scope="module")
def confirmation_template(confirmation_assembly: Path) -> dict[str, Any]:
    template: dict[str, Any] = json.loads((confirmation_assembly / "Confirmations.template.json").read_text())
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


EXAMPLE = {"stack": third_workflow.HERE / "third_workflow.py",
           "ASL file": third_workflow.HERE / "asl" / "send_confirmation.asl.json",
           "handler": third_workflow.HERE / "confirmation" / "send_confirmation.py"}


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def test_the_documents_say_how_many_lines_the_example_takes() -> None:
    doc = DOC.read_text(encoding="utf-8")
    stated = {path: int(count) for path, count in re.findall(r"`(tests/pipeline/[\w/.]+)`, (\d+) lines", doc)}
    assert stated == {path.relative_to(REPO).as_posix(): _lines(path) for path in EXAMPLE.values()}
    readme_text = " ".join((REPO / "README.md").read_text(encoding="utf-8").split())
    readme = {part: int(count) for count, part in re.findall(r"(\d+)-line (stack|ASL file|handler)", readme_text)}
    assert readme == {part: _lines(path) for part, path in EXAMPLE.items()}


def test_the_example_runs_each_request_once_and_records_a_bad_one(confirmation_assembly: Path) -> None:
    # Given the example deployed into the rehearsal, its sender a verified SES identity (SES sends from no other)
    with Rehearsal.start(confirmation_assembly, stack_name="Confirmations") as aws:
        boto3.client("sesv2", region_name=aws.region).create_email_identity(EmailIdentity="no-reply@example.com")
        # When a request arrives twice (SQS delivers it again) and a request without an address arrives
        aws.pipe.duplicate_next = 1
        aws.send({"requestId": "req-1", "email": "ann@example.com", "text": "Your table is booked."})
        aws.send({"requestId": "req-2", "text": "No address."})
        executions = aws.run()
        records = [json.loads(m["Body"]) for m in aws.messages("FailureDlqUrl")]
        alerts = aws.notifications()
        sent = ses_backends[ACCOUNT][aws.region].sent_message_count
    # Then the first request was e-mailed once (its second delivery ended as a duplicate), and the bad one was
    # recorded in the failure DLQ with the step and the error, and announced once
    ends = sorted((e.status, e.states[-1]) for e in executions)
    assert ends == [("FAILED", "FailureRecorded"), ("SUCCEEDED", "DuplicateDeliveryIgnored"),
                    ("SUCCEEDED", "SendConfirmation")]
    assert sent == 1
    (record,) = records
    assert record["failure"]["state"] == "SendConfirmation" and record["failure"]["error"] == "KeyError"
    assert json.loads(record["record"]["body"])["requestId"] == "req-2"
    assert len(alerts) == 1 and "SendConfirmation" in (alerts[0][0] or "")
