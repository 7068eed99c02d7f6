"""Every call an AWS principal makes in this architecture, derived from the synthesized template and its ASL.

Each `Check` is one request judged on every policy AWS evaluates for it: the caller's identity policies, the
queue / topic / key / trust policy of the resource. Edges come from the template itself (roles of each resource,
rule targets and DLQs, alarm actions, subscription DLQs, Task states of the state machine, tables named in each
function's environment, the pipe's source and target, the operator policy), so a new resource is either in the
matrix or makes `uncovered()` non-empty.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from typing import Any

from tests.permissions.resolver import ACCOUNT, OTHER_ACCOUNT, PARTITION, REGION, STACK_NAME, Resolver, arn

TLS = {"aws:SecureTransport": "true"}
NO_TLS = {"aws:SecureTransport": "false"}
OPERATOR = f"arn:{PARTITION}:iam::{ACCOUNT}:role/Operator"
SQS_SEND_KEY = ("kms:GenerateDataKey", "kms:Decrypt")  # SQS SSE: a sender needs both, a receiver kms:Decrypt
SNS_PUBLISH_KEY = ("kms:GenerateDataKey", "kms:Decrypt")
TABLE_CALLS = ("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem")
SOURCE_ACCOUNT_SCOPED = ("ExecutionEventsFailureEventsQueue",)
ROLE_USERS = {  # resource type -> (property holding its role, service that assumes it)
    "AWS::Lambda::Function": ("Role", "lambda.amazonaws.com"),
    "AWS::StepFunctions::StateMachine": ("RoleArn", "states.amazonaws.com"),
    "AWS::Pipes::Pipe": ("RoleArn", "pipes.amazonaws.com"),
    "AWS::Chatbot::SlackChannelConfiguration": ("IamRoleArn", "chatbot.amazonaws.com"),
}


@dataclass(frozen=True)
class Check:
    edge: str
    principal: str
    action: str
    resource: str
    allowed: bool
    why: str
    context: dict[str, str] = field(default_factory=dict)
    identity: tuple[dict[str, Any], ...] = ()
    resource_policy: dict[str, Any] | None = None

    @property
    def id(self) -> str:
        verdict = "allow" if self.allowed else "deny"
        return f"{self.edge} | {self.action} {self.resource} | {verdict}: {self.why}"

    def request(self) -> dict[str, Any]:
        account = (
            self.resource.split(":")[4] if self.resource.startswith("arn:") and self.resource.split(":")[4] else ACCOUNT
        )
        return {
            "id": self.id,
            "principal": self.principal,
            "action": self.action,
            "resource": self.resource,
            "account": account,
            "context": self.context,
            "identityPolicies": list(self.identity),
            "resourcePolicy": self.resource_policy,
        }


def _doc(statements: list[dict[str, Any]]) -> dict[str, Any] | None:
    return {"Version": "2012-10-17", "Statement": statements} if statements else None


def _other_account(value: str) -> str:
    parts = value.split(":")
    parts[4] = OTHER_ACCOUNT
    return ":".join(parts)


class Architecture:
    """The template's resources, resolved, with lookups by ARN, URL and name."""

    def __init__(self, template: dict[str, Any]) -> None:
        self.template = template
        self.resolver = Resolver(template)
        self.resources: dict[str, dict[str, Any]] = template["Resources"]
        self.by_value: dict[str, str] = {}
        for lid in self.resources:
            for name in ("Ref", "Arn", "TopicArn"):
                try:
                    self.by_value[self.resolver.attribute(lid, name)] = lid
                except KeyError:
                    continue
        self.covered: set[tuple[str, str]] = set()  # (kind, logical id) every edge touched

    def of_type(self, resource_type: str) -> dict[str, dict[str, Any]]:
        return {lid: r for lid, r in self.resources.items() if r["Type"] == resource_type}

    def lid(self, value: Any) -> str:
        resolved = self.resolver.resolve(value)
        return self.by_value[resolved]

    def att(self, lid: str, name: str = "Arn") -> str:
        return self.resolver.attribute(lid, name)

    def props(self, lid: str) -> dict[str, Any]:
        props: dict[str, Any] = self.resources[lid].get("Properties", {})
        return props

    def attached_policy(self, kind: str, key: str, lid: str) -> dict[str, Any] | None:
        statements: list[dict[str, Any]] = []
        for policy in self.of_type(kind).values():
            if {"Ref": lid} in policy["Properties"][key]:
                statements.extend(self.resolver.resolve(policy["Properties"]["PolicyDocument"])["Statement"])
        return _doc(statements)

    def identity(self, role_lid: str) -> tuple[dict[str, Any], ...]:
        docs = [
            self.resolver.resolve(p["Properties"]["PolicyDocument"])
            for p in self.of_type("AWS::IAM::Policy").values()
            if {"Ref": role_lid} in p["Properties"].get("Roles", [])
        ]
        for inline in self.props(role_lid).get("Policies", []):
            docs.append(self.resolver.resolve(inline["PolicyDocument"]))
        for managed in self.props(role_lid).get("ManagedPolicyArns", []):
            docs.append(self.resolver.resolve(self.props(self.lid(managed))["PolicyDocument"]))
        return tuple(docs)

    def resource_policy(self, lid: str) -> dict[str, Any] | None:
        kind = self.resources[lid]["Type"]
        if kind == "AWS::SQS::Queue":
            return self.attached_policy("AWS::SQS::QueuePolicy", "Queues", lid)
        if kind == "AWS::SNS::Topic":
            return self.attached_policy("AWS::SNS::TopicPolicy", "Topics", lid)
        if kind == "AWS::KMS::Key":
            return dict(self.resolver.resolve(self.props(lid)["KeyPolicy"]))
        return None

    def key_of(self, lid: str) -> str | None:
        props = self.props(lid)
        key = props.get("KmsMasterKeyId") or props.get("SSESpecification", {}).get("KMSMasterKeyId")
        return self.lid(key) if key is not None else None


