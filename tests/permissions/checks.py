"""One request a principal makes, judged on every policy AWS evaluates for it; the values shared by the edges."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tests.permissions.resolver import ACCOUNT, OTHER_ACCOUNT, PARTITION, REGION

TLS = {"aws:SecureTransport": "true"}
NO_TLS = {"aws:SecureTransport": "false"}
OPERATOR = f"arn:{PARTITION}:iam::{ACCOUNT}:role/Operator"
SQS_SEND_KEY = ("kms:GenerateDataKey", "kms:Decrypt")  # SQS SSE: a sender needs both, a receiver kms:Decrypt
SNS_PUBLISH_KEY = ("kms:GenerateDataKey", "kms:Decrypt")
TABLE_CALLS = ("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem")
# A step reporting the message's progress on its row (fire_and_forget.runtime.status.AttemptProgress).
PROGRESS_TABLE_CALLS = ("dynamodb:UpdateItem",)
# Services for which AWS documents aws:SourceAccount / aws:SourceArn in the KMS request for some deliveries and not
# others (SNS: absent for EventBridge to an encrypted topic; no SQS page says): their key use is judged both ways.
SOURCE_KEYS_MAYBE_ABSENT = ("events.amazonaws.com",)
ROLE_USERS = {  # resource type -> (property holding its role, service that assumes it)
    "AWS::Lambda::Function": ("Role", "lambda.amazonaws.com"),
    "AWS::StepFunctions::StateMachine": ("RoleArn", "states.amazonaws.com"),
    "AWS::Pipes::Pipe": ("RoleArn", "pipes.amazonaws.com"),
    "AWS::Chatbot::SlackChannelConfiguration": ("IamRoleArn", "chatbot.amazonaws.com"),
    "AWS::Chatbot::MicrosoftTeamsChannelConfiguration": ("IamRoleArn", "chatbot.amazonaws.com"),
}
CHAT_CHANNELS = ("AWS::Chatbot::SlackChannelConfiguration", "AWS::Chatbot::MicrosoftTeamsChannelConfiguration")


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


def other_account(value: str) -> str:
    parts = value.split(":")
    parts[4] = OTHER_ACCOUNT
    return ":".join(parts)


def kms_via(service: str) -> dict[str, str]:
    return {"kms:ViaService": f"{service}.{REGION}.amazonaws.com"}


def encryption_context(kind: str, resource_arn: str) -> dict[str, str]:
    """The encryption context SQS or SNS binds a data key to, as AWS sends it. The simulator drops these keys (so the
    matrix judges a key policy without its kms:EncryptionContext conditions; test_key_conditions.py judges those)."""
    key = {"AWS::SQS::Queue": "aws:sqs:arn", "AWS::SNS::Topic": "aws:sns:topicArn"}.get(kind)
    return {f"kms:EncryptionContext:{key}": resource_arn} if key else {}
