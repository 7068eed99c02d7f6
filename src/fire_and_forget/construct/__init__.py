"""The Fire-and-Forget pattern as a CDK construct library: any Standard workflow, started from SQS by an EventBridge
Pipe in FIRE_AND_FORGET mode, with every failure recorded, announced once and visible (docs/construct.md).

    from fire_and_forget.construct import FireAndForgetPipeline, PipelineProps, Workflow, WorkflowMetrics
"""

from fire_and_forget.construct.code import RUNTIME, handler_code
from fire_and_forget.construct.dependencies_layer import DependenciesLayer
from fire_and_forget.construct.monitoring_metrics import WorkflowMetrics
from fire_and_forget.construct.pipeline import OUTPUT_KEYS, FireAndForgetPipeline, PipelineProps
from fire_and_forget.construct.settings import AlarmConfig, PipelineSettings, RetryConfig
from fire_and_forget.construct.workflow import DUPLICATE_DELIVERY_END, FAILURE_ENTRY, WiringError, Workflow

__all__ = [
    "DUPLICATE_DELIVERY_END", "FAILURE_ENTRY", "OUTPUT_KEYS", "RUNTIME", "AlarmConfig", "DependenciesLayer",
    "FireAndForgetPipeline", "PipelineProps", "PipelineSettings", "RetryConfig", "WiringError", "Workflow",
    "WorkflowMetrics", "handler_code",
]
