"""The Powertools Tracer, for the handlers that import it (see common.observability for who does not)."""

from __future__ import annotations

from aws_lambda_powertools.tracing import Tracer

# Patch botocore only: patch_all would import every library X-Ray knows (requests, sqlite3, ...) at cold start.
tracer = Tracer(patch_modules=("botocore",))


def annotate(order_id: str) -> None:
    """Make the trace searchable by order id."""
    tracer.put_annotation(key="orderId", value=order_id)
