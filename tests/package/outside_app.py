"""Run by tests/package/test_installed_wheel.py in a fresh venv holding only the built wheel and its extras, from a
directory outside the repository: the third workflow (copied beside this file) is synthesized with cdk-nag, run in
the rehearsal, and read back with ff-ops, all through the package's public API."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import aws_cdk as cdk
import boto3
from third_workflow import ConfirmationStack  # type: ignore[import-not-found]  # copied beside this file
from typer.testing import CliRunner

import fire_and_forget
from fire_and_forget.cli.app import app as ff_ops
from fire_and_forget.construct import PipelineSettings, add_compliance_checks
from fire_and_forget.rehearsal import Rehearsal

STACK = "Confirmations"


def main(outdir: Path) -> dict[str, object]:
    app = cdk.App(outdir=str(outdir))
    ConfirmationStack(app, STACK, settings=PipelineSettings())
    add_compliance_checks(app)  # an unacknowledged cdk-nag finding raises here
    app.synth()
    with Rehearsal.start(outdir, STACK) as aws:
        boto3.client("sesv2", region_name=aws.region).create_email_identity(EmailIdentity="no-reply@example.com")
        aws.send(json.dumps({"requestId": "r-1", "email": "a@example.com", "text": "Thank you"}))
        aws.send(json.dumps({"requestId": "r-2"}))  # no e-mail address: the task fails, the tail records it
        aws.run()
        aws.publish_pipe()  # what ff-ops status reads of the pipe, and moto's CloudFormation skips
        statuses = sorted(str(e.status) for e in aws.executions())
        listed = CliRunner().invoke(ff_ops, ["failures", "list", "--stack-name", STACK, "--json"])
        failures = json.loads(listed.stdout)
        reported = CliRunner().invoke(ff_ops, ["status", "--stack-name", STACK, "--json"])
        status = json.loads(reported.stdout)
    return {"package": fire_and_forget.__file__, "statuses": statuses, "exit": listed.exit_code,
            "failed_keys": sorted(r["key"] for r in failures["failures"]), "status_exit": reported.exit_code,
            "status_stack": status["stack"], "queues": {q["outputKey"]: q["visible"] for q in status["queues"]}}


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]))))
