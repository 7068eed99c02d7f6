"""Finds the deployed stack's resources from its outputs: ff-ops never takes a copied ARN or URL."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from botocore.exceptions import ClientError

from fire_and_forget.cli.errors import OutputsMissing, StackNotFound, translate
from fire_and_forget.runtime.errors import error_code
from fire_and_forget.runtime.outputs import Output
from fire_and_forget.runtime.records import DEFAULT_KEY_FIELD

if TYPE_CHECKING:
    from mypy_boto3_cloudformation import CloudFormationClient


FIRE_AND_FORGET = "FIRE_AND_FORGET"
REQUEST_RESPONSE = "REQUEST_RESPONSE"
BOTH_MODES = (FIRE_AND_FORGET, REQUEST_RESPONSE)  # the commands that apply to either: status, source-dlq redrive
# What `status` reports in REQUEST_RESPONSE mode, which has neither a failure DLQ nor a status-change rule.
REQUEST_RESPONSE_QUEUES = (Output.SOURCE_QUEUE_URL, Output.SOURCE_DLQ_URL)

# The output naming the top-level body field that says which work a message is about (a business key).
KEY_FIELD_OUTPUT = Output.MESSAGE_KEY_FIELD

# The queues status reports, by output key, with the name an operator knows them by.
QUEUES: dict[str, str] = {
    Output.SOURCE_QUEUE_URL: "source queue",
    Output.SOURCE_DLQ_URL: "source DLQ",
    Output.FAILURE_DLQ_URL: "failure DLQ",
    Output.FAILURE_EVENTS_QUEUE_URL: "failure-events queue",
    Output.EVENT_TARGET_DLQ_URL: "rule target DLQ",
}
# Self-healing's queues (fire_and_forget/construct/healing.py): a stack deployed before it has neither output, and
# status then lists only the queues above.
HEALING_QUEUES: dict[str, str] = {
    Output.RECONCILER_DLQ_URL: "reconciler DLQ",
    Output.SCHEDULE_DLQ_URL: "schedule DLQ",
}
# Self-healing's other outputs, all optional for the same reason: the policy both ff-ops and the Redriver classify
# failure records by (fire_and_forget/cli/healing.py reads it), the two functions, and the pipeline's name (its metrics'
# dimension).
HEALING_POLICY_OUTPUT = Output.HEALING_POLICY
RECONCILER_FUNCTION_OUTPUT = Output.RECONCILER_FUNCTION_NAME
REDRIVER_FUNCTION_OUTPUT = Output.REDRIVER_FUNCTION_NAME
PIPELINE_NAME_OUTPUT = Output.PIPELINE_NAME


@dataclass(frozen=True)
class DeployedStack:
    """A stack's name, status and outputs."""

    name: str
    status: str
    outputs: dict[str, str]

    def require(self, *keys: str) -> list[str]:
        """The values of `keys`, key by key; raises OutputsMissing naming every absent key."""
        missing = [key for key in keys if not self.outputs.get(key)]
        if missing:
            raise OutputsMissing(
                f"stack {self.name} ({self.status}) has no output {', '.join(missing)}",
                "deploy the current version of the app (`npx cdk deploy`), or check --stack-name",
            )
        return [self.outputs[key] for key in keys]

    def output(self, key: str) -> str:
        (value,) = self.require(key)
        return value

    def optional(self, key: str) -> str | None:
        """The value of an output an older stack may lack; None when it does."""
        return self.outputs.get(key) or None

    @property
    def healing_queues(self) -> dict[str, str]:
        """Output key -> URL of the self-healing queues this stack has (none before self-healing)."""
        return {key: self.outputs[key] for key in HEALING_QUEUES if self.outputs.get(key)}

    @property
    def invocation_type(self) -> str:
        """FIRE_AND_FORGET or REQUEST_RESPONSE, from the stack's InvocationType output (absent: FIRE_AND_FORGET, the
        only mode before the output existed)."""
        return self.outputs.get(Output.INVOCATION_TYPE) or FIRE_AND_FORGET

    @property
    def request_response(self) -> bool:
        return self.invocation_type == REQUEST_RESPONSE

    @property
    def key_field(self) -> str:
        """The body field that names a message's work; DEFAULT_KEY_FIELD for a stack deployed without the output."""
        return self.outputs.get(KEY_FIELD_OUTPUT) or DEFAULT_KEY_FIELD

    @property
    def key_field_assumed(self) -> bool:
        """True when the stack has no MessageKeyField output and `key_field` is the fallback."""
        return not self.outputs.get(KEY_FIELD_OUTPUT)


def find_stack(cloudformation: CloudFormationClient, stack_name: str) -> DeployedStack:
    """The stack's outputs; raises StackNotFound when the region has no stack of that name."""
    try:
        stacks = cloudformation.describe_stacks(StackName=stack_name)["Stacks"]
    except ClientError as error:
        # CloudFormation has no error code of its own for this: a missing stack is a ValidationError "does not exist".
        if error_code(error) == "ValidationError" and "does not exist" in str(error):
            region = cloudformation.meta.region_name
            raise StackNotFound(f"no stack named {stack_name} in {region}",
                                "check --stack-name and --region (or AWS_REGION / AWS_PROFILE)") from error
        raise translate(error, f"reading stack {stack_name}") or error from error
    stack = stacks[0]
    outputs = {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", []) if "OutputKey" in o}
    return DeployedStack(name=stack["StackName"], status=stack["StackStatus"], outputs=outputs)
