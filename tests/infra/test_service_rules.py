"""What SNS and SQS enforce on every message the stack sends, checked over the synthesized template.

moto only rejects subjects over 100 characters and counts SQS sizes in characters; AWS refuses a subject of 100,
or one with a line break, and counts bytes. So each publish and send is evaluated here for the longest values the
stack allows: the longest environment name (stacks/config.py), every failed-state name the ASL can write, and the
largest error (256 characters) and cause (32,768 characters) Step Functions carries
(https://docs.aws.amazon.com/step-functions/latest/apireference/API_ExecutionFailedEventDetails.html).
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from pydantic import ValidationError

from stacks.config import AppConfig
from tests.support.template import of_type, ref_or_att

# https://docs.aws.amazon.com/sns/latest/api/API_Publish.html: Subject ASCII, under 100 characters, no line breaks or
# control characters, starting with a letter, number or punctuation mark; Message at most 256 KiB.
SUBJECT_LIMIT = 100
SNS_MESSAGE_BYTES = 256 * 1024
MAX_ERROR_CHARS = 256
MAX_CAUSE_CHARS = 32_768
# A control character is the costliest character a JSON serializer can meet: \u0001 is six bytes.
WORST_CHAR = "\u0001"
LONGEST_ENVIRONMENT = "a" + "b" * 15
LONGEST_ARN = "arn:aws:states:ap-southeast-7:123456789012:execution:" + "s" * 80 + ":" + "e" * 80
_FORMAT = re.compile(r"States\.Format\('((?:[^'\\]|\\.)*)'((?:,\s*[^,()]+(?:\([^()]*\))?)*)\)$")


def test_the_longest_environment_name_is_the_longest_allowed() -> None:
    AppConfig(environment_name=LONGEST_ENVIRONMENT)
    with pytest.raises(ValidationError):
        AppConfig(environment_name=LONGEST_ENVIRONMENT + "c")


def definitions(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every state machine's definition, ${EnvironmentName} at its longest, other substitutions left as names."""
    found = {}
    for logical_id, resource in of_type(template, "AWS::StepFunctions::StateMachine").items():
        text = resource["Properties"]["DefinitionString"]
        assert isinstance(text, str), f"{logical_id}: a definition CDK had to join cannot be checked here"
        found[logical_id] = json.loads(text.replace("${EnvironmentName}", LONGEST_ENVIRONMENT))
    return found


def publish_states(template: dict[str, Any]) -> list[tuple[str, dict[str, Any], str, dict[str, Any]]]:
    states = []
    for logical_id, definition in definitions(template).items():
        for name, state in definition["States"].items():
            if state.get("Resource", "").startswith("arn:aws:states:::sns:publish"):
                states.append((logical_id, definition, name, state))
    return states


def failed_state_names(definition: dict[str, Any]) -> set[str]:
    """Every literal `failure.state` the ASL writes: the finite set a subject may name."""
    return {
        state["Parameters"]["failure"]["state"]
        for state in definition["States"].values()
        if isinstance(state.get("Parameters", {}).get("failure"), dict) and "state" in state["Parameters"]["failure"]
    }


def worst_inputs(definition: dict[str, Any]) -> list[dict[str, Any]]:
    """State inputs with every value at its longest: one per failed-state name (only one is ever the longest)."""
    event = {
        "id": "e" * 36,
        "region": "ap-southeast-7",
        "detail": {
            "status": "TIMED_OUT",
            "error": WORST_CHAR * MAX_ERROR_CHARS,
            "cause": WORST_CHAR * MAX_CAUSE_CHARS,
            "executionArn": LONGEST_ARN,
            "startDate": 1_800_000_000_000,
        },
    }
    names = failed_state_names(definition) or {"none"}
    return [
        event
        | {
            "failure": {"state": name, "error": WORST_CHAR * MAX_ERROR_CHARS, "cause": WORST_CHAR * MAX_CAUSE_CHARS},
            "manualRepair": True,
        }
        for name in names
    ]


CONTEXT = {"Execution": {"Id": LONGEST_ARN}, "State": {"EnteredTime": "2026-12-01T00:00:00.000000+00:00"}}


