"""The pipeline's own functions: the Reconciler and the Redriver (the construct's self-healing, docs/design.md)."""
