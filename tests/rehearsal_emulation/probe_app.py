"""A tiny CDK app with the resource types the emulators run: an SQS event source mapping and two schedules.

It has the shape issue 13's healing resources have (a failure-events queue with a redrive policy consumed by a
Reconciler, a sweep and a redrive tick on EventBridge Scheduler), without the pipeline around it, so the emulators
are tested on what CDK really writes for `SqsEventSource` and `aws_scheduler.Schedule` + `LambdaInvoke`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as events_targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_destinations as destinations
from aws_cdk import aws_lambda_event_sources as event_sources
from aws_cdk import aws_pipes as pipes
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_scheduler_targets as targets
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn

STACK_NAME = "HealingProbe"
PIPELINE_STACK_NAME = "HealingProbePipeline"
PROBE_CODE = Path(__file__).parent / "probe_function"
MAX_RECEIVE_COUNT = 3
VISIBILITY_TIMEOUT_SECONDS = 60
SWEEP_MINUTES = 15
TICK_MINUTES = 5
TICK_RETRY_ATTEMPTS = 2
REDRIVER_ASYNC_RETRIES = 1
SWEEP_INPUT = {"sweep": {"time": scheduler.ContextAttribute.scheduled_time}}
TICK_INPUT = {
    "time": scheduler.ContextAttribute.scheduled_time,
    "executionId": scheduler.ContextAttribute.execution_id,
    "attempt": scheduler.ContextAttribute.attempt_number,
    "schedule": scheduler.ContextAttribute.schedule_arn,
}


class ProbeStack(cdk.Stack):
    def __init__(self, scope: cdk.App, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        observations = sqs.Queue(self, "Observations")
        reconciler_dlq = sqs.Queue(self, "ReconcilerDlq")
        failure_events = sqs.Queue(
            self,
            "FailureEvents",
            visibility_timeout=cdk.Duration.seconds(VISIBILITY_TIMEOUT_SECONDS),
            dead_letter_queue=sqs.DeadLetterQueue(queue=reconciler_dlq, max_receive_count=MAX_RECEIVE_COUNT),
        )
        tick_dlq = sqs.Queue(self, "TickDlq")
        async_failures = sqs.Queue(self, "AsyncFailures")
        code = lambda_.Code.from_asset(str(PROBE_CODE))
        environment = {"OBSERVATIONS_QUEUE_URL": observations.queue_url}
        def probe_function(name: str, **extra: Any) -> lambda_.Function:
            return lambda_.Function(self, f"{name}Function", runtime=lambda_.Runtime.PYTHON_3_13,
                                    handler="probe.handler.handle", code=code, environment=environment,
                                    timeout=cdk.Duration.seconds(30), **extra)

        reconciler = probe_function("Reconciler")
        redriver = probe_function("Redriver", retry_attempts=REDRIVER_ASYNC_RETRIES,
                                  on_failure=destinations.SqsDestination(async_failures))
        observations.grant_send_messages(reconciler)
        observations.grant_send_messages(redriver)
        reconciler.add_event_source(
            event_sources.SqsEventSource(failure_events, batch_size=10, report_batch_item_failures=True)
        )
        scheduler.Schedule(
            self,
            "SweepSchedule",
            schedule=scheduler.ScheduleExpression.rate(cdk.Duration.minutes(SWEEP_MINUTES)),
            target=targets.LambdaInvoke(reconciler, input=scheduler.ScheduleTargetInput.from_object(SWEEP_INPUT)),
        )
        scheduler.Schedule(
            self,
            "RedriveTickSchedule",
            schedule=scheduler.ScheduleExpression.rate(cdk.Duration.minutes(TICK_MINUTES)),
            target=targets.LambdaInvoke(
                redriver,
                input=scheduler.ScheduleTargetInput.from_object(TICK_INPUT),
                retry_attempts=TICK_RETRY_ATTEMPTS,
                max_event_age=cdk.Duration.hours(1),
                dead_letter_queue=tick_dlq,
            ),
        )
        for key, value in {
            "ObservationsQueueUrl": observations.queue_url,
            "FailureEventsQueueUrl": failure_events.queue_url,
            "ReconcilerDlqUrl": reconciler_dlq.queue_url,
            "TickDlqUrl": tick_dlq.queue_url,
            "AsyncFailuresQueueUrl": async_failures.queue_url,
        }.items():
            cdk.CfnOutput(self, key, value=value)


class PipelineProbeStack(cdk.Stack):
    """The smallest stack `Rehearsal` opens (a pipe into a Standard workflow, a rule on its status changes) plus the
    healing shape: the rule's queue consumed by a Reconciler, and a Redriver tick that puts a request back on the
    source queue. Every execution fails (one Fail state), so each one is announced and reconciled."""

    def __init__(self, scope: cdk.App, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        observations = sqs.Queue(self, "Observations")
        source = sqs.Queue(self, "SourceQueue")
        failure_dlq = sqs.Queue(self, "FailureDlq")
        alerts = sns.Topic(self, "AlertsTopic")
        failure_events = sqs.Queue(
            self,
            "FailureEvents",
            visibility_timeout=cdk.Duration.seconds(VISIBILITY_TIMEOUT_SECONDS),
            dead_letter_queue=sqs.DeadLetterQueue(
                queue=sqs.Queue(self, "ReconcilerDlq"), max_receive_count=MAX_RECEIVE_COUNT
            ),
        )
        workflow = sfn.StateMachine(
            self,
            "Workflow",
            definition_body=sfn.DefinitionBody.from_chainable(sfn.Fail(self, "Broken", error="Broken", cause="probe")),
        )
        role = iam.Role(self, "PipeRole", assumed_by=iam.ServicePrincipal("pipes.amazonaws.com"))
        source.grant_consume_messages(role)
        workflow.grant_start_execution(role)
        pipes.CfnPipe(
            self,
            "Pipe",
            role_arn=role.role_arn,
            source=source.queue_arn,
            target=workflow.state_machine_arn,
            source_parameters=pipes.CfnPipe.PipeSourceParametersProperty(
                sqs_queue_parameters=pipes.CfnPipe.PipeSourceSqsQueueParametersProperty(batch_size=1)
            ),
            target_parameters=pipes.CfnPipe.PipeTargetParametersProperty(
                step_function_state_machine_parameters=pipes.CfnPipe.PipeTargetStateMachineParametersProperty(
                    invocation_type="FIRE_AND_FORGET"
                )
            ),
        )
        events.Rule(
            self,
            "FailureRule",
            event_pattern=events.EventPattern(
                source=["aws.states"],
                detail_type=["Step Functions Execution Status Change"],
                detail={"status": ["FAILED", "TIMED_OUT", "ABORTED"], "stateMachineArn": [workflow.state_machine_arn]},
            ),
            targets=[events_targets.SqsQueue(failure_events)],
        )
        code = lambda_.Code.from_asset(str(PROBE_CODE))
        reconciler = lambda_.Function(
            self,
            "ReconcilerFunction",
            runtime=lambda_.Runtime.PYTHON_3_13,
            handler="probe.handler.handle",
            code=code,
            environment={"OBSERVATIONS_QUEUE_URL": observations.queue_url},
        )
        reconciler.add_event_source(event_sources.SqsEventSource(failure_events, report_batch_item_failures=True))
        redriver = lambda_.Function(
            self,
            "RedriverFunction",
            runtime=lambda_.Runtime.PYTHON_3_13,
            handler="probe.handler.handle",
            code=code,
            environment={"OBSERVATIONS_QUEUE_URL": observations.queue_url, "REDRIVE_QUEUE_URL": source.queue_url},
        )
        scheduler.Schedule(
            self,
            "RedriveTickSchedule",
            schedule=scheduler.ScheduleExpression.rate(cdk.Duration.minutes(TICK_MINUTES)),
            target=targets.LambdaInvoke(redriver, input=scheduler.ScheduleTargetInput.from_object(TICK_INPUT)),
        )
        for key, value in {
            "ObservationsQueueUrl": observations.queue_url,
            "SourceQueueUrl": source.queue_url,
            "FailureDlqUrl": failure_dlq.queue_url,
            "FailureEventsQueueUrl": failure_events.queue_url,
            "AlertsTopicArn": alerts.topic_arn,
        }.items():
            cdk.CfnOutput(self, key, value=value)


def synthesize(outdir: Path) -> Path:
    """Synthesize the probe app (both stacks) into `outdir`; returns the cloud assembly directory."""
    app = cdk.App(outdir=str(outdir))
    ProbeStack(app, STACK_NAME)
    PipelineProbeStack(app, PIPELINE_STACK_NAME)
    return Path(app.synth().directory)
