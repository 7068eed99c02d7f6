"""A third workflow on the construct: one confirmation e-mail per message (docs/construct.md shows this file)."""

from pathlib import Path
from typing import Any

from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from constructs import Construct

from fire_and_forget import construct as ff

HERE = Path(__file__).resolve().parent


class ConfirmationStack(Stack):
    """SQS -> Pipe (FIRE_AND_FORGET) -> SendConfirmation -> the pipeline's failure tail."""

    def __init__(self, scope: Construct, construct_id: str, *, settings: ff.PipelineSettings, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        send = ff.task_function(
            self, "SendConfirmation", handler="send_confirmation.handler", code=ff.handler_code(HERE / "confirmation"),
            layer=ff.DependenciesLayer(self, "Dependencies", runtime=ff.RUNTIME).layer, settings=settings,
            environment={"SENDER": "no-reply@example.com"}, description="Send one confirmation e-mail",
        )  # fmt: skip
        send.add_to_role_policy(iam.PolicyStatement(
            actions=["ses:SendEmail"], resources=[f"arn:aws:ses:{self.region}:{self.account}:identity/example.com"],
        ))  # fmt: skip
        self.pipeline = ff.FireAndForgetPipeline(
            self, "Pipeline", name="confirmations", message_key="requestId", settings=settings,
            workflow=ff.Workflow(
                title="Confirmation email", definition_file=HERE / "asl" / "send_confirmation.asl.json",
                functions={"SendConfirmation": send}, claims_delivery="SendConfirmation",
            ),
            metrics=ff.WorkflowMetrics(namespace="FireAndForget", service="confirmations",
                                       outcomes=("ConfirmationsSent",)),
        )  # fmt: skip
