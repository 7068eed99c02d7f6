"""The stack outputs by which ff-ops and the rehearsal find a pipeline: one enumeration of their keys."""

from __future__ import annotations

from enum import StrEnum

# The stack name ff-ops and the rehearsal assume when told none; FF_STACK_NAME or --stack-name name any other.
DEFAULT_STACK_NAME = "FireAndForget"


class Output(StrEnum):
    """Every output the construct writes (each at the stack's top level, under its key)."""

    PIPELINE_NAME = "PipelineName"
    # FIRE_AND_FORGET or REQUEST_RESPONSE: which of ff-ops' commands apply (a stack without it is FIRE_AND_FORGET).
    INVOCATION_TYPE = "InvocationType"
    SOURCE_QUEUE_URL = "SourceQueueUrl"
    SOURCE_DLQ_URL = "SourceDlqUrl"
    FAILURE_DLQ_URL = "FailureDlqUrl"
    FAILURE_EVENTS_QUEUE_URL = "FailureEventsQueueUrl"
    EVENT_TARGET_DLQ_URL = "EventTargetDlqUrl"
    ALERTS_TOPIC_ARN = "AlertsTopicArn"
    ALERT_PATH_TOPIC_ARN = "AlertPathTopicArn"
    STATE_MACHINE_ARN = "StateMachineArn"
    PIPE_NAME = "PipeName"
    PIPE_ARN = "PipeArn"
    FAILURE_RULE_NAME = "FailureRuleName"
    DASHBOARD_NAME = "DashboardName"
    OPERATOR_POLICY_ARN = "OperatorPolicyArn"
    DELIVERIES_TABLE_NAME = "DeliveriesTableName"
    MESSAGE_KEY_FIELD = "MessageKeyField"
    RECONCILER_DLQ_URL = "ReconcilerDlqUrl"
    SCHEDULE_DLQ_URL = "ScheduleDlqUrl"
    RECONCILER_FUNCTION_NAME = "ReconcilerFunctionName"
    REDRIVER_FUNCTION_NAME = "RedriverFunctionName"
    HEALING_POLICY = "HealingPolicy"
    # Only when the workflow has compensations: the states `ff-ops trace` lists as the compensations run.
    COMPENSATION_STATES = "CompensationStates"
