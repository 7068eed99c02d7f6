"""The announcement of a failure that waits for a person, in the failure tail's per-protocol format.

The failure tail (fire_and_forget/construct/asl/failure_tail.asl.json, FormatFailureAlert) publishes with
MessageStructure "json": plain text for e-mail, an Amazon Q Developer in chat applications custom notification for Slack
and webhooks (`https`, `default`). The reconciler and the automatic redrive announce what they settle in the same
format, so a subscriber sees one kind of alert whoever sends it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fire_and_forget.runtime.healing_policy import MAX_SUBJECT, VERBS


def subject(environment: str, title: str, status: str, state: str) -> str:
    """`[<env>] <title> <failed|timed out|aborted> in <state>`; the construct refuses at synth a workflow whose
    longest subject would not fit, and this cuts the state name rather than let SNS refuse the alert."""
    head = f"[{environment}] {title} {VERBS.get(status, 'failed')} in "
    text = head + state
    if len(text) > MAX_SUBJECT:
        text = head + state[: MAX_SUBJECT - len(head) - 3] + "..."
    return "".join(c if 32 <= ord(c) < 127 else "?" for c in text)


@dataclass(frozen=True)
class Alert:
    subject: str
    text: str
    card: dict[str, Any]

    def message(self) -> str:
        card = json.dumps(self.card, separators=(",", ":"))
        return json.dumps({"default": card, "email": self.text, "https": card})


def failure_alert(*, environment: str, title: str, pipeline: str, region: str, failure: Mapping[str, Any],
                  manual_repair: bool, execution_arn: str, status: str, disposition: str, failed_at: str,
                  note: str | None = None) -> Alert:
    state = str(failure.get("state") or "?")
    error = str(failure.get("error") or "?")
    cause = str(failure.get("cause") or "")
    console = f"https://console.aws.amazon.com/states/home?region={region}#/v2/executions/details/{execution_arn}"
    lines = [
        f"A message of {title} could not be processed and is kept in the failure DLQ.",
        "",
        f"Execution status: {status}",
        f"Failed state: {state}",
        f"Error: {error}",
        f"Cause: {cause}",
        f"Manual repair needed: {str(manual_repair).lower()}",
        f"Waiting for: {disposition}",
    ]
    if note:
        lines.append(note)
    lines += [f"Execution: {execution_arn}", f"Console: {console}", "",
              "Compensation results and the original message: ff-ops failures list"]
    subject_text = subject(environment, title, status, state)
    card = {
        "version": "1.0",
        "source": "custom",
        "content": {
            "textType": "client-markdown",
            "title": f":rotating_light: {subject_text}",
            "description": (f"*Error:* `{error}`\n*Manual repair needed:* {str(manual_repair).lower()}\n"
                            f"The message is kept in the failure DLQ. <{console}|Open the execution>"),
            "nextSteps": [
                "Inspect the failed messages: `ff-ops failures list`",
                "Once the cause is fixed, redrive them: `ff-ops failures redrive`",
            ],
            "keywords": [environment, state, error],
        },
        "metadata": {
            "eventType": "FireAndForgetFailure",
            "summary": f"{subject_text}: {error}",
            "relatedResources": [execution_arn],
            "additionalContext": {
                "pipeline": pipeline,
                "environment": environment,
                "status": status,
                "failedState": state,
                "error": error,
                "manualRepair": str(manual_repair).lower(),
                "disposition": disposition,
                "executionArn": execution_arn,
                "failedAt": failed_at,
            },
        },
    }
    return Alert(subject_text, "\n".join(lines), card)
