"""Limits of an order, shared by the pydantic model (ReserveInventory) and the light checks of later steps.

Kept apart from ``common.models`` so ChargePayment and ArrangeShipping can apply the same rules without importing
pydantic at cold start.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Literal

# ISO 4217 currencies the payment provider accepts. An explicit allow-list: an unknown code is a producer bug we
# want to surface, not a charge in a currency we cannot settle. CURRENCY_MINOR_UNITS must list the same codes.
Currency = Literal["AUD", "CAD", "CHF", "EUR", "GBP", "JPY", "NZD", "SGD", "USD"]
# Minor units per currency: how many decimals an amount may carry (JPY has none).
CURRENCY_MINOR_UNITS: dict[str, int] = {
    "AUD": 2,
    "CAD": 2,
    "CHF": 2,
    "EUR": 2,
    "GBP": 2,
    "JPY": 0,
    "NZD": 2,
    "SGD": 2,
    "USD": 2,
}

MAX_BODY_CHARS = 64_000  # far above any real order; stops a pathological body before it is parsed
MAX_LINE_ITEMS = 50  # one TransactWriteItems holds 100 actions: 50 stock updates + the reservation fit
MAX_QUANTITY = 1_000
MAX_AMOUNT = Decimal("1000000")


def decimals_of(amount: Decimal) -> int:
    """How many decimals ``amount`` is written with ("38.50" has 2, "1500" and "15E2" have 0)."""
    exponent = amount.as_tuple().exponent
    return -exponent if isinstance(exponent, int) and exponent < 0 else 0


def amount_problem(amount: Decimal, currency: str) -> str | None:
    """Why ``amount`` cannot be charged in ``currency``, or None when it can."""
    if not amount.is_finite() or amount <= 0 or amount > MAX_AMOUNT:
        return f"amount must be greater than 0 and at most {MAX_AMOUNT}"
    if decimals_of(amount) > CURRENCY_MINOR_UNITS[currency]:
        return f"amount has more decimals than {currency} allows"
    return None
