"""Which handlers carry the X-Ray SDK at cold start, and that traced ones still annotate the order id."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

LAMBDAS = Path(__file__).resolve().parents[2] / "lambdas" / "orders"
# The order asset: the handlers, plus the construct's runtime beside them.
ENV = {"PYTHONPATH": f"{LAMBDAS}:{LAMBDAS.parent}", "POWERTOOLS_SERVICE_NAME": "order-saga",
       "AWS_DEFAULT_REGION": "us-east-1", "LAMBDA_TASK_ROOT": str(LAMBDAS)}


def imports_xray(module: str) -> bool:
    code = f"import sys, {module}; print('aws_xray_sdk' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], env=ENV, capture_output=True, text=True, check=True)
    return done.stdout.strip() == "True"


def test_reserve_inventory_leaves_the_xray_sdk_out_of_its_cold_start() -> None:
    # It must import pydantic; without the Tracer its cold start stays within budget (docs/handlers.md).
    assert not imports_xray("reserve_inventory.handler")


@pytest.mark.parametrize("module", ["charge_payment.handler", "arrange_shipping.handler", "refund_payment.handler"])
def test_the_other_handlers_are_traced(module: str) -> None:
    assert imports_xray(module)


def test_correlate_annotates_the_trace_only_where_a_tracer_exists(monkeypatch: pytest.MonkeyPatch) -> None:
    from common import observability, tracing

    annotated: list[str] = []
    monkeypatch.setattr(tracing, "annotate", annotated.append)
    observability.correlate(order_id="ord-1")
    assert annotated == ["ord-1"]
    monkeypatch.delitem(sys.modules, "common.tracing")
    observability.correlate(order_id="ord-2")
    assert annotated == ["ord-1"]
