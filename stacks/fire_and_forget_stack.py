"""The Fire-and-Forget stack: composes one construct per capability, nothing else."""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Stack
from constructs import Construct

from stacks.config import AppConfig
from stacks.constructs.alert_path import AlertPath
from stacks.constructs.execution_events import ExecutionEvents
from stacks.constructs.failure_handling import FailureHandling
from stacks.constructs.messaging_key import MessagingKey
from stacks.constructs.monitoring import Monitoring
from stacks.constructs.monitoring_metrics import MonitoredResources
from stacks.constructs.notifications import SlackNotifications
from stacks.constructs.operator_policy import OperatedResources, OperatorPolicy
from stacks.constructs.order_pipe import OrderPipe
from stacks.constructs.order_saga import HANDLED_FAILURE_ERROR, OrderSaga
from stacks.constructs.saga_tasks import SagaTasks
from stacks.constructs.source_queue import SourceQueue


class FireAndForgetStack(Stack):
    """SQS -> Pipe (FIRE_AND_FORGET) -> order saga -> HandleFailure, with the rule for what Catch cannot see."""

    def __init__(self, scope: Construct, construct_id: str, *, config: AppConfig, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        key = MessagingKey(self, "MessagingKey", config=config).key
        source = SourceQueue(self, "SourceQueue", key=key, config=config)
        failure = FailureHandling(self, "FailureHandling", key=key, config=config)
        tasks = SagaTasks(self, "SagaTasks", config=config, key=key)
        saga = OrderSaga(
            self,
            "OrderSaga",
            config=config,
            functions=dict(tasks.functions),
            failure_dlq=failure.failure_dlq,
            alerts_topic=failure.alerts_topic,
            key=key,
            deliveries_table=tasks.tables["Deliveries"],
        )
        pipe = OrderPipe(
            self,
            "OrderPipe",
            config=config,
            source_queue=source.queue,
            source_key=key,
            state_machine=saga.state_machine,
            workflow_type=saga.state_machine_type,
        )
        execution_events = ExecutionEvents(
            self,
            "ExecutionEvents",
            config=config,
            key=key,
            state_machine=saga.state_machine,
            handled_error=HANDLED_FAILURE_ERROR,
            alerts_topic=failure.alerts_topic,
        )
        SlackNotifications(self, "Notifications", config=config, topic=failure.alerts_topic)
        alert_path = AlertPath(self, "AlertPath", config=config)
        monitoring = Monitoring(
            self,
            "Monitoring",
            config=config.alarms,
            alerts_topic=failure.alerts_topic,
            alert_path_topic=alert_path.topic,
            runbook_url=config.runbook_url,
            resources=MonitoredResources(
                state_machine=saga.state_machine,
                source_queue=source.queue,
                source_dlq=source.dead_letter_queue,
                failure_dlq=failure.failure_dlq,
                failure_events_queue=execution_events.failure_events_queue,
                rule_target_dlq=execution_events.target_dlq,
                pipe_name=pipe.pipe.ref,
                rule=execution_events.rule,
                functions=dict(tasks.functions),
                undelivered_alerts=failure.undelivered_alerts,
                announcer=execution_events.announcer,
            ),
        )
        operator = OperatorPolicy(
            self,
            "OperatorPolicy",
            resources=OperatedResources(
                stack_name=self.stack_name,
                source_queue=source.queue,
                source_dlq=source.dead_letter_queue,
                failure_dlq=failure.failure_dlq,
                watched_queues=(source.queue, source.dead_letter_queue, failure.failure_dlq,
                                execution_events.failure_events_queue, execution_events.target_dlq),
                state_machine=saga.state_machine,
                pipe_arn=pipe.pipe.attr_arn,
                key=key,
                smoke_stock_table=tasks.tables["Inventory"],
            ),
        )

        outputs = {
            "SourceQueueUrl": source.queue.queue_url,
            "SourceDlqUrl": source.dead_letter_queue.queue_url,
            "FailureDlqUrl": failure.failure_dlq.queue_url,
            "FailureEventsQueueUrl": execution_events.failure_events_queue.queue_url,
            "EventTargetDlqUrl": execution_events.target_dlq.queue_url,
            "AlertsTopicArn": failure.alerts_topic.topic_arn,
            "AlertPathTopicArn": alert_path.topic.topic_arn,
            "StateMachineArn": saga.state_machine.state_machine_arn,
            "PipeName": pipe.pipe.ref,
            "PipeArn": pipe.pipe.attr_arn,
            "FailureRuleName": execution_events.rule.rule_name,
            "DashboardName": monitoring.dashboard.dashboard_name,
            "OperatorPolicyArn": operator.policy.managed_policy_arn,
        } | {f"{name}TableName": table.table_name for name, table in tasks.tables.items()}
        for output_id, value in outputs.items():
            CfnOutput(self, output_id, value=value)
