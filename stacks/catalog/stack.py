"""The catalog example: one step that keeps a search index up to date, run by one FireAndForgetPipeline.

Deliberately unlike the order saga: a single task, no compensation (a later version supersedes an earlier one, and
the write is conditional on the version), so every failure goes straight to the pipeline's failure tail.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aws_cdk import Stack
from constructs import Construct

from fire_and_forget.construct import (
    RUNTIME,
    DependenciesLayer,
    FireAndForgetPipeline,
    MessagingKey,
    PipelineSettings,
    Workflow,
    WorkflowMetrics,
    encrypted_table,
    handler_code,
    task_function,
)

REPO = Path(__file__).resolve().parents[2]
ASL_FILE = REPO / "statemachines" / "catalog" / "index_product.asl.json"
HANDLERS_DIR = REPO / "lambdas" / "catalog"
SERVICE_NAME = "catalog-index"
CATALOG_METRICS = WorkflowMetrics(
    namespace="FireAndForget",
    service=SERVICE_NAME,
    outcomes=("ProductsIndexed",),
    rejections=("InvalidDocuments", "DuplicateDeliveries", "ProductsSuperseded"),
    expected_errors={"IndexProduct": ("DuplicateDeliveries", "InvalidDocuments")},
)


class CatalogStack(Stack):
    """SQS -> Pipe (FIRE_AND_FORGET) -> IndexProduct -> the pipeline's failure tail; the search-index table."""

    def __init__(self, scope: Construct, construct_id: str, *, settings: PipelineSettings, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        # Its one step reports no progress, so a success would never be known: the completion webhook and the
        # tickets (which a later success resolves) are the order example's only.
        settings = settings.model_copy(update={"completion_webhook_url": None, "completion_webhook_secret_arn": None,
                                               "ops_center_tickets": False})
        key = MessagingKey(self, "MessagingKey", settings=settings).key
        index = encrypted_table(self, "SearchIndexTable", partition_key="productId", key=key, settings=settings)
        layer = DependenciesLayer(self, "Dependencies", runtime=RUNTIME).layer
        function = task_function(
            self, "IndexProduct", handler="index_product.handler.handler", code=handler_code(HANDLERS_DIR),
            layer=layer, settings=settings, description="Catalog search index: index one product version",
            environment={
                "POWERTOOLS_SERVICE_NAME": SERVICE_NAME,
                "POWERTOOLS_METRICS_NAMESPACE": CATALOG_METRICS.namespace,
                "SEARCH_INDEX_TABLE_NAME": index.table_name,
            },
        )
        index.grant_read_write_data(function)
        self.pipeline = FireAndForgetPipeline(
            self,
            "Pipeline",
            name="catalog",
            message_key="productId",
            workflow=Workflow(
                title="Catalog index",
                definition_file=ASL_FILE,
                functions={"IndexProduct": function},
                claims_delivery="IndexProduct",
            ),
            metrics=CATALOG_METRICS,
            settings=settings,
            key=key,
            layer=layer,
            outputs={"SearchIndexTableName": index.table_name},
        )
