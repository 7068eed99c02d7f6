"""The catalog example's workflow run by the pipeline in REQUEST_RESPONSE mode (an Express workflow the pipe waits
for): the article's other way, for the tests and for the comparison of the two modes (demos/catalog/modes.py).

Not part of app.py's deployment: the examples deploy FIRE_AND_FORGET. `build` puts it in a stack of its own.
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_lambda as lambda_

from fire_and_forget.construct import (
    FireAndForgetPipeline,
    MessagingKey,
    PipelineSettings,
    Workflow,
    encrypted_table,
    handler_code,
    task_function,
)
from stacks.catalog.stack import ASL_FILE, CATALOG_METRICS, HANDLERS_DIR, SERVICE_NAME

STACK_NAME = "FireAndForget-RequestResponse"
TASK = "IndexProduct"
# The layer by an offline account's ARN: the rehearsal runs the handlers with this project's own packages, and building
# the real DependenciesLayer runs uv, seconds the tests and the comparison do not need. Never deployed as it is.
LAYER_ARN = "arn:aws:lambda:us-east-1:123456789012:layer:dependencies:1"


def build(app: cdk.App, settings: PipelineSettings | None = None, stack_name: str = STACK_NAME) -> cdk.Stack:
    """The catalog's IndexProduct workflow in REQUEST_RESPONSE mode, in a stack of its own."""
    settings = settings or PipelineSettings()
    stack = cdk.Stack(app, stack_name, env=cdk.Environment(account="123456789012", region="us-east-1"))
    key = MessagingKey(stack, "MessagingKey", settings=settings).key
    index = encrypted_table(stack, "SearchIndexTable", partition_key="productId", key=key, settings=settings)
    layer = lambda_.LayerVersion.from_layer_version_arn(stack, "DependenciesLayer", LAYER_ARN)
    function = task_function(
        stack, TASK, handler="index_product.handler.handler", code=handler_code(HANDLERS_DIR), layer=layer,
        settings=settings, description="Catalog search index (REQUEST_RESPONSE): index one product version",
        environment={"POWERTOOLS_SERVICE_NAME": SERVICE_NAME, "POWERTOOLS_METRICS_NAMESPACE": CATALOG_METRICS.namespace,
                     "SEARCH_INDEX_TABLE_NAME": index.table_name},
    )
    index.grant_read_write_data(function)
    FireAndForgetPipeline(
        stack, "Pipeline", name="catalog-rr", message_key="productId",
        workflow=Workflow(title="Catalog index", definition_file=ASL_FILE, functions={TASK: function},
                          claims_delivery=TASK),
        metrics=CATALOG_METRICS, settings=settings, key=key, layer=layer, invocation_type="REQUEST_RESPONSE",
    )
    return stack


def main(outdir: str) -> None:
    """Synthesize the stack alone into `outdir` (make checkov scans it as it scans the app's)."""
    app = cdk.App(outdir=outdir)
    build(app)
    app.synth()


if __name__ == "__main__":
    import sys

    main(sys.argv[1] if len(sys.argv) > 1 else "cdk.out.request-response")