def evaluate(expression: Any, data: dict[str, Any]) -> Any:
    """The JSONPath and intrinsic subset the alert states use: paths, States.Format, States.Array, JsonToString."""
    if isinstance(expression, dict):
        return {
            key.removesuffix(".$"): evaluate(value, data) if key.endswith(".$") else resolve_literal(value, data)
            for key, value in expression.items()
        }
    expression = expression.strip()
    if expression.startswith("$$."):
        return _path(CONTEXT, expression[3:])
    if expression.startswith("$."):
        return _path(data, expression[2:])
    if expression.startswith("'"):
        return expression[1:-1].replace("\\'", "'")
    if expression.startswith("States.JsonToString("):
        return json.dumps(evaluate(expression[len("States.JsonToString(") : -1], data), separators=(",", ":"))
    if expression.startswith("States.Array("):
        return [evaluate(arg, data) for arg in _split(expression[len("States.Array(") : -1])]
    match = _FORMAT.match(expression)
    assert match, f"not understood: {expression}"
    args = [evaluate(arg, data) for arg in _split(match.group(2).lstrip(","))] if match.group(2) else []
    pieces = re.split(r"(?<!\\)\{\}", match.group(1))
    assert len(pieces) == len(args) + 1, expression
    text = pieces[0]
    for arg, piece in zip(args, pieces[1:], strict=True):
        text += (arg if isinstance(arg, str) else json.dumps(arg)) + piece
    return re.sub(r"\\([{}'\\])", r"\1", text)


def resolve_literal(value: Any, data: dict[str, Any]) -> Any:
    return evaluate(value, data) if isinstance(value, dict) else value


def _path(value: Any, path: str) -> Any:
    for part in path.split("."):
        value = value[part]
    return value


def _split(args: str) -> list[str]:
    parts, depth, quoted, current = [], 0, False, ""
    for index, char in enumerate(args):
        if char == "'" and (index == 0 or args[index - 1] != "\\"):
            quoted = not quoted
        elif not quoted and char in "(":
            depth += 1
        elif not quoted and char == ")":
            depth -= 1
        if char == "," and not quoted and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    return [part for part in [*parts, current] if part.strip()]


def publish_parameters(definition: dict[str, Any], name: str, state_input: dict[str, Any]) -> dict[str, Any]:
    """The Publish call a state makes for an input, after the Pass states that lead to it."""
    data = dict(state_input)
    for state in definition["States"].values():
        if state.get("Type") == "Pass" and state.get("Next") == name:
            result = evaluate(state["Parameters"], data)
            path = state.get("ResultPath", "$")
            data = result if path == "$" else data | {path.removeprefix("$."): result}
    parameters = evaluate(definition["States"][name]["Parameters"], data)
    assert isinstance(parameters, dict)
    return parameters


def test_every_state_machine_publish_is_checked(template: dict[str, Any]) -> None:
    # The rule's announcer state machine is gone: the Reconciler publishes the rest (checked below, in Python).
    assert {name for _, _, name, _ in publish_states(template)} == {"NotifyFailure"}


@pytest.mark.parametrize("which", ["NotifyFailure"])
def test_every_subject_is_one_sns_accepts_for_the_longest_values(template: dict[str, Any], which: str) -> None:
    ((logical_id, definition, name, _),) = [p for p in publish_states(template) if p[2] == which]
    subjects = {publish_parameters(definition, name, data)["Subject"] for data in worst_inputs(definition)}

    for subject in subjects:
        assert len(subject) < SUBJECT_LIMIT, (logical_id, subject)
        assert subject.isascii() and subject.isprintable(), (logical_id, subject)
        assert subject[0].isalnum() or not subject[0].isspace(), (logical_id, subject)
    if which == "NotifyFailure":  # the failed state is named, and every state the ASL can name was tried
        assert {s.rsplit(" ", 1)[1] for s in subjects} == failed_state_names(definition) != set()


