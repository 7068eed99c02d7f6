"""Fixtures of the pipeline's tests: the Reconciler's account (tests/pipeline/reconciler_account.py)."""

from tests.pipeline.reconciler_account import reconciler_account

__all__ = ["reconciler_account"]
