"""A flash sale under load: every order for one unit of one SKU, more orders than stock, sent at 10 times the scaled
StartExecution quota (demos/orders/load.py). What was sold is read from the inventory and payments tables, apart
from the accounting that says where each order ended."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from demos.orders.load import FULL, SMALL, Outcome, run
from fire_and_forget.rehearsal.pipe import ThrottleReading
from tests.support.wide import WIDE

FLASH = (FULL if WIDE else SMALL)[2]  # 30 orders for 20 units here, 90 for 30 under `make wide`


@pytest.fixture(scope="module")
def outcomes(cloud_assembly: Path) -> dict[ThrottleReading, Outcome]:
    return {reading: run(cloud_assembly, FLASH, reading) for reading in ThrottleReading}


@pytest.mark.parametrize("reading", list(ThrottleReading), ids=lambda r: r.name)
def test_exactly_the_stock_is_sold_and_every_other_order_fails_as_out_of_stock(
        outcomes: dict[ThrottleReading, Outcome], reading: ThrottleReading) -> None:
    outcome = outcomes[reading]
    result, stock = outcome.result, FLASH.stock
    assert stock is not None and result.messages > stock
    assert (outcome.sold, outcome.left, outcome.charged) == (stock, 0, stock)  # none oversold, each sale paid once
    assert result.places == {"succeeded": stock, "failure DLQ": result.messages - stock}
    errors = Counter(fate.error for fate in result.ledger.fates.values() if fate.error)
    assert errors == {"OutOfStock": result.messages - stock}
    assert result.quiet and result.ledger.balanced  # each failure announced once, none lost
