"""The Fire-and-Forget pattern as a CDK construct library: any Standard workflow, started from SQS by an EventBridge
Pipe in FIRE_AND_FORGET mode, with every failure recorded, announced once and visible (docs/construct.md).

    from stacks.fire_and_forget import FireAndForgetPipeline, PipelineProps, Workflow, WorkflowMetrics
"""

from stacks.fire_and_forget.code import RUNTIME, handler_code
from stacks.fire_and_forget.dependencies_layer import DependenciesLayer
from stacks.fire_and_forget.monitoring_metrics import WorkflowMetrics
from stacks.fire_and_forget.pipeline import OUTPUT_KEYS, FireAndForgetPipeline, PipelineProps
from stacks.fire_and_forget.settings import AlarmConfig, PipelineSettings, RetryConfig
from stacks.fire_and_forget.workflow import DUPLICATE_DELIVERY_END, FAILURE_ENTRY, WiringError, Workflow

__all__ = [
    "DUPLICATE_DELIVERY_END", "FAILURE_ENTRY", "OUTPUT_KEYS", "RUNTIME", "AlarmConfig", "DependenciesLayer",
    "FireAndForgetPipeline", "PipelineProps", "PipelineSettings", "RetryConfig", "WiringError", "Workflow",
    "WorkflowMetrics", "handler_code",
]