@pytest.mark.parametrize("which", ["NotifyFailure"])
def test_every_message_is_per_protocol_json_sns_accepts(template: dict[str, Any], which: str) -> None:
    ((logical_id, definition, name, _),) = [p for p in publish_states(template) if p[2] == which]

    for data in worst_inputs(definition):
        parameters = publish_parameters(definition, name, data)
        message = parameters["Message"]
        assert parameters["MessageStructure"] == "json"
        assert "default" in message and all(isinstance(value, str) for value in message.values())
        # Step Functions serializes a Message object to one JSON string (connect-sns.html's task-token example).
        size = len(json.dumps(message, ensure_ascii=False).encode())
        assert size <= SNS_MESSAGE_BYTES, (logical_id, size)
        assert "Cause: " + WORST_CHAR * MAX_CAUSE_CHARS in message["email"]  # the e-mail keeps the whole cause


@pytest.mark.parametrize("which", ["NotifyFailure"])
def test_slack_and_webhooks_get_a_chatbot_custom_notification(template: dict[str, Any], which: str) -> None:
    ((_, definition, name, _),) = [p for p in publish_states(template) if p[2] == which]
    message = publish_parameters(definition, name, worst_inputs(definition)[0])["Message"]

    card = json.loads(message["https"])
    # https://docs.aws.amazon.com/chatbot/latest/adminguide/custom-notifs.html
    assert (card["version"], card["source"], card["content"]["textType"]) == ("1.0", "custom", "client-markdown")
    assert card["content"]["title"] and card["content"]["description"]
    assert all(isinstance(v, str) for v in card["metadata"]["additionalContext"].values())
    assert json.loads(message["default"]) == card  # whatever protocol the channel subscribes with
    assert not message["email"].lstrip().startswith("{")  # e-mail reads plain text


def reconciler_alerts(template: dict[str, Any]) -> list[Any]:
    """The Reconciler's announcement with every value at its longest, one per status and per state it can name."""
    from fire_and_forget.healing.alerts import failure_alert

    (definition,) = [d for lid, d in definitions(template).items() if lid.startswith("PipelineWorkflow")]
    return [
        failure_alert(environment=LONGEST_ENVIRONMENT, title="Order saga", pipeline="orders", region="ap-southeast-7",
                      failure={"state": state, "error": WORST_CHAR * MAX_ERROR_CHARS,
                               "cause": WORST_CHAR * MAX_CAUSE_CHARS},
                      manual_repair=True, execution_arn=LONGEST_ARN, status=status, disposition="needs-decision",
                      failed_at="2026-12-01T00:00:00Z", note="Compensated: " + ", ".join(definition["States"]))
        for status in ("FAILED", "TIMED_OUT", "ABORTED")
        for state in [*definition["States"], "S" * 200]
    ]


def test_the_reconciler_s_subjects_are_ones_sns_accepts(template: dict[str, Any]) -> None:
    for alert in reconciler_alerts(template):
        assert len(alert.subject) < SUBJECT_LIMIT, alert.subject
        assert alert.subject.isascii() and alert.subject.isprintable(), alert.subject
        assert alert.subject[0].isalnum() or not alert.subject[0].isspace(), alert.subject


def test_the_reconciler_s_messages_are_per_protocol_json_sns_accepts(template: dict[str, Any]) -> None:
    for alert in reconciler_alerts(template):
        message = json.loads(alert.message())  # published with MessageStructure "json"
        assert {"default", "email", "https"} <= set(message)
        assert all(isinstance(value, str) for value in message.values())
        assert len(alert.message().encode()) <= SNS_MESSAGE_BYTES
        assert "Cause: " + WORST_CHAR * MAX_CAUSE_CHARS in message["email"]
        card = json.loads(message["https"])
        assert (card["version"], card["source"], card["content"]["textType"]) == ("1.0", "custom", "client-markdown")
        assert card["content"]["title"] and card["content"]["description"]
        assert all(isinstance(v, str) for v in card["metadata"]["additionalContext"].values())
        assert json.loads(message["default"]) == card
        assert not message["email"].lstrip().startswith("{")


