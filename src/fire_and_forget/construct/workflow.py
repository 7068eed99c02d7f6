"""A Standard workflow given to the pipeline: its ASL, the failure tail appended to it, and the wiring it must honour.

The contract a workflow honours (docs/construct.md, "The workflow contract"), checked at synth by `check_wiring`:
- its input is the pipe's batch, a JSON array of one SQS record: tasks read `$$.Execution.Input[0]`;
- every Task has a TimeoutSeconds and a Catch for States.ALL whose path reaches FAILURE_ENTRY (`ClaimFailure`)
  with `{failure: {state, error, cause}, compensation: {...}, manualRepair: bool}`;
- the task that claims the delivery (`Workflow.claims_delivery`) Catches DuplicateDelivery into
  DUPLICATE_DELIVERY_END (`DuplicateDeliveryIgnored`);
- no state of its own bears a name of the failure tail.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from aws_cdk import Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from fire_and_forget.construct.compliance import acknowledge
from fire_and_forget.construct.defaults import state_machine_log_group
from fire_and_forget.construct.request_response import (
    FIRE_AND_FORGET,
    REQUEST_RESPONSE,
    InvocationType,
    check_express_definition,
    check_longest_run,
    check_timeouts,
    with_returned_tail,
    workflow_timeout_seconds,
    workflow_type,
)
from fire_and_forget.construct.settings import PipelineSettings
from fire_and_forget.construct.state_graph import reaches, targets, without_states
from fire_and_forget.runtime.healing_policy import ATTEMPT_ATTRIBUTE, LONGEST_VERB, MAX_SUBJECT, TIMEOUT_ERRORS
from fire_and_forget.runtime.tail import DUPLICATE_DELIVERY_ERROR, HANDLED_FAILURE_ERROR, TailState

TAIL_FILE = Path(__file__).resolve().parent / "asl" / "failure_tail.asl.json"
LAMBDA_INVOKE = "arn:aws:states:::lambda:invoke"
# A Task that invokes a function with its task token and waits for SendTask* (fire_and_forget.construct.callbacks).
LAMBDA_CALLBACK = LAMBDA_INVOKE + ".waitForTaskToken"
TRANSIENT_ERROR = "TransientError"
LAMBDA_THROTTLE = "Lambda.TooManyRequestsException"
# Plain strings (the state names), so that messages quote them as a reader writes them.
FAILURE_ENTRY = str(TailState.CLAIM_FAILURE)
DUPLICATE_DELIVERY_END = str(TailState.DUPLICATE_DELIVERY_IGNORED)
# The states whose failure ends the execution unless they Catch it: a Task, and a Parallel or Map (whose Catch is
# what sees a failure inside its branches).
CATCHING_TYPES = ("Task", "Parallel", "Map")
# A title goes into States.Format strings and SNS subjects: nothing that would need escaping, and short.
TITLE_CHARACTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 -_.")
MAX_TITLE = 40
# Between HandleFailure and the announcement: a failure the automatic redrive will retry is recorded, not announced
# (it is announced when it fails for good); every other failure is announced at once.
ANNOUNCE_OR_WAIT = TailState.ANNOUNCE_UNLESS_RETRIED
# Where the Choice ends a failure it does not announce: a Fail state with the same Error as FailureRecorded and its
# own Cause (failure_tail.asl.json), dropped when the Choice is not there (Step Functions refuses an unreachable state).
WAITING_END = TailState.FAILURE_RECORDED_FOR_RETRY
# What a compensation state sends its function: the reconciler sends the same when it compensates from a history.
COMPENSATION_PAYLOAD = {"record.$": "$$.Execution.Input[0]", "executionArn.$": "$$.Execution.Id"}
# The longest environment name PipelineSettings accepts (its pattern), for the alert subject bound.
MAX_ENVIRONMENT = 16

__all__ = ["DUPLICATE_DELIVERY_END", "FAILURE_ENTRY", "HANDLED_FAILURE_ERROR", "Workflow", "WiringError",
           "check_wiring", "full_definition", "render_definition"]


class WiringError(ValueError):
    """The workflow or the pipe is wired in a way that would lose or silently drop a failure; says what to change."""


@dataclass(frozen=True)
class Workflow:
    """A Standard workflow for the pipeline: its ASL file and the Lambda functions its tasks invoke.

    `functions` maps a state name to its function: the ASL names it as `${<StateName>FunctionArn}`.
    `claims_delivery` is the state whose function claims the SQS messageId (fire_and_forget.deliveries) before any
    side effect: the construct grants it the deliveries table and sets DELIVERIES_TABLE_NAME and
    DELIVERY_CLAIM_TTL_SECONDS. `compensations` are the states that undo (they get the longer compensation retry).
    `undo` maps each step to the compensation state that undoes it: the reconciler runs those, last step first,
    for an execution that stopped outside the failure tail (each must send COMPENSATION_PAYLOAD, checked at synth).
    `substitutions` fill further `${Name}` placeholders (a table name the ASL reads, say).
    `leave_out` names optional states of the file this deployment goes without: each is bypassed (whatever goes to
    it goes to its Next) and the states only it reached (its failure path) are dropped (state_graph.without_states).
    `reports_progress` names the states whose functions tell the message's caller how far its work went
    (fire_and_forget.runtime.status.AttemptProgress): the construct lets each update the message's row in the
    deliveries table and sets DELIVERIES_TABLE_NAME (FIRE_AND_FORGET only).
    """

    title: str
    definition_file: Path
    functions: Mapping[str, lambda_.Function]
    claims_delivery: str
    compensations: tuple[str, ...] = ()
    substitutions: Mapping[str, str] = field(default_factory=dict)
    undo: Mapping[str, str] = field(default_factory=dict)
    leave_out: tuple[str, ...] = ()
    reports_progress: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.title or len(self.title) > MAX_TITLE or not set(self.title) <= TITLE_CHARACTERS:
            raise WiringError(
                f"Workflow title {self.title!r}: use 1 to {MAX_TITLE} letters, digits, spaces, '-', '_' or '.' "
                "(it goes into alert subjects and ASL format strings)."
            )
        if self.claims_delivery not in self.functions:
            raise WiringError(
                f"Workflow {self.title!r}: claims_delivery names {self.claims_delivery!r}, which is not one of its "
                f"functions ({', '.join(self.functions)}). Name the entry task whose function claims the message."
            )
        strangers = sorted(set(self.reports_progress) - set(self.functions))
        if strangers:
            raise WiringError(f"Workflow {self.title!r}: reports_progress names {', '.join(strangers)}, which are not "
                              "its functions")
        unknown = sorted({*self.undo, *self.undo.values()} - set(self.functions))
        if unknown:
            raise WiringError(f"Workflow {self.title!r}: undo names {', '.join(unknown)}, which are not its functions")
        not_compensations = sorted(set(self.undo.values()) - set(self.compensations))
        if not_compensations:
            raise WiringError(f"Workflow {self.title!r}: undo's {', '.join(not_compensations)} must also be listed "
                              "in compensations (they get the compensation retry)")

    def definition(self, settings: PipelineSettings, invocation_type: InvocationType = FIRE_AND_FORGET
                   ) -> dict[str, Any]:
        """The ASL with the settings' timeouts and backoff applied and the mode's tail appended, checked."""
        definition = render_definition(self.definition_file, settings, compensations=self.compensations,
                                       claims_delivery=self.claims_delivery, invocation_type=invocation_type,
                                       leave_out=self.leave_out)
        problems = _undo_problems(definition["States"], self.undo) + _subject_problems(definition, self.title)
        if problems:
            raise WiringError(f"{self.definition_file}: " + "; ".join(problems))
        check_timeouts(definition, self.functions, source=str(self.definition_file))
        if invocation_type == REQUEST_RESPONSE:
            check_longest_run(definition, self.functions, source=str(self.definition_file))
        return definition

    def ordered_undo(self, definition: dict[str, Any]) -> tuple[tuple[str, str], ...]:
        """(step, compensation) in the order the steps appear in the definition."""
        return tuple((step, self.undo[step]) for step in definition["States"] if step in self.undo)


def retried_errors(definition: dict[str, Any]) -> dict[str, frozenset[str]]:
    """Each Task state's retried error names (States.ALL left out): what "transient by class" means for it."""
    retried: dict[str, frozenset[str]] = {}
    for name, state in definition["States"].items():
        if state.get("Type") == "Task":
            names = {error for retrier in state.get("Retry", []) for error in retrier.get("ErrorEquals", [])}
            retried[name] = frozenset(names - {"States.ALL"})
    return retried


