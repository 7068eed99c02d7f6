"""Every call an AWS principal makes in this architecture, derived from the synthesized template and its ASL.

Each `Check` is one request judged on every policy AWS evaluates for it: the caller's identity policies, the
queue / topic / key / trust policy of the resource. Edges come from the template itself (roles of each resource,
rule targets and DLQs, alarm actions, subscription DLQs, Task states of the state machine, tables named in each
function's environment, the pipe's source and target, the operator policy), so a new resource is either in the
matrix or makes `uncovered()` non-empty.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from tests.permissions.asl_calls import definition_text, task_call, tasks
from tests.permissions.callback_edges import CallbackEdges
from tests.permissions.checks import (
    CHAT_CHANNELS,
    OPERATOR,
    PROGRESS_TABLE_CALLS,
    ROLE_USERS,
    SNS_PUBLISH_KEY,
    SQS_SEND_KEY,
    TABLE_CALLS,
    Check,
    other_account,
)
from tests.permissions.healing_edges import HealingEdges, uncovered_healing
from tests.permissions.resolver import ACCOUNT, OTHER_ACCOUNT, STACK_NAME, arn
from tests.permissions.webhook_edges import WebhookEdges, stream_source, uncovered_webhooks


class MatrixBuilder(HealingEdges, CallbackEdges, WebhookEdges):
    """The architecture's edges, each made of the shapes in tests/permissions/shapes.py; `build()` adds them all."""

    def trust(self) -> None:
        for user_type, (prop, service) in ROLE_USERS.items():
            for user, res in self.a.of_type(user_type).items():
                role = self.a.lid(res["Properties"][prop])
                self.a.covered.add(("role", role))
                source = self.a.att(user, "Arn")
                trust = self.a.resolver.resolve(self.a.props(role)["AssumeRolePolicyDocument"])
                context = {"aws:SourceArn": source, "aws:SourceAccount": ACCOUNT}
                edge = f"{service} assumes {role}"
                base = Check(
                    edge, service, "sts:AssumeRole", self.a.att(role), True, f"{user} runs with it", context, (), trust
                )
                self._add(base)
                self._add(replace(base, principal="ec2.amazonaws.com", allowed=False, why="another service"))
                if "Condition" in json.dumps(trust):
                    self._add(
                        replace(
                            base,
                            allowed=False,
                            why="for another account's resource",
                            context={"aws:SourceArn": other_account(source), "aws:SourceAccount": OTHER_ACCOUNT},
                        )
                    )

    def pipe(self) -> None:
        for pipe_lid, res in self.a.of_type("AWS::Pipes::Pipe").items():
            props = res["Properties"]
            if stream_source(props):  # the completion webhook's: WebhookEdges
                continue
            role, source, target = (
                self.a.lid(props["RoleArn"]),
                self.a.lid(props["Source"]),
                self.a.lid(props["Target"]),
            )
            self.a.covered.update({("pipe-source", source), ("pipe-target", target)})
            edge = f"pipe {pipe_lid} reads {source}"
            for action in ("sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes"):
                self.role_call(
                    edge,
                    role,
                    action,
                    source,
                    self.a.att(source),
                    key_actions=("kms:Decrypt",) if action == "sqs:ReceiveMessage" else (),
                    via="sqs",
                )
            edge = f"pipe {pipe_lid} starts {target}"
            # FIRE_AND_FORGET calls StartExecution, REQUEST_RESPONSE StartSyncExecution: the other one is denied.
            mode = props["TargetParameters"]["StepFunctionStateMachineParameters"]["InvocationType"]
            start, other = ("states:StartSyncExecution", "states:StartExecution") if mode == "REQUEST_RESPONSE" \
                else ("states:StartExecution", "states:StartSyncExecution")
            self.role_call(edge, role, start, target, self.a.att(target, "Ref"))
            self.denied(edge, role, other, self.a.att(target, "Ref"), "the other invocation type's call")
            self.denied(
                edge,
                role,
                start,
                arn("states", "stateMachine:AnotherStateMachine"),
                "another state machine",
            )
            for queue in self.a.of_type("AWS::SQS::Queue"):
                if queue != source:
                    self.denied(
                        f"pipe {pipe_lid} reads {source}",
                        role,
                        "sqs:ReceiveMessage",
                        self.a.att(queue),
                        "a queue that is not its source",
                        queue,
                    )
            log_group = props.get("LogConfiguration", {}).get("CloudwatchLogsLogDestination", {}).get("LogGroupArn")
            if log_group is not None:
                self._logs(f"pipe {pipe_lid} logs", role, self.a.lid(log_group))

    def state_machine(self) -> None:
        for machine, res in self.a.of_type("AWS::StepFunctions::StateMachine").items():
            props = res["Properties"]
            role = self.a.lid(props["RoleArn"])
            definition = json.loads(definition_text(self.a, props))
            used: dict[str, set[str]] = {}
            for state, task in tasks(definition["States"]):
                action, target = task_call(self.a, task, state)
                used.setdefault(action, set()).add(target)
                self.a.covered.add(("task", f"{machine}.{state}"))
                edge = f"state machine {machine} Task {state}"
                kind = self.a.resources[target]["Type"]
                resource = self.a.att(target, "Ref" if kind == "AWS::SNS::Topic" else "Arn")
                keys: tuple[str, ...] = ()
                via = ""
                if kind == "AWS::SQS::Queue":
                    keys, via = SQS_SEND_KEY, "sqs"
                elif kind == "AWS::SNS::Topic":
                    keys, via = SNS_PUBLISH_KEY, "sns"
                elif kind == "AWS::DynamoDB::Table":
                    keys, via = ("kms:Decrypt",), "dynamodb"
                self.role_call(edge, role, action, target, resource, key_actions=keys, via=via)
            edge = f"state machine {machine} outside its Tasks"
            self.denied(
                edge,
                role,
                "lambda:InvokeFunction",
                arn("lambda", "function:NotInTheSaga"),
                "a function outside the saga",
            )
            by_action_type = {
                "sqs:SendMessage": "AWS::SQS::Queue",
                "sns:Publish": "AWS::SNS::Topic",
                "dynamodb:PutItem": "AWS::DynamoDB::Table",
                "lambda:InvokeFunction": "AWS::Lambda::Function",
            }
            for action, kind in by_action_type.items():
                for other in self.a.of_type(kind):
                    if other not in used.get(action, set()):
                        resource = self.a.att(other, "Ref" if kind == "AWS::SNS::Topic" else "Arn")
                        self.denied(edge, role, action, resource, "no Task of the ASL uses it", other)

    def _calls_on(self, function: str, variables: dict[str, Any], deliveries: bool,
                  calls: tuple[tuple[str, ...], tuple[str, ...]]) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The table calls a function makes on one of its tables: on the deliveries table, a step that reports the
        message's progress (it has the table, and is neither the claiming task nor a healing function) only updates
        the message's row (fire_and_forget.runtime.status.AttemptProgress)."""
        reports = deliveries and "DELIVERY_CLAIM_TTL_SECONDS" not in variables
        if reports and self.table_calls(function) == (TABLE_CALLS, ()):
            return PROGRESS_TABLE_CALLS, tuple(c for c in TABLE_CALLS if c not in PROGRESS_TABLE_CALLS)
        return calls

    def functions(self) -> None:
        tables = self.a.of_type("AWS::DynamoDB::Table")
        for function, res in self.a.of_type("AWS::Lambda::Function").items():
            props = res["Properties"]
            role = self.a.lid(props["Role"])
            variables = props.get("Environment", {}).get("Variables", {})
            used = {self.a.lid(v) for k, v in variables.items() if k.endswith("_TABLE_NAME")}
            callback_calls = self.callback_table_calls(function)
            allowed_calls, denied_calls = self.table_calls(function) if callback_calls is None else \
                (callback_calls, tuple(c for c in TABLE_CALLS if c not in callback_calls))
            named = variables.get("DELIVERIES_TABLE_NAME")
            deliveries = self.a.lid(named) if named is not None else None
            for table in sorted(used):
                self.a.covered.add(("function-table", f"{function}.{table}"))
                edge = f"function {function} uses {table}"
                allowed, denied = self._calls_on(function, variables, table == deliveries,
                                                 (allowed_calls, denied_calls))
                for action in denied:
                    self.denied(edge, role, action, self.a.att(table), "a table call it never makes", table)
                for action in allowed:
                    self.role_call(
                        edge,
                        role,
                        action,
                        table,
                        self.a.att(table),
                        key_actions=("kms:Decrypt", "kms:GenerateDataKey") if action == "dynamodb:PutItem" else (),
                        via="dynamodb",
                    )
            for table in sorted(set(tables) - used):
                self.denied(
                    f"function {function} outside its tables",
                    role,
                    "dynamodb:PutItem",
                    self.a.att(table),
                    f"{table} is not in its environment",
                )
            log_group = props.get("LoggingConfig", {}).get("LogGroup")
            if log_group is not None:
                self._logs(f"function {function} logs", role, self.a.lid(log_group))

    def rules(self) -> None:
        for rule, res in self.a.of_type("AWS::Events::Rule").items():
            rule_arn = self.a.att(rule)
            for target in res["Properties"].get("Targets", []):
                destinations = [("target", target["Arn"])]
                if "DeadLetterConfig" in target:
                    destinations.append(("target DLQ", target["DeadLetterConfig"]["Arn"]))
                for role_name, value in destinations:
                    lid = self.a.lid(value)
                    self.a.covered.add(("rule-target", f"{rule}.{lid}"))
                    kind = self.a.resources[lid]["Type"]
                    if role_name == "target" and "RoleArn" in target:
                        self._role_target(rule, target, lid, kind)
                        continue
                    action, via = {
                        "AWS::SNS::Topic": ("sns:Publish", "sns"),
                        "AWS::SQS::Queue": ("sqs:SendMessage", "sqs"),
                    }[kind]
                    self.service_call(
                        f"rule {rule} {role_name} {lid}",
                        "events.amazonaws.com",
                        action,
                        lid,
                        rule_arn,
                        key_actions=("kms:GenerateDataKey", "kms:Decrypt"),
                        via=via,
                        other_source=arn("events", "rule/AnotherRule"),
                    )

    def _role_target(self, rule: str, target: dict[str, Any], lid: str, kind: str) -> None:
        """A target EventBridge reaches through a role (a state machine): the trust, then the role's call."""
        role = self.a.lid(target["RoleArn"])
        self.a.covered.add(("role", role))
        edge = f"rule {rule} target {lid} through {role}"
        trust = self.a.resolver.resolve(self.a.props(role)["AssumeRolePolicyDocument"])
        context = {"aws:SourceArn": self.a.att(rule), "aws:SourceAccount": ACCOUNT}
        base = Check(
            edge,
            "events.amazonaws.com",
            "sts:AssumeRole",
            self.a.att(role),
            True,
            "the rule's target role",
            context,
            (),
            trust,
        )
        self._add(base)
        self._add(replace(base, principal="ec2.amazonaws.com", allowed=False, why="another service"))
        action = {"AWS::StepFunctions::StateMachine": "states:StartExecution"}[kind]
        self.role_call(edge, role, action, lid, self.a.att(lid, "Arn"))
        for other in self.a.of_type(kind):
            if other != lid:
                self.denied(edge, role, action, self.a.att(other, "Arn"), "another state machine")

    def alarms(self) -> None:
        for kind in ("AWS::CloudWatch::Alarm", "AWS::CloudWatch::CompositeAlarm"):
            for alarm, res in self.a.of_type(kind).items():
                props = res["Properties"]
                for prop in ("AlarmActions", "OKActions", "InsufficientDataActions"):
                    for action in props.get(prop, []):
                        topic = self.a.lid(action)
                        self.a.covered.add(("alarm-action", f"{alarm}.{prop}.{topic}"))
                        self.service_call(
                            f"alarm {alarm} {prop} {topic}",
                            "cloudwatch.amazonaws.com",
                            "sns:Publish",
                            topic,
                            self.a.att(alarm),
                            key_actions=("kms:GenerateDataKey", "kms:Decrypt"),
                            via="sns",
                            other_source=self.a.att(alarm),
                        )

    def subscriptions(self) -> None:
        for subscription, res in self.a.of_type("AWS::SNS::Subscription").items():
            redrive = res["Properties"].get("RedrivePolicy")
            if not redrive:
                continue
            queue, topic = self.a.lid(redrive["deadLetterTargetArn"]), self.a.lid(res["Properties"]["TopicArn"])
            self.a.covered.add(("subscription-dlq", f"{subscription}.{queue}"))
            self.service_call(
                f"subscription {subscription} DLQ {queue}",
                "sns.amazonaws.com",
                "sqs:SendMessage",
                queue,
                self.a.att(topic, "Ref"),
                key_actions=("kms:GenerateDataKey", "kms:Decrypt"),
                via="sqs",
                other_source=arn("sns", "AnotherTopic"),
            )

    def chatbot(self) -> None:
        channels = {lid: res for kind in CHAT_CHANNELS for lid, res in self.a.of_type(kind).items()}
        for channel, res in channels.items():
            role = self.a.lid(res["Properties"]["IamRoleArn"])
            edge = f"chatbot channel {channel} role"
            for topic in self.a.of_type("AWS::SNS::Topic"):
                self.denied(edge, role, "sns:Publish", self.a.att(topic, "Ref"), "notifications only", topic)
            for queue in self.a.of_type("AWS::SQS::Queue"):
                self.denied(edge, role, "sqs:ReceiveMessage", self.a.att(queue), "notifications only", queue)
            for machine in self.a.of_type("AWS::StepFunctions::StateMachine"):
                self.denied(edge, role, "states:StartExecution", self.a.att(machine), "notifications only")

    def build(self) -> MatrixBuilder:
        self.trust()
        self.pipe()
        self.state_machine()
        self.functions()
        self.rules()
        self.alarms()
        self.subscriptions()
        self.chatbot()
        self.healing()
        self.callbacks()
        self.webhooks()
        return self


