"""The Fire-and-Forget pattern as a CDK construct library: any Standard workflow, started from SQS by an EventBridge
Pipe in FIRE_AND_FORGET mode, with every failure recorded, announced once and visible (docs/construct.md).

    from fire_and_forget.construct import FireAndForgetPipeline, PipelineProps, Workflow, WorkflowMetrics

The names below are the public API; the submodules are not.
"""

from fire_and_forget.construct.callbacks import CallbackEntryPoint
from fire_and_forget.construct.code import RUNTIME, handler_code
from fire_and_forget.construct.compliance import acknowledge, add_compliance_checks
from fire_and_forget.construct.dependencies_layer import DependenciesLayer
from fire_and_forget.construct.longest_run import LongestRun, longest_run
from fire_and_forget.construct.messaging_key import MessagingKey
from fire_and_forget.construct.monitoring_metrics import WorkflowMetrics
from fire_and_forget.construct.pipeline import OUTPUT_KEYS, FireAndForgetPipeline, PipelineProps
from fire_and_forget.construct.settings import (
    DEFAULT_RUNBOOK_URL,
    LOG_RETENTION_DAYS,
    MAX_RETENTION_DAYS,
    AlarmConfig,
    PipelineSettings,
    RetryConfig,
)
from fire_and_forget.construct.task_resources import encrypted_table, task_function
from fire_and_forget.construct.workflow import (
    DUPLICATE_DELIVERY_END,
    FAILURE_ENTRY,
    WiringError,
    Workflow,
    render_definition,
)

__all__ = [
    "DEFAULT_RUNBOOK_URL", "DUPLICATE_DELIVERY_END", "FAILURE_ENTRY", "LOG_RETENTION_DAYS", "MAX_RETENTION_DAYS",
    "OUTPUT_KEYS", "RUNTIME", "AlarmConfig", "CallbackEntryPoint", "DependenciesLayer", "FireAndForgetPipeline",
    "LongestRun", "MessagingKey", "PipelineProps", "PipelineSettings", "RetryConfig", "WiringError", "Workflow",
    "WorkflowMetrics", "acknowledge", "add_compliance_checks", "encrypted_table", "handler_code", "longest_run",
    "render_definition", "task_function",
]