def _undo_problems(states: dict[str, Any], undo: Mapping[str, str]) -> list[str]:
    problems = []
    for step, compensation in undo.items():
        if step not in states or compensation not in states:
            problems.append(f"undo {step!r} -> {compensation!r}: both must be states of the workflow")
            continue
        payload = states[compensation].get("Parameters", {}).get("Payload")
        if payload != COMPENSATION_PAYLOAD:
            problems.append(f"compensation {compensation!r} must send Payload {json.dumps(COMPENSATION_PAYLOAD)}: the "
                            "reconciler invokes it with exactly that when it compensates from a history")
    return problems


def _subject_problems(definition: dict[str, Any], title: str) -> list[str]:
    """SNS refuses a subject of 100 characters or more; the alerts name the state that failed."""
    longest = max((name for name in definition["States"]), key=len)
    length = len(f"[{'x' * MAX_ENVIRONMENT}] {title} {LONGEST_VERB} in {longest}")
    if length > MAX_SUBJECT:
        return [f"the alert subject for state {longest!r} would be {length} characters with a {MAX_ENVIRONMENT}-"
                f"character environment name, over SNS's {MAX_SUBJECT}: shorten the title or the state name"]
    return []


def render_definition(definition_file: Path, settings: PipelineSettings, *, compensations: tuple[str, ...],
                      claims_delivery: str, invocation_type: InvocationType = FIRE_AND_FORGET,
                      leave_out: tuple[str, ...] = ()) -> dict[str, Any]:
    """What the state machine runs: the workflow's ASL without the states it leaves out, with the settings applied
    and checked, plus the mode's tail (the failure tail for FIRE_AND_FORGET, the returning tail for
    REQUEST_RESPONSE: request_response.py)."""
    definition: dict[str, Any] = json.loads(definition_file.read_text(encoding="utf-8"))
    if leave_out:
        try:
            definition = without_states(definition, leave_out)
        except ValueError as error:
            raise WiringError(f"{definition_file}: {error}") from error
    apply_settings(definition, settings, compensations, timeout_seconds=workflow_timeout_seconds(settings,
                                                                                                 invocation_type),
                   throttles_apart=invocation_type != REQUEST_RESPONSE)
    check_wiring(definition, claims_delivery=claims_delivery, source=str(definition_file))
    if invocation_type == REQUEST_RESPONSE:
        rendered = with_returned_tail(definition, source=str(definition_file))
        check_express_definition(rendered, source=str(definition_file))
        return rendered
    return full_definition(definition, settings.healing.max_attempts)


