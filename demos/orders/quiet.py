"""What the demo's processes keep out of their output: the failures the run provokes on purpose, as the interpreter
and the handlers log them."""

from __future__ import annotations

import logging
import warnings


def quiet_logs() -> None:
    logging.getLogger("moto.stepfunctions.parser").setLevel(logging.CRITICAL)
    # Powertools warns when an invocation records no metric (a compensation with nothing to undo): not news here.
    warnings.filterwarnings("ignore", message="No application metrics to publish")
    logging.getLogger("order-saga").setLevel(logging.WARNING)
    logging.getLogger("catalog-index").setLevel(logging.WARNING)