# What each producer can hand a queue at most, from the services' quotas:
# Step Functions: 256 KiB per execution input and per state's input/output
#   (https://docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html);
# EventBridge: 256 KiB per event (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-quota.html);
# SQS: a message counts its body and its attributes, at most 1 MiB
#   (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SendMessage.html).
STEP_FUNCTIONS_PAYLOAD = 256 * 1024
EVENT_BYTES = 256 * 1024
# EventBridge adds RULE_ARN, TARGET_ARN, ERROR_CODE, ERROR_MESSAGE, EXHAUSTED_RETRY_CONDITION and RETRY_ATTEMPTS to
# what it puts in a target's DLQ (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-rule-dlq.html); each
# is an ARN or a short message: 8 KiB bounds them together with room to spare.
DLQ_METADATA = 8 * 1024


def _queue_limits(template: dict[str, Any]) -> dict[str, int]:
    return {lid: int(res["Properties"].get("MaximumMessageSize", 1_048_576))
            for lid, res in of_type(template, "AWS::SQS::Queue").items()}


def _source_queue_ids(template: dict[str, Any]) -> tuple[str, str]:
    """The queue the pipe reads, and the DLQ its redrive policy names."""
    (pipe,) = of_type(template, "AWS::Pipes::Pipe").values()
    source_id = str(ref_or_att(pipe["Properties"]["Source"]))
    redrive = template["Resources"][source_id]["Properties"]["RedrivePolicy"]
    return source_id, str(ref_or_att(redrive["deadLetterTargetArn"]))


def _queue_of(template: dict[str, Any], prefix: str) -> int:
    (limit,) = [size for lid, size in _queue_limits(template).items() if lid.startswith(prefix)]
    return limit


def test_the_failure_record_fits_the_failure_dlq_for_the_largest_input(template: dict[str, Any]) -> None:
    # HandleFailure's MessageBody holds the execution input's record ($$.Execution.Input[0], at most the whole
    # execution input) and the state's failure, compensation and manualRepair (at most the state's input), plus
    # fixed text and context values. Step Functions refuses anything larger itself (States.DataLimitExceeded,
    # which the rule announces), so this is the largest body HandleFailure can ever send.
    (states,) = [d["States"] for lid, d in definitions(template).items() if lid.startswith("PipelineWorkflow")]
    body = states["HandleFailure"]["Parameters"]["MessageBody"]
    fixed = {key: value for key, value in body.items() if not key.endswith(".$")}
    context_values = len(LONGEST_ARN) * 2 + len(CONTEXT["State"]["EnteredTime"])
    largest = (len(json.dumps(fixed)) + sum(len(key) + 8 for key in body) + context_values
               + STEP_FUNCTIONS_PAYLOAD + STEP_FUNCTIONS_PAYLOAD)
    attributes = states["HandleFailure"]["Parameters"].get("MessageAttributes", {})
    largest += sum(len(name) + len("String") + MAX_ERROR_CHARS * 6 for name in attributes)
    assert largest <= _queue_of(template, "PipelineFailureHandlingFailureDlq")


def test_every_dlq_takes_what_its_producer_can_send(template: dict[str, Any]) -> None:
    limits = _queue_limits(template)
    assert limits
    # The source DLQ gets source messages as they were; the others get events and SNS messages with metadata.
    source_id, source_dlq_id = _source_queue_ids(template)
    assert limits[source_dlq_id] >= limits[source_id]
    assert _queue_of(template, "PipelineExecutionEventsFailureEventsQueue") >= EVENT_BYTES
    assert _queue_of(template, "PipelineExecutionEventsTargetDlq") >= EVENT_BYTES + DLQ_METADATA
    for lid, limit in limits.items():
        if "Undelivered" in lid:
            assert limit >= SNS_MESSAGE_BYTES + DLQ_METADATA


def test_the_source_queue_keeps_orders_within_one_pipe_batch(template: dict[str, Any]) -> None:
    # A pipe hands Step Functions the batch as the execution input: the record (body, attributes, metadata) must
    # leave room under 256 KiB, which the 64 KiB source limit does with a wide margin even escaped twice over.
    source_id, _ = _source_queue_ids(template)
    assert _queue_limits(template)[source_id] * 3 < STEP_FUNCTIONS_PAYLOAD