def apply_settings(definition: dict[str, Any], settings: PipelineSettings, compensations: tuple[str, ...], *,
                   timeout_seconds: int | None = None, throttles_apart: bool = False) -> None:
    """Write the deployment's timeouts and transient-error backoff into every Lambda task.

    Numbers cannot be CloudFormation substitutions (those are strings), so the file holds the defaults and this
    function writes the configured values into every Lambda task and its transient-error retrier (a callback Task
    keeps its own TimeoutSeconds and HeartbeatSeconds: how long the party doing the work may take). The workflow's
    TimeoutSeconds is `timeout_seconds` (the mode's: request_response.workflow_timeout_seconds), by default the
    Standard workflow's `execution_timeout_minutes`.

    With `throttles_apart` (FIRE_AND_FORGET) and `retry.throttleMaxAttempts` above 0, Lambda's throttle leaves the
    transient-error retrier for a retrier of its own after it: `throttleMaxAttempts` attempts, backoff capped at
    `throttleMaxDelaySeconds`, the same interval, rate and FULL jitter (Step Functions takes the first retrier whose
    ErrorEquals names the error, so only one does).
    """
    definition["TimeoutSeconds"] = settings.execution_timeout_minutes * 60 if timeout_seconds is None \
        else timeout_seconds
    for name, state in definition["States"].items():
        if state.get("Resource") not in (LAMBDA_INVOKE, LAMBDA_CALLBACK):
            continue
        if state["Resource"] == LAMBDA_INVOKE:  # a callback's TimeoutSeconds is how long the other party may take
            state["TimeoutSeconds"] = settings.task_timeout_seconds
        retriers = state.get("Retry", [])
        for position, retrier in enumerate(list(retriers)):
            if TRANSIENT_ERROR not in retrier["ErrorEquals"]:
                continue
            retrier.update(
                IntervalSeconds=settings.retry.interval_seconds,
                MaxAttempts=settings.retry.compensation_max_attempts if name in compensations
                else settings.retry.max_attempts,
                BackoffRate=settings.retry.backoff_rate,
                MaxDelaySeconds=settings.retry.max_delay_seconds,
                JitterStrategy="FULL",
            )
            if throttles_apart and settings.retry.throttle_max_attempts and LAMBDA_THROTTLE in retrier["ErrorEquals"]:
                retrier["ErrorEquals"] = [error for error in retrier["ErrorEquals"] if error != LAMBDA_THROTTLE]
                retriers.insert(position + 1, {
                    "ErrorEquals": [LAMBDA_THROTTLE],
                    "IntervalSeconds": settings.retry.interval_seconds,
                    "MaxAttempts": settings.retry.throttle_max_attempts,
                    "BackoffRate": settings.retry.backoff_rate,
                    "MaxDelaySeconds": settings.retry.throttle_max_delay_seconds,
                    "JitterStrategy": "FULL",
                })