def uncovered(builder: MatrixBuilder) -> list[str]:
    """Everything in the template that makes or receives a call and that no edge of the matrix judged."""
    a = builder.a
    missing = [f"role {lid}" for lid in a.of_type("AWS::IAM::Role") if ("role", lid) not in a.covered]
    for rule, res in a.of_type("AWS::Events::Rule").items():
        for target in res["Properties"].get("Targets", []):
            values = [target["Arn"]] + ([target["DeadLetterConfig"]["Arn"]] if "DeadLetterConfig" in target else [])
            missing += [
                f"rule target {rule}.{a.lid(v)}"
                for v in values
                if ("rule-target", f"{rule}.{a.lid(v)}") not in a.covered
            ]
    for kind in ("AWS::CloudWatch::Alarm", "AWS::CloudWatch::CompositeAlarm"):
        for alarm, res in a.of_type(kind).items():
            for prop in ("AlarmActions", "OKActions", "InsufficientDataActions"):
                missing += [
                    f"alarm action {alarm}.{prop}"
                    for v in res["Properties"].get(prop, [])
                    if ("alarm-action", f"{alarm}.{prop}.{a.lid(v)}") not in a.covered
                ]
    for sub, res in a.of_type("AWS::SNS::Subscription").items():
        redrive = res["Properties"].get("RedrivePolicy")
        if redrive and ("subscription-dlq", f"{sub}.{a.lid(redrive['deadLetterTargetArn'])}") not in a.covered:
            missing.append(f"subscription DLQ {sub}")
    missing += [f"function URL {lid}" for lid in a.of_type("AWS::Lambda::Url")
                if ("function-url", lid) not in a.covered]
    for policy in a.of_type("AWS::IAM::ManagedPolicy"):
        if ("managed-policy", policy) not in a.covered:
            missing.append(f"managed policy {policy}")
    return missing + uncovered_healing(builder) + uncovered_webhooks(builder)


__all__ = ["ACCOUNT", "OPERATOR", "STACK_NAME", "Check", "MatrixBuilder", "uncovered"]
