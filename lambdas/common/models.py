"""The order message: pydantic v2 models and the one parse function that turns any bad body into InvalidOrder."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, field_validator, model_validator

from common.errors import InvalidOrder

# ISO 4217 currencies the payment provider accepts, with their minor units (JPY has none). An explicit
# allow-list: an unknown code is a producer bug we want to surface, not a charge in a currency we cannot settle.
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

_ID = r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$"
_SKU = r"^[A-Z0-9][A-Z0-9_-]*$"
_TEXT = r"^\S(?:.*\S)?$"  # free text may not be blank or padded: a label printer prints it as is
_POSTAL = r"^[A-Za-z0-9][A-Za-z0-9 -]*$"
_COUNTRY = r"^[A-Z]{2}$"
_TOKEN = r"^tok_[A-Za-z0-9_]+$"
# What a producer should do when a pattern does not match; a regex alone is not an actionable message.
PATTERN_HINTS = {
    _ID: "use letters, digits and _ . : - only, starting with a letter or digit",
    _SKU: "use upper-case letters, digits, _ and - only",
    _TEXT: "must not be blank or start or end with whitespace",
    _POSTAL: "use letters, digits, spaces and - only",
    _COUNTRY: "use the ISO 3166-1 alpha-2 code in upper case, e.g. GB",
    _TOKEN: "must be a payment token of the form tok_...",
}

Identifier = Annotated[str, StringConstraints(min_length=1, max_length=64, pattern=_ID)]
Sku = Annotated[str, StringConstraints(min_length=1, max_length=64, pattern=_SKU)]
Text = Annotated[str, StringConstraints(min_length=1, max_length=200, pattern=_TEXT)]
ShortText = Annotated[str, StringConstraints(min_length=1, max_length=100, pattern=_TEXT)]
PostalCode = Annotated[str, StringConstraints(min_length=2, max_length=16, pattern=_POSTAL)]
CountryCode = Annotated[str, StringConstraints(min_length=2, max_length=2, pattern=_COUNTRY)]
PaymentToken = Annotated[str, StringConstraints(min_length=5, max_length=128, pattern=_TOKEN)]


class _Strict(BaseModel):
    # strict: "2" is not a quantity and 1.0 is not an int; forbid: a misspelt field is an error, not ignored.
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


class LineItem(_Strict):
    sku: Sku
    quantity: int = Field(gt=0, le=MAX_QUANTITY)


class Payment(_Strict):
    amount: Decimal = Field(gt=0, le=MAX_AMOUNT)
    currency: str
    paymentToken: PaymentToken  # wire names are camelCase, as the producer sends them

    @field_validator("currency")
    @classmethod
    def _known_currency(cls, value: str) -> str:
        if value not in CURRENCY_MINOR_UNITS:
            raise ValueError(f"currency must be one of {', '.join(sorted(CURRENCY_MINOR_UNITS))}")
        return value

    @model_validator(mode="after")
    def _amount_fits_currency(self) -> Payment:
        exponent = self.amount.as_tuple().exponent
        decimals = -exponent if isinstance(exponent, int) and exponent < 0 else 0
        if decimals > CURRENCY_MINOR_UNITS[self.currency]:
            raise ValueError(f"amount has more decimals than {self.currency} allows")
        return self


class ShippingAddress(_Strict):
    name: ShortText
    line1: Text
    city: ShortText
    postalCode: PostalCode
    country: CountryCode


class Order(_Strict):
    """One order as the producer sends it in the SQS message body."""

    orderId: Identifier
    customerId: Identifier
    items: list[LineItem] = Field(min_length=1, max_length=MAX_LINE_ITEMS)
    payment: Payment
    shippingAddress: ShippingAddress

    @field_validator("items")
    @classmethod
    def _one_line_per_sku(cls, items: list[LineItem]) -> list[LineItem]:
        # DynamoDB rejects a transaction that touches one item twice, and two lines for one sku are ambiguous.
        seen: set[str] = set()
        for item in items:
            if item.sku in seen:
                raise ValueError(f"sku {item.sku} appears on more than one line; merge the quantities")
            seen.add(item.sku)
        return items

    def to_json_dict(self) -> dict[str, Any]:
        """JSON-safe dict (amount as a string) for the task output; Lambda cannot marshal Decimal."""
        return self.model_dump(mode="json")


def parse_order(body: object) -> Order:
    """Validate an SQS message body; any defect becomes InvalidOrder with a message a person can act on."""
    if not isinstance(body, str | bytes):
        raise InvalidOrder(f"order body must be a JSON string, got {type(body).__name__}")
    if len(body) > MAX_BODY_CHARS:
        raise InvalidOrder(f"order body is {len(body)} characters; the limit is {MAX_BODY_CHARS}")
    try:
        return Order.model_validate_json(body)
    except ValidationError as error:
        raise InvalidOrder(describe(error)) from None  # the cause repeats the input; keep logs short


def describe(error: ValidationError, limit: int = 5) -> str:
    """Human text from a ValidationError: where each problem is and what is wrong, never the raw input."""
    problems = []
    for detail in error.errors(include_url=False, include_input=False)[:limit]:
        where = _location(detail["loc"])
        if detail["type"] == "json_invalid":
            problems.append(f"body is not valid JSON ({detail.get('ctx', {}).get('error', 'unparseable')})")
        elif detail["type"] == "model_type" and not detail["loc"]:
            problems.append("body must be a JSON object with orderId, customerId, items, payment, shippingAddress")
        else:
            problems.append(f"{where or 'body'}: {_message(detail)}")
    more = error.error_count() - limit
    suffix = f" (and {more} more)" if more > 0 else ""
    return "invalid order: " + "; ".join(problems) + suffix


def _location(loc: tuple[int | str, ...]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _message(detail: Any) -> str:
    if detail["type"] == "extra_forbidden":
        return "unknown field (remove it)"
    if detail["type"] == "missing":
        return "required field is missing"
    if detail["type"] == "string_pattern_mismatch":
        return PATTERN_HINTS.get(str(detail.get("ctx", {}).get("pattern")), "has an unexpected format")
    return str(detail["msg"]).removeprefix("Value error, ")


def order_from_context(context: object) -> tuple[Order, str]:
    """The validated order and attemptId (messageId) from the context ReserveInventory returned.

    The order went through the state machine as JSON, so it is validated again by the same rules as the body:
    a task wired to the wrong input fails with InvalidOrder instead of charging or shipping garbage.
    """
    if not isinstance(context, dict) or not isinstance(context.get("order"), dict):
        raise InvalidOrder("task input has no 'order' object; expected the output of ReserveInventory")
    attempt_id = context.get("messageId")
    if not isinstance(attempt_id, str) or not attempt_id:
        raise InvalidOrder("task input has no messageId (the attempt id); expected the output of ReserveInventory")
    return parse_order(json.dumps(context["order"])), attempt_id