@cache
def _tail_text() -> str:
    return TAIL_FILE.read_text(encoding="utf-8")


def failure_tail() -> dict[str, Any]:
    """The construct's own states, appended to every workflow (a fresh copy each call: callers may change it)."""
    tail: dict[str, Any] = json.loads(_tail_text())
    return dict(tail["States"])


def full_definition(definition: dict[str, Any], max_automatic_attempts: int = 0) -> dict[str, Any]:
    """The workflow's states followed by the failure tail's.

    With automatic redrives (`max_automatic_attempts` > 0), HandleFailure goes to AnnounceUnlessRetried, a Choice that
    ends a failure the redriver will retry in FailureRecordedForRetry, without announcing it; the condition is the
    HealingPolicy's (fire_and_forget/runtime/healing_policy.py) written in ASL, and
    tests/pipeline/test_healing_policy.py checks that the two agree. Without them, every failure is announced and
    FailureRecordedForRetry is left out.
    """
    merged = dict(definition)
    tail = failure_tail()
    if max_automatic_attempts > 0:
        tail[TailState.HANDLE_FAILURE]["Next"] = ANNOUNCE_OR_WAIT
        tail[ANNOUNCE_OR_WAIT] = announce_or_wait(retried_errors(definition), max_automatic_attempts)
    else:
        del tail[WAITING_END]
    merged["States"] = {**definition["States"], **tail}
    return merged


def announce_or_wait(retried: Mapping[str, frozenset[str]], max_attempts: int) -> dict[str, Any]:
    attempt = f"$$.Execution.Input[0].messageAttributes.{ATTEMPT_ATTRIBUTE}"
    transient: list[dict[str, Any]] = [{"Variable": "$.failure.error", "StringEquals": name} for name in TIMEOUT_ERRORS]
    for state, errors in sorted(retried.items()):
        if errors:
            transient.append({"And": [
                {"Variable": "$.failure.state", "StringEquals": state},
                _any([{"Variable": "$.failure.error", "StringEquals": error} for error in sorted(errors)]),
            ]})
    attempts_left: list[dict[str, Any]] = [{"Variable": attempt, "IsPresent": False}]
    attempts_left += [{"Variable": f"{attempt}.stringValue", "StringEquals": str(n)} for n in range(max_attempts)]
    return {
        "Type": "Choice",
        "Comment": "A transient failure with automatic attempts left is recorded, not announced: the Redriver sends "
                   "it back after its cool-off, and it is announced only if it fails for good (the HealingPolicy).",
        "Choices": [{
            "And": [
                {"Variable": "$.manualRepair", "BooleanEquals": False},
                _any(transient),
                _any(attempts_left),
            ],
            "Next": WAITING_END,
        }],
        "Default": TailState.FORMAT_FAILURE_ALERT,
    }


