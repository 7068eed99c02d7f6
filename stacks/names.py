"""The example app's stack names, one place for the CDK app (app.py, stacks/config.py) and the CDK-free demos."""

from __future__ import annotations

from fire_and_forget.runtime.outputs import DEFAULT_STACK_NAME

__all__ = ["DEFAULT_STACK_NAME", "catalog_stack_name"]

CATALOG_SUFFIX = "-Catalog"


def catalog_stack_name(order_stack_name: str = DEFAULT_STACK_NAME) -> str:
    """The catalog example's stack: the order stack's name (ff:stackName) plus -Catalog."""
    return f"{order_stack_name}{CATALOG_SUFFIX}"