def _via(service: str) -> dict[str, str]:
    return {"kms:ViaService": f"{service}.{REGION}.amazonaws.com"}


class MatrixBuilder:
    def __init__(self, template: dict[str, Any]) -> None:
        self.a = Architecture(template)
        self.checks: list[Check] = []
        self.edges: set[str] = set()

    # -- generic shapes -------------------------------------------------------------------------------------
    def _add(self, check: Check) -> None:
        self.edges.add(check.edge)
        self.checks.append(check)

    def role_call(
        self,
        edge: str,
        role_lid: str,
        action: str,
        target_lid: str | None,
        resource: str,
        *,
        key_actions: tuple[str, ...] = (),
        via: str = "",
        negatives: bool = True,
    ) -> None:
        """A role's call, allowed, plus the same call on another account's copy and, where the resource policy
        forbids it, without TLS; and the KMS calls the encrypted resource needs."""
        principal = self.a.att(role_lid)
        identity = self.a.identity(role_lid)
        policy = self.a.resource_policy(target_lid) if target_lid else None
        base = Check(edge, principal, action, resource, True, "the architecture needs it", dict(TLS), identity, policy)
        self._add(base)
        if negatives:
            self._add(
                replace(
                    base,
                    resource=_other_account(resource),
                    allowed=False,
                    why="another account's copy",
                    resource_policy=None,
                )
            )
            if policy and "SecureTransport" in json.dumps(policy):
                self._add(replace(base, allowed=False, why="without TLS", context=dict(NO_TLS)))
        key = self.a.key_of(target_lid) if target_lid else None
        for key_action in key_actions if key else ():
            assert key is not None
            self._add(
                Check(
                    edge,
                    principal,
                    key_action,
                    self.a.att(key),
                    True,
                    "the resource is encrypted",
                    dict(TLS) | _via(via),
                    identity,
                    self.a.resource_policy(key),
                )
            )

    def service_call(
        self,
        edge: str,
        service: str,
        action: str,
        target_lid: str,
        source_arn: str,
        *,
        key_actions: tuple[str, ...],
        via: str,
        other_source: str,
    ) -> None:
        """A service's call on behalf of `source_arn`, allowed; from another account, from `other_source`, and
        without TLS denied; and the key policy lets it use the key for this account."""
        resource = self.a.att(target_lid, "Ref" if self.a.resources[target_lid]["Type"] == "AWS::SNS::Topic" else "Arn")
        policy = self.a.resource_policy(target_lid)
        context = dict(TLS) | {"aws:SourceArn": source_arn, "aws:SourceAccount": ACCOUNT}
        base = Check(edge, service, action, resource, True, "the architecture needs it", context, (), policy)
        self._add(base)
        self._add(
            replace(
                base,
                allowed=False,
                why="on behalf of another account",
                context=dict(TLS) | {"aws:SourceArn": _other_account(source_arn), "aws:SourceAccount": OTHER_ACCOUNT},
            )
        )
        if other_source != source_arn:
            # CDK's SqsQueue rule target scopes its queue statement to aws:SourceAccount only (with the flag
            # @aws-cdk/aws-events:eventsTargetQueueSameAccount): another rule of this account may send there too.
            same_account_only = any(target_lid.startswith(prefix) for prefix in SOURCE_ACCOUNT_SCOPED)
            self._add(
                replace(
                    base,
                    allowed=same_account_only,
                    why="on behalf of another resource of this account"
                    + (" (accepted: scoped to the account only)" if same_account_only else ""),
                    context=context | {"aws:SourceArn": other_source},
                )
            )
        if policy and "SecureTransport" in json.dumps(policy):
            self._add(replace(base, allowed=False, why="without TLS", context=context | NO_TLS))
        key = self.a.key_of(target_lid)
        if key:
            key_arn, key_policy = self.a.att(key), self.a.resource_policy(key)
            for key_action in key_actions:
                self._add(
                    Check(
                        edge,
                        service,
                        key_action,
                        key_arn,
                        True,
                        "the resource is encrypted",
                        context | _via(via),
                        (),
                        key_policy,
                    )
                )
            self._add(
                Check(
                    edge,
                    service,
                    key_actions[0],
                    key_arn,
                    False,
                    "key use for another account",
                    dict(TLS)
                    | {"aws:SourceAccount": OTHER_ACCOUNT, "aws:SourceArn": _other_account(source_arn)}
                    | _via(via),
                    (),
                    key_policy,
                )
            )

    def denied(
        self, edge: str, role_lid: str, action: str, resource: str, why: str, target_lid: str | None = None
    ) -> None:
        policy = self.a.resource_policy(target_lid) if target_lid else None
        self._add(
            Check(
                edge, self.a.att(role_lid), action, resource, False, why, dict(TLS), self.a.identity(role_lid), policy
            )
        )

    # -- the architecture -----------------------------------------------------------------------------------
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
                            context={"aws:SourceArn": _other_account(source), "aws:SourceAccount": OTHER_ACCOUNT},
                        )
                    )

    def pipe(self) -> None:
        for pipe_lid, res in self.a.of_type("AWS::Pipes::Pipe").items():
            props = res["Properties"]
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
            self.role_call(edge, role, "states:StartExecution", target, self.a.att(target, "Ref"))
            self.denied(
                edge,
                role,
                "states:StartExecution",
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

    def _logs(self, edge: str, role: str, log_group: str) -> None:
        stream = self.a.att(log_group).removesuffix(":*") + ":log-stream:s"
        self.role_call(edge, role, "logs:PutLogEvents", None, stream, negatives=False)
        self.a.covered.add(("log-group", log_group))

    def state_machine(self) -> None:
        for machine, res in self.a.of_type("AWS::StepFunctions::StateMachine").items():
            props = res["Properties"]
            role = self.a.lid(props["RoleArn"])
            definition = json.loads(self._definition(props))
            used: dict[str, set[str]] = {}
            for state, task in _tasks(definition["States"]):
                action, target = self._task_call(task, state)
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

    def _definition(self, props: dict[str, Any]) -> str:
        text = str(self.a.resolver.resolve(props["DefinitionString"]))
        substitutions = self.a.resolver.resolve(props.get("DefinitionSubstitutions", {}))
        return re.sub(r"\$\{(\w+)\}", lambda m: str(substitutions[m.group(1)]), text)

    def _task_call(self, task: dict[str, Any], state: str) -> tuple[str, str]:
        resource, params = task["Resource"], task.get("Parameters", {})
        service_integrations = {
            "lambda:invoke": ("lambda:InvokeFunction", "FunctionName"),
            "sqs:sendMessage": ("sqs:SendMessage", "QueueUrl"),
            "sns:publish": ("sns:Publish", "TopicArn"),
            "dynamodb:putItem": ("dynamodb:PutItem", "TableName"),
            "dynamodb:updateItem": ("dynamodb:UpdateItem", "TableName"),
            "dynamodb:getItem": ("dynamodb:GetItem", "TableName"),
            "dynamodb:deleteItem": ("dynamodb:DeleteItem", "TableName"),
        }
        integration = resource.split(":::", 1)[1].split(".")[0] if ":::" in resource else None
        if integration in service_integrations:
            action, parameter = service_integrations[integration]
            value = params.get(parameter)
            if not isinstance(value, str):
                raise AssertionError(f"Task {state}: {parameter} is not a fixed value; the matrix cannot judge it")
            target = self.a.by_value.get(value) or self.a.by_value.get(value.split(":$")[0])
            if target is None:
                raise AssertionError(f"Task {state}: {value} is no resource of the template")
            return action, target
        raise AssertionError(f"Task {state}: the matrix does not model the integration {resource}")

    def functions(self) -> None:
        tables = self.a.of_type("AWS::DynamoDB::Table")
        for function, res in self.a.of_type("AWS::Lambda::Function").items():
            props = res["Properties"]
            role = self.a.lid(props["Role"])
            variables = props.get("Environment", {}).get("Variables", {})
            used = {self.a.lid(v) for k, v in variables.items() if k.endswith("_TABLE_NAME")}
            for table in sorted(used):
                self.a.covered.add(("function-table", f"{function}.{table}"))
                edge = f"function {function} uses {table}"
                for action in TABLE_CALLS:
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
        for channel, res in self.a.of_type("AWS::Chatbot::SlackChannelConfiguration").items():
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
        return self


def _tasks(states: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    found: list[tuple[str, dict[str, Any]]] = []
    for name, state in states.items():
        if state["Type"] == "Task":
            found.append((name, state))
        for branch in state.get("Branches", []):
            found.extend(_tasks(branch["States"]))
        for key in ("Iterator", "ItemProcessor"):
            if key in state:
                found.extend(_tasks(state[key]["States"]))
    return found


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
    for policy in a.of_type("AWS::IAM::ManagedPolicy"):
        if ("managed-policy", policy) not in a.covered:
            missing.append(f"managed policy {policy}")
    return missing


__all__ = ["ACCOUNT", "OPERATOR", "STACK_NAME", "Check", "MatrixBuilder", "uncovered"]
