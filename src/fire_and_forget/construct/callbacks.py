"""A step done by someone else, hours later: the waits table a `.waitForTaskToken` Task keeps its token in, and the
authenticated entry point the party doing the work answers through (docs/construct.md, "A step done by someone else").

    waits = CallbackEntryPoint(self, "CarrierAnswers", title="Carrier", settings=settings, key=key, layer=layer,
                               accepted_errors=("CarrierDeclined",), answerers=[carrier_role])
    waits.grant_hand_over(book_carrier_function)      # the task that stores the token (runtime/callbacks.py)
    pipeline = FireAndForgetPipeline(...)
    waits.answer_for(pipeline)                         # SendTask* on that workflow, its alarm on the alerts topic
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import CfnOutput, Duration
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from fire_and_forget.construct.code import callback_code
from fire_and_forget.construct.compliance import acknowledge
from fire_and_forget.construct.healing import executions_of
from fire_and_forget.construct.pipeline import FireAndForgetPipeline
from fire_and_forget.construct.settings import PipelineSettings
from fire_and_forget.construct.task_resources import encrypted_table, task_function
from fire_and_forget.runtime.callbacks import KEY_ATTRIBUTE

WAITS_TABLE_ENV = "CALLBACK_WAITS_TABLE_NAME"
HANDLER = "fire_and_forget.callbacks.entry_point.handler"
REFUSED_METRIC = "CallbackAnswersRefused"  # fire_and_forget/callbacks/entry_point.py
DELIVERED_METRIC = "CallbackAnswersDelivered"
# The answers the entry point writes and reads: never Scan, never Delete (rows leave by TTL).
ENTRY_POINT_ACTIONS = ("dynamodb:GetItem", "dynamodb:UpdateItem")
HAND_OVER_ACTIONS = ("dynamodb:PutItem",)
# DynamoDB asks KMS on the caller's behalf for a table under the customer-managed key.
KEY_ACTIONS = ("kms:Decrypt", "kms:GenerateDataKey")
TASK_ANSWERS = ("states:SendTaskSuccess", "states:SendTaskFailure", "states:SendTaskHeartbeat")
HISTORY_ACTION = "states:GetExecutionHistory"


class CallbackEntryPoint(Construct):
    """The waits table (`.table`), the entry point function (`.function`) and its function URL (`.url`, AuthType
    AWS_IAM: each request is signed by an IAM principal allowed lambda:InvokeFunctionUrl, one of `answerers` or a
    principal of the account given it by an identity policy).

    `accepted_errors` are the error names a failure answer may carry: the ones the workflow Catches on purpose.
    """

    def __init__(self, scope: Construct, construct_id: str, *, title: str, settings: PipelineSettings,
                 key: kms.IKey, layer: lambda_.ILayerVersion, accepted_errors: Sequence[str],
                 answerers: Sequence[iam.IPrincipal] = (), metrics_namespace: str = "FireAndForget") -> None:
        super().__init__(scope, construct_id)
        if not accepted_errors:
            raise ValueError(f"{title} callbacks: name the error names a failure answer may carry")
        self.title = title
        self.key = key
        self.service = f"{title.lower().replace(' ', '-')}-callbacks"
        self.metrics_namespace = metrics_namespace
        self.table = encrypted_table(self, "WaitsTable", partition_key=KEY_ATTRIBUTE, ttl_attribute="expiresAt",
                                     key=key, settings=settings)
        self.function = task_function(
            self, "EntryPoint", handler=HANDLER, code=callback_code(), layer=layer, settings=settings,
            environment={
                WAITS_TABLE_ENV: self.table.table_name,
                "ACCEPTED_ERRORS": ",".join(accepted_errors),
                "POWERTOOLS_SERVICE_NAME": self.service,
                "POWERTOOLS_METRICS_NAMESPACE": metrics_namespace,
            },
            description=f"{title}: the entry point answers to a waiting workflow step come through",
            why_no_dlq="Invoked synchronously through its function URL: the caller gets the reply's status and "
                       "retries a 503 itself; nothing is invoked asynchronously.",
        )
        self.table.grant(self.function, *ENTRY_POINT_ACTIONS)
        key.grant(self.function, *KEY_ACTIONS)
        self.url = self.function.add_function_url(auth_type=lambda_.FunctionUrlAuthType.AWS_IAM)
        for principal in answerers:
            self.url.grant_invoke_url(principal)
        self.refused_alarm: cw.Alarm | None = None

    def grant_hand_over(self, function: lambda_.Function) -> None:
        """Let `function` (the task that hands the work over) store its task token: PutItem on the waits table."""
        self.table.grant(function, *HAND_OVER_ACTIONS)
        self.key.grant(function, *KEY_ACTIONS)
        function.add_environment(WAITS_TABLE_ENV, self.table.table_name)

    def answer_for(self, pipeline: FireAndForgetPipeline, runbook_url: str | None = None) -> None:
        """Let the entry point answer `pipeline`'s waiting tasks (SendTaskSuccess, SendTaskFailure,
        SendTaskHeartbeat), alarm on refused answers through its alerts topic, and output the URL."""
        # SendTask* take no resource-level permission: the Service Authorization Reference lists no resource type for
        # them (list_awsstepfunctions.html), so a statement naming the state machine (what CDK's grantTaskResponse
        # writes) would match only where AWS evaluates them against the state machine after all. "*" holds under both
        # readings; what bounds the entry point is that it only sends tokens its waits table holds.
        self.function.add_to_role_policy(iam.PolicyStatement(actions=list(TASK_ANSWERS), resources=["*"]))
        role = self.function.role or self.function
        acknowledge(role, "AwsSolutions-IAM5[Resource::*]",
                    "Only xray:PutTraceSegments and xray:PutTelemetryRecords, and states:SendTaskSuccess, "
                    "SendTaskFailure and SendTaskHeartbeat, none of which supports resource-level scoping (Service "
                    "Authorization Reference); the tokens it answers are those of its own waits table.")
        # An answer whose sending had no clear outcome (a lost response, then "closed") is judged by the execution's
        # history: did the wait end with this answer? (runtime/callbacks.py)
        executions, finding = executions_of(pipeline.state_machine)
        self.function.add_to_role_policy(iam.PolicyStatement(actions=[HISTORY_ACTION], resources=[executions]))
        acknowledge(role, finding, "The executions of this one state machine: their names are generated per "
                                   "message, so no narrower ARN exists for GetExecutionHistory.")
        refused = cw.Metric(namespace=self.metrics_namespace, metric_name=REFUSED_METRIC,
                            dimensions_map={"service": self.service}, statistic="Sum", period=Duration.minutes(5))
        runbook = runbook_url or pipeline.props.settings.runbook_url
        self.refused_alarm = refused.create_alarm(
            self, "AnswersRefused",
            alarm_description=(
                f"An answer to a waiting {self.title} step was refused: too late (the step had timed out and the "
                "workflow compensated), for a request a newer hand-over of the same key replaced, for an unknown "
                "key, or conflicting with an earlier one. The party that "
                f"answered believes the work happened: tell it. Runbook: {runbook}#answersrefused"),
            threshold=1, evaluation_periods=1, datapoints_to_alarm=1,
            comparison_operator=cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cw.TreatMissingData.NOT_BREACHING,
        )
        self.refused_alarm.add_alarm_action(cw_actions.SnsAction(pipeline.alerts_topic))
        if pipeline.emits_outputs:
            # At the stack's top level under fixed keys (<id>Url, <id>WaitsTableName), as the pipeline's own are.
            for suffix, value in (("Url", self.url.url), ("WaitsTableName", self.table.table_name)):
                CfnOutput(self, suffix, value=value).override_logical_id(f"{self.node.id}{suffix}")