def _any(rules: list[dict[str, Any]]) -> dict[str, Any]:
    return rules[0] if len(rules) == 1 else {"Or": rules}


def check_wiring(definition: dict[str, Any], *, claims_delivery: str, source: str = "the workflow") -> None:
    """Refuse, before anything is deployed, a workflow that could fail without the failure tail knowing."""
    states: dict[str, Any] = definition.get("States", {})
    problems: list[str] = []
    tail = failure_tail()
    taken = sorted(set(states) & (set(tail) | {ANNOUNCE_OR_WAIT}))
    if taken:
        problems.append(f"states {', '.join(taken)} bear names of the construct's failure tail: rename them")
    if not any(FAILURE_ENTRY in targets(state) for state in states.values()):
        problems.append(f"no state goes to the failure entry {FAILURE_ENTRY!r}: end every Catch path there")
    for name, state in states.items():
        problems += _state_problems(name, state, states)
    entry = states.get(claims_delivery, {})
    duplicate_ends = [c.get("Next") for c in entry.get("Catch", [])
                      if DUPLICATE_DELIVERY_ERROR in c.get("ErrorEquals", [])]
    if duplicate_ends != [DUPLICATE_DELIVERY_END]:
        problems.append(f"Task {claims_delivery!r} claims the delivery but does not Catch {DUPLICATE_DELIVERY_ERROR} "
                        f"into {DUPLICATE_DELIVERY_END!r}: a redelivered message would be processed twice")
    if problems:
        raise WiringError(f"{source}: " + "; ".join(problems) + ". See docs/construct.md, \"The workflow contract\".")


def _state_problems(name: str, state: dict[str, Any], states: dict[str, Any]) -> list[str]:
    """What one top-level state lacks for its failures to reach the failure tail."""
    problems: list[str] = []
    kind = state.get("Type")
    if kind not in CATCHING_TYPES:
        return problems
    if kind == "Task" and _lacks_timeout(state):
        problems.append(f"Task {name!r} has no TimeoutSeconds: a hung call would hold the execution for a year")
    catch_all = [c for c in state.get("Catch", []) if "States.ALL" in c.get("ErrorEquals", [])]
    if not catch_all:
        problems.append(f"{kind} {name!r} has no Catch for States.ALL: its failure would end the execution "
                        f"outside {FAILURE_ENTRY!r}, unrecorded")
    elif not all(reaches(states, c["Next"], FAILURE_ENTRY) for c in catch_all):
        problems.append(f"{kind} {name!r}: its States.ALL Catch never reaches {FAILURE_ENTRY!r}")
    # Inside a Parallel or a Map, the enclosing state's Catch sees a branch's failure; a Task there still
    # needs its own timeout.
    for inner_name, inner in _nested_states(state):
        if inner.get("Type") == "Task" and _lacks_timeout(inner):
            problems.append(f"Task {inner_name!r} (inside {name!r}) has no TimeoutSeconds: a hung call would hold "
                            "the execution for a year")
    return problems


def _lacks_timeout(task: dict[str, Any]) -> bool:
    return "TimeoutSeconds" not in task and "TimeoutSecondsPath" not in task


