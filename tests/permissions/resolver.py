"""Resolves CloudFormation intrinsics in a synthesized template to fake, well-formed ARNs (one account, one region)."""

from __future__ import annotations

import re
from typing import Any

ACCOUNT = "123456789012"
OTHER_ACCOUNT = "210987654321"
REGION = "us-east-1"
PARTITION = "aws"
STACK_NAME = "FireAndForget"
PSEUDO = {
    "AWS::Partition": PARTITION,
    "AWS::Region": REGION,
    "AWS::AccountId": ACCOUNT,
    "AWS::URLSuffix": "amazonaws.com",
    "AWS::StackName": STACK_NAME,
}


def arn(service: str, resource: str, *, region: str = REGION, account: str = ACCOUNT) -> str:
    return f"arn:{PARTITION}:{service}:{region}:{account}:{resource}"


# Ref and each attribute, by resource type: the shapes AWS documents for each (Return values in the CFN reference).
def _attributes(resource_type: str, lid: str) -> dict[str, str]:
    shapes: dict[str, dict[str, str]] = {
        "AWS::SQS::Queue": {
            "Ref": f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/{lid}",
            "Arn": arn("sqs", lid),
            "QueueName": lid,
            "QueueUrl": f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/{lid}",
        },
        "AWS::SNS::Topic": {"Ref": arn("sns", lid), "TopicArn": arn("sns", lid), "TopicName": lid},
        "AWS::KMS::Key": {"Ref": lid, "Arn": arn("kms", f"key/{lid}"), "KeyId": lid},
        "AWS::IAM::Role": {"Ref": lid, "Arn": f"arn:{PARTITION}:iam::{ACCOUNT}:role/{lid}", "RoleId": lid},
        "AWS::IAM::ManagedPolicy": {
            "Ref": f"arn:{PARTITION}:iam::{ACCOUNT}:policy/{lid}",
            "PolicyArn": f"arn:{PARTITION}:iam::{ACCOUNT}:policy/{lid}",
        },
        "AWS::Lambda::Function": {"Ref": lid, "Arn": arn("lambda", f"function:{lid}")},
        "AWS::Lambda::LayerVersion": {"Ref": arn("lambda", f"layer:{lid}:1")},
        "AWS::StepFunctions::StateMachine": {
            "Ref": arn("states", f"stateMachine:{lid}"),
            "Arn": arn("states", f"stateMachine:{lid}"),
            "Name": lid,
        },
        "AWS::DynamoDB::Table": {"Ref": lid, "Arn": arn("dynamodb", f"table/{lid}"),
                                 "StreamArn": arn("dynamodb", f"table/{lid}/stream/2026-12-07T00:00:00.000")},
        "AWS::Events::Connection": {"Ref": lid, "Arn": arn("events", f"connection/{lid}/0a1b2c3d"),
                                    "SecretArn": arn("secretsmanager", f"secret:events!connection/{lid}-AbCdEf")},
        "AWS::Events::ApiDestination": {"Ref": lid, "Arn": arn("events", f"api-destination/{lid}/4e5f6a7b")},
        "AWS::Events::Rule": {"Ref": lid, "Arn": arn("events", f"rule/{lid}")},
        "AWS::Pipes::Pipe": {"Ref": lid, "Arn": arn("pipes", f"pipe/{lid}")},
        "AWS::Logs::LogGroup": {"Ref": lid, "Arn": arn("logs", f"log-group:{lid}:*")},
        "AWS::CloudWatch::Alarm": {"Ref": lid, "Arn": arn("cloudwatch", f"alarm:{lid}")},
        "AWS::CloudWatch::CompositeAlarm": {"Ref": lid, "Arn": arn("cloudwatch", f"alarm:{lid}")},
        "AWS::CloudWatch::Dashboard": {"Ref": lid},
        "AWS::Chatbot::SlackChannelConfiguration": {
            "Ref": arn("chatbot", f"chat-configuration/slack-channel/{lid}"),
            "Arn": arn("chatbot", f"chat-configuration/slack-channel/{lid}"),
        },
        "AWS::Chatbot::MicrosoftTeamsChannelConfiguration": {
            "Ref": arn("chatbot", f"chat-configuration/teams-channel/{lid}"),
            "Arn": arn("chatbot", f"chat-configuration/teams-channel/{lid}"),
        },
    }
    if resource_type not in shapes:
        raise KeyError(f"the resolver has no ARN shape for {resource_type} ({lid}): add one")
    return shapes[resource_type]


class Resolver:
    """`resolve(value)` replaces every Ref / Fn::GetAtt / Fn::Join / Fn::Sub / Fn::Select / Fn::Split."""

    def __init__(self, template: dict[str, Any]) -> None:
        self._resources: dict[str, dict[str, Any]] = template["Resources"]
        self._parameters: dict[str, Any] = template.get("Parameters", {})

    def attribute(self, lid: str, name: str = "Ref") -> str:
        if lid in PSEUDO:
            return PSEUDO[lid]
        if lid in self._parameters:
            return str(self._parameters[lid].get("Default", lid))
        shapes = _attributes(self._resources[lid]["Type"], lid)
        if name not in shapes:
            raise KeyError(f"no attribute {name} for {lid} ({self._resources[lid]['Type']})")
        return shapes[name]

    def resolve(self, value: Any) -> Any:
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            ((key, arg),) = value.items()
            if key == "Ref" or key.startswith("Fn::"):
                return self._intrinsic(key, arg)
        return {k: self.resolve(v) for k, v in value.items()}

    def _intrinsic(self, key: str, arg: Any) -> Any:
        if key == "Ref":
            return self.attribute(arg)
        if key == "Fn::GetAtt":
            lid, name = arg if isinstance(arg, list) else arg.split(".", 1)
            return self.attribute(lid, name)
        if key == "Fn::Join":
            separator, parts = arg
            return separator.join(str(self.resolve(p)) for p in self.resolve(parts))
        if key == "Fn::Select":
            index, items = arg
            return self.resolve(items)[int(index)]
        if key == "Fn::Split":
            separator, text = arg
            return str(self.resolve(text)).split(separator)
        if key == "Fn::Sub":
            text, variables = (arg, {}) if isinstance(arg, str) else arg
            return self._sub(text, {k: self.resolve(v) for k, v in variables.items()})
        raise KeyError(f"the resolver does not handle {key}")

    def _sub(self, text: str, variables: dict[str, Any]) -> str:
        def one(match: re.Match[str]) -> str:
            name = match.group(1)
            if name in variables:
                return str(variables[name])
            lid, _, attribute = name.partition(".")
            return self.attribute(lid, attribute or "Ref")

        return re.sub(r"\$\{([^}!]+)\}", one, text)
