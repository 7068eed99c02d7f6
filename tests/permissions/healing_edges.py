"""The self-healing edges of the matrix: schedules, the Reconciler's event source mapping, the functions' on-failure
destinations, and the Reconciler's and the Redriver's own calls, each derived from the template."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

from tests.permissions.checks import SNS_PUBLISH_KEY, SQS_SEND_KEY, TABLE_CALLS, Check
from tests.permissions.resolver import ACCOUNT, OTHER_ACCOUNT, arn
from tests.permissions.shapes import CheckShapes
from tests.permissions.webhook_edges import (
    NOTICES,
    NOTICES_TABLE_CALLS,
    TICKETS,
    TICKETS_TABLE_CALLS,
    stream_mapping,
)

SCHEDULER = "scheduler.amazonaws.com"
RECONCILER = "PipelineHealingReconcilerFunction"
REDRIVER = "PipelineHealingRedriverFunction"
# The Reconciler claims the message's row with a conditional update and reads it back: nothing else on the table.
RECONCILER_TABLE_CALLS = ("dynamodb:GetItem", "dynamodb:UpdateItem")
# The Redriver takes the marker row of an announcement with a conditional update, and moves it on (announcements.py).
REDRIVER_TABLE_CALLS = ("dynamodb:UpdateItem",)
# What Lambda's poller calls with the function's role (https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html).
MAPPING_CALLS = ("sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes")
_GET_ATT_ARN = re.compile(r'\{"Fn::GetAtt": \["(\w+)", "Arn"\]\}')


class HealingEdges(CheckShapes):
    """Mixed into MatrixBuilder: `healing()` adds every edge below."""

    def table_calls(self, function: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(allowed, denied) table calls of a function on a table its environment names."""
        for prefix, calls in ((RECONCILER, RECONCILER_TABLE_CALLS), (REDRIVER, REDRIVER_TABLE_CALLS),
                              (NOTICES, NOTICES_TABLE_CALLS), (TICKETS, TICKETS_TABLE_CALLS)):
            if function.startswith(prefix):
                return calls, tuple(c for c in TABLE_CALLS if c not in calls)
        return TABLE_CALLS, ()

    def healing(self) -> None:
        self.schedules()
        self.event_sources()
        self.invoke_configs()
        for function in self.a.of_type("AWS::Lambda::Function"):
            if function.startswith(RECONCILER):
                self.reconciler(function)
            elif function.startswith(REDRIVER):
                self.redriver(function)

    def _env(self, function: str) -> dict[str, Any]:
        variables: dict[str, Any] = self.a.props(function).get("Environment", {}).get("Variables", {})
        return variables

    def _role(self, function: str) -> str:
        return self.a.lid(self.a.props(function)["Role"])

    def _deny_other_queues(self, edge: str, role: str, action: str, allowed: set[str], why: str) -> None:
        for queue in self.a.of_type("AWS::SQS::Queue"):
            if queue not in allowed:
                self.denied(edge, role, action, self.a.att(queue), why, queue)

    def schedules(self) -> None:
        functions = self.a.of_type("AWS::Lambda::Function")
        for schedule, res in self.a.of_type("AWS::Scheduler::Schedule").items():
            target = res["Properties"]["Target"]
            role, function = self.a.lid(target["RoleArn"]), self.a.lid(target["Arn"])
            dlq = self.a.lid(target["DeadLetterConfig"]["Arn"])
            self.a.covered.update({("role", role), ("schedule", schedule)})
            edge = f"schedule {schedule} assumes {role}"
            trust = self.a.resolver.resolve(self.a.props(role)["AssumeRolePolicyDocument"])
            source = arn("scheduler", f"schedule/default/{schedule}")
            base = Check(edge, SCHEDULER, "sts:AssumeRole", self.a.att(role), True, f"{schedule} runs with it",
                         {"aws:SourceArn": source, "aws:SourceAccount": ACCOUNT}, (), trust)
            self._add(base)
            self._add(replace(base, principal="ec2.amazonaws.com", allowed=False, why="another service"))
            self._add(replace(base, allowed=False, why="for another account's resource",
                              context={"aws:SourceArn": source.replace(ACCOUNT, OTHER_ACCOUNT),
                                       "aws:SourceAccount": OTHER_ACCOUNT}))
            edge = f"schedule {schedule} invokes {function}"
            self.role_call(edge, role, "lambda:InvokeFunction", None, self.a.att(function))
            # The schedule invokes the unqualified function: a version or an alias is another resource.
            for qualifier, why in (("1", "another version of its function"), ("live", "an alias of its function")):
                self.denied(edge, role, "lambda:InvokeFunction", f"{self.a.att(function)}:{qualifier}", why)
            for other in functions:
                if other != function:
                    self.denied(edge, role, "lambda:InvokeFunction", self.a.att(other), "a function it does not run")
            # Scheduler sends the dead-letter event with the schedule's role; the DLQ is SSE-KMS
            # (https://docs.aws.amazon.com/scheduler/latest/UserGuide/configuring-schedule-dlq.html).
            edge = f"schedule {schedule} dead-letters to {dlq}"
            self.role_call(edge, role, "sqs:SendMessage", dlq, self.a.att(dlq), key_actions=SQS_SEND_KEY, via="sqs")
            self._deny_other_queues(edge, role, "sqs:SendMessage", {dlq}, "a queue that is not its DLQ")

    def event_sources(self) -> None:
        for mapping, res in self.a.of_type("AWS::Lambda::EventSourceMapping").items():
            props = res["Properties"]
            if stream_mapping(props):  # the tickets': WebhookEdges
                continue
            function, queue = self.a.lid(props["FunctionName"]), self.a.lid(props["EventSourceArn"])
            role = self._role(function)
            self.a.covered.add(("event-source", mapping))
            edge = f"mapping {mapping} reads {queue} for {function}"
            for action in MAPPING_CALLS:
                keys = ("kms:Decrypt",) if action == "sqs:ReceiveMessage" else ()
                self.role_call(edge, role, action, queue, self.a.att(queue), key_actions=keys, via="sqs")
            self._deny_other_queues(edge, role, "sqs:ReceiveMessage", {queue}, "a queue that is not its source")

    def invoke_configs(self) -> None:
        for config, res in self.a.of_type("AWS::Lambda::EventInvokeConfig").items():
            props = res["Properties"]
            function = self.a.lid(props["FunctionName"])
            destination = self.a.lid(props["DestinationConfig"]["OnFailure"]["Destination"])
            self.a.covered.add(("invoke-config", config))
            # Lambda sends the on-failure record with the function's execution role.
            edge = f"function {function} on-failure destination {destination}"
            self.role_call(edge, self._role(function), "sqs:SendMessage", destination, self.a.att(destination),
                           key_actions=SQS_SEND_KEY, via="sqs")

    def reconciler(self, function: str) -> None:
        role, env = self._role(function), self._env(function)
        machine = self.a.lid(env["STATE_MACHINE_ARN"])
        machine_arn = self.a.att(machine, "Ref")
        execution = machine_arn.replace(":stateMachine:", ":execution:") + ":exec-1"
        edge = f"reconciler {function} reads executions of {machine}"
        for action in ("states:DescribeExecution", "states:GetExecutionHistory"):
            self.role_call(edge, role, action, None, execution)
            self.denied(edge, role, action, arn("states", "execution:AnotherStateMachine:exec-1"),
                        "another state machine")
        self.role_call(edge, role, "states:ListExecutions", None, machine_arn)
        self.denied(edge, role, "states:StopExecution", execution, "the reconciler never stops an execution")
        failure_dlq, topic = self.a.lid(env["FAILURE_DLQ_URL"]), self.a.lid(env["ALERTS_TOPIC_ARN"])
        edge = f"reconciler {function} records and announces"
        self.role_call(edge, role, "sqs:SendMessage", failure_dlq, self.a.att(failure_dlq),
                       key_actions=SQS_SEND_KEY, via="sqs")
        self.role_call(edge, role, "sns:Publish", topic, self.a.att(topic, "Ref"), key_actions=SNS_PUBLISH_KEY,
                       via="sns")
        destinations = {failure_dlq} | {self.a.lid(c["Properties"]["DestinationConfig"]["OnFailure"]["Destination"])
                                        for c in self.a.of_type("AWS::Lambda::EventInvokeConfig").values()}
        self._deny_other_queues(edge, role, "sqs:SendMessage", destinations, "a queue it does not record to")
        compensations = set(_GET_ATT_ARN.findall(json.dumps(env.get("COMPENSATIONS", ""))))
        edge = f"reconciler {function} compensates"
        for other in self.a.of_type("AWS::Lambda::Function"):
            if other in compensations:
                self.role_call(edge, role, "lambda:InvokeFunction", None, self.a.att(other))
            else:
                self.denied(edge, role, "lambda:InvokeFunction", self.a.att(other), "not a compensation")

    def redriver(self, function: str) -> None:
        role, env = self._role(function), self._env(function)
        failure_dlq, source = self.a.lid(env["FAILURE_DLQ_URL"]), self.a.lid(env["SOURCE_QUEUE_URL"])
        edge = f"redriver {function} moves {failure_dlq} to {source}"
        for action in ("sqs:ReceiveMessage", "sqs:DeleteMessage"):
            keys = ("kms:Decrypt",) if action == "sqs:ReceiveMessage" else ()
            self.role_call(edge, role, action, failure_dlq, self.a.att(failure_dlq), key_actions=keys, via="sqs")
        self.role_call(edge, role, "sqs:SendMessage", source, self.a.att(source), key_actions=SQS_SEND_KEY,
                       via="sqs")
        destinations = {source} | {self.a.lid(c["Properties"]["DestinationConfig"]["OnFailure"]["Destination"])
                                   for c in self.a.of_type("AWS::Lambda::EventInvokeConfig").values()}
        self._deny_other_queues(edge, role, "sqs:SendMessage", destinations, "a queue it does not redrive to")
        read = {failure_dlq}
        # What the pipe could not hand over, back from the source DLQ (fire_and_forget/healing/source_return.py):
        # read, deleted once sent, the rest made visible again.
        if float(env.get("HEALING_SOURCE_RETURN_PER_SECOND", "0")) > 0 and int(env["HEALING_MAX_ATTEMPTS"]) > 0:
            source_dlq = self.a.lid(env["SOURCE_DLQ_URL"])
            read.add(source_dlq)
            returns = f"redriver {function} returns {source_dlq} to {source}"
            for action in ("sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility"):
                keys = ("kms:Decrypt",) if action == "sqs:ReceiveMessage" else ()
                self.role_call(returns, role, action, source_dlq, self.a.att(source_dlq), key_actions=keys,
                               via="sqs")
        self._deny_other_queues(edge, role, "sqs:ReceiveMessage", read, "a queue it does not redrive")
        self.denied(edge, role, "states:StartExecution", arn("states", "stateMachine:Any"),
                    "the redriver only sends messages")
        # What it cannot resend, it announces once (src/fire_and_forget/healing/announcements.py): the alerts topic
        # only.
        topic = self.a.lid(env["ALERTS_TOPIC_ARN"])
        edge = f"redriver {function} announces what it cannot resend"
        self.role_call(edge, role, "sns:Publish", topic, self.a.att(topic, "Ref"), key_actions=SNS_PUBLISH_KEY,
                       via="sns")
        for other in self.a.of_type("AWS::SNS::Topic"):
            if other != topic:
                self.denied(edge, role, "sns:Publish", self.a.att(other, "Ref"), "a topic it does not announce on",
                            other)


def uncovered_healing(builder: HealingEdges) -> list[str]:
    """The healing resources that make or receive a call and that no edge judged."""
    a = builder.a
    kinds = {"AWS::Scheduler::Schedule": "schedule", "AWS::Lambda::EventSourceMapping": "event-source",
             "AWS::Lambda::EventInvokeConfig": "invoke-config"}
    return [f"{kind} {lid}" for resource_type, kind in kinds.items() for lid in a.of_type(resource_type)
            if (kind, lid) not in a.covered]