def _nested_states(state: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every state inside a Parallel's branches or a Map's item processor, at any depth."""
    inner: list[dict[str, Any]] = [*state.get("Branches", [])]
    for key in ("ItemProcessor", "Iterator"):
        if isinstance(state.get(key), dict):
            inner.append(state[key])
    for machine in inner:
        for name, nested in machine.get("States", {}).items():
            yield name, nested
            yield from _nested_states(nested)


class WorkflowStateMachine(Construct):
    """The workflow's state machine with logging, X-Ray tracing and least-privilege grants to what it calls.

    STANDARD for FIRE_AND_FORGET; EXPRESS for REQUEST_RESPONSE, logging ALL events with their data, since an Express
    workflow keeps no history of its own and its log is the only record of why it failed (docs/design.md).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        workflow: Workflow,
        settings: PipelineSettings,
        pipeline_name: str,
        failure_dlq: sqs.IQueue | None,
        alerts_topic: sns.ITopic | None,
        key: kms.IKey,
        deliveries_table: dynamodb.ITable,
        invocation_type: InvocationType = FIRE_AND_FORGET,
    ) -> None:
        super().__init__(scope, construct_id)
        returns = invocation_type == REQUEST_RESPONSE
        if not returns and (failure_dlq is None or alerts_topic is None):
            raise WiringError("FIRE_AND_FORGET's failure tail needs the failure DLQ and the alerts topic")
        self.state_machine_type = workflow_type(invocation_type)
        functions = workflow.functions
        substitutions = {f"{state}FunctionArn": function.function_arn for state, function in functions.items()}
        substitutions |= dict(workflow.substitutions)
        if failure_dlq is not None and alerts_topic is not None and not returns:
            substitutions |= {"FailureDlqUrl": failure_dlq.queue_url, "AlertsTopicArn": alerts_topic.topic_arn}
        substitutions |= {
            "DeliveriesTableName": deliveries_table.table_name,
            "EnvironmentName": settings.environment_name,
            "Region": Stack.of(self).region,
            "PipelineName": pipeline_name,
            "WorkflowTitle": workflow.title,
        }
        self.definition = workflow.definition(settings, invocation_type)
        self.log_group = state_machine_log_group(self, "Logs", settings=settings)
        self.state_machine = sfn.StateMachine(
            self,
            "StateMachine",
            state_machine_type=self.state_machine_type,
            definition_body=sfn.DefinitionBody.from_string(json.dumps(self.definition, indent=2)),
            definition_substitutions=substitutions,
            tracing_enabled=True,
            logs=sfn.LogOptions(
                destination=self.log_group,
                level=sfn.LogLevel.ALL,
                include_execution_data=settings.include_execution_data or returns,
            ),
        )
        # Hand-written where the L2 grants are wider than the workflow needs: grant_invoke adds every version
        # and alias (`arn:*`), and the queue/topic grants add kms:ReEncrypt* and kms:Encrypt.
        self.state_machine.add_to_role_policy(
            iam.PolicyStatement(
                actions=["lambda:InvokeFunction"], resources=[fn.function_arn for fn in functions.values()]
            )
        )
        if returns:
            # ClaimFailure's conditional delete: a failed execution releases its claim for the next receive;
            # DeliveryCompleted's conditional update and DuplicateDeliveryIgnored's read of the owner's claim.
            deliveries_table.grant(self.state_machine, "dynamodb:DeleteItem", "dynamodb:UpdateItem",
                                   "dynamodb:GetItem")
        else:
            assert failure_dlq is not None and alerts_topic is not None
            self.state_machine.add_to_role_policy(
                iam.PolicyStatement(actions=["sqs:SendMessage"], resources=[failure_dlq.queue_arn])
            )
            self.state_machine.add_to_role_policy(
                iam.PolicyStatement(actions=["sns:Publish"], resources=[alerts_topic.topic_arn])
            )
            # ClaimFailure's conditional update: the first execution of a message to fail records it, once.
            deliveries_table.grant(self.state_machine, "dynamodb:UpdateItem")
        acknowledge(
            self.state_machine, "AwsSolutions-IAM5[Resource::*]",
            "Only the CloudWatch Logs vended-delivery actions (logs:CreateLogDelivery and friends) and X-Ray "
            "trace writes, which AWS requires on Resource '*'.",
        )
        # SendMessage and Publish to SSE-KMS resources, and the encrypted deliveries table, use the shared key.
        key.grant(self.state_machine, "kms:GenerateDataKey", "kms:Decrypt")
