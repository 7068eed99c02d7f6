"""The announcement the healers publish (fire_and_forget/healing/alerts.py), in the failure tail's per-protocol
format: the subject SNS accepts (ASCII, under 100 characters, the state cut rather than the alert refused), the
e-mail's text line by line, and the chat card field by field."""

from __future__ import annotations

import json

import pytest

from fire_and_forget.healing.alerts import Alert, failure_alert, subject
from fire_and_forget.runtime.healing_policy import MAX_SUBJECT

ARN = "arn:aws:states:eu-west-1:123456789012:execution:saga:e1"


@pytest.mark.parametrize(("status", "verb"), [("FAILED", "failed"), ("TIMED_OUT", "timed out"),
                                              ("ABORTED", "aborted"), ("SOMETHING_NEW", "failed")])
def test_the_subject_says_how_the_execution_ended_and_where(status: str, verb: str) -> None:
    assert subject("prod", "Order saga", status, "ChargePayment") == f"[prod] Order saga {verb} in ChargePayment"


def test_a_subject_of_exactly_the_limit_is_kept_whole_and_a_longer_one_cut_with_an_ellipsis() -> None:
    head = "[prod] Order saga timed out in "
    fits = "S" * (MAX_SUBJECT - len(head))
    assert subject("prod", "Order saga", "TIMED_OUT", fits) == head + fits
    assert len(head + fits) == MAX_SUBJECT == 99
    cut = subject("prod", "Order saga", "TIMED_OUT", fits + "T")
    assert cut == head + "S" * (MAX_SUBJECT - len(head) - 3) + "..." and len(cut) == MAX_SUBJECT


def test_the_subject_is_ascii_without_control_characters() -> None:
    assert subject("prod", "Bestellung\tprüfen", "FAILED", "Zahlung\x7f\x1f ") == \
        "[prod] Bestellung?pr?fen failed in Zahlung?? "
    assert subject("a", "~", "FAILED", " ") == "[a] ~ failed in  "  # the printable range's two ends are kept


def alert(**changes: object) -> Alert:
    arguments: dict[str, object] = {
        "environment": "prod", "title": "Order saga", "pipeline": "orders", "region": "eu-west-1",
        "failure": {"state": "ChargePayment", "error": "PaymentDeclined", "cause": "card expired"},
        "manual_repair": False, "execution_arn": ARN, "status": "FAILED", "disposition": "needs-decision",
        "failed_at": "2026-12-01T12:00:00.000Z"}
    arguments.update(changes)
    return failure_alert(**arguments)  # type: ignore[arg-type]


CONSOLE = f"https://console.aws.amazon.com/states/home?region=eu-west-1#/v2/executions/details/{ARN}"


def test_the_e_mail_says_what_failed_where_why_and_what_to_do() -> None:
    assert alert().text == "\n".join([
        "A message of Order saga could not be processed and is kept in the failure DLQ.", "",
        "Execution status: FAILED", "Failed state: ChargePayment", "Error: PaymentDeclined", "Cause: card expired",
        "Manual repair needed: false", "Waiting for: needs-decision", f"Execution: {ARN}", f"Console: {CONSOLE}", "",
        "Compensation results and the original message: ff-ops failures list"])


def test_a_note_goes_after_what_the_record_waits_for() -> None:
    lines = alert(note="Resend it by hand.", manual_repair=True).text.splitlines()
    assert lines[6:9] == ["Manual repair needed: true", "Waiting for: needs-decision", "Resend it by hand."]
    assert lines[9] == f"Execution: {ARN}"


def test_a_failure_missing_its_parts_reads_as_unknown() -> None:
    sparse = alert(failure={"state": None, "error": ""})
    assert "Failed state: ?\nError: ?\nCause: \n" in sparse.text
    assert sparse.subject == "[prod] Order saga failed in ?"
    assert sparse.card["content"]["keywords"] == ["prod", "?", "?"]


def test_the_chat_card_field_by_field() -> None:
    made = alert(manual_repair=True, status="TIMED_OUT", disposition="manual-repair")
    assert made.subject == "[prod] Order saga timed out in ChargePayment"
    assert made.card == {
        "version": "1.0",
        "source": "custom",
        "content": {
            "textType": "client-markdown",
            "title": ":rotating_light: [prod] Order saga timed out in ChargePayment",
            "description": ("*Error:* `PaymentDeclined`\n*Manual repair needed:* true\n"
                            f"The message is kept in the failure DLQ. <{CONSOLE}|Open the execution>"),
            "nextSteps": ["Inspect the failed messages: `ff-ops failures list`",
                          "Once the cause is fixed, redrive them: `ff-ops failures redrive`"],
            "keywords": ["prod", "ChargePayment", "PaymentDeclined"],
        },
        "metadata": {
            "eventType": "FireAndForgetFailure",
            "summary": "[prod] Order saga timed out in ChargePayment: PaymentDeclined",
            "relatedResources": [ARN],
            "additionalContext": {
                "pipeline": "orders", "environment": "prod", "status": "TIMED_OUT", "failedState": "ChargePayment",
                "error": "PaymentDeclined", "manualRepair": "true", "disposition": "manual-repair",
                "executionArn": ARN, "failedAt": "2026-12-01T12:00:00.000Z",
            },
        },
    }


def test_the_message_holds_the_card_for_chat_and_webhooks_and_the_text_for_e_mail() -> None:
    made = alert()
    message = json.loads(made.message())
    assert set(message) == {"default", "email", "https"}
    assert message["email"] == made.text
    assert json.loads(message["default"]) == made.card and message["https"] == message["default"]
    assert message["default"] == json.dumps(made.card, separators=(",", ":"))  # compact: SNS bounds the size
