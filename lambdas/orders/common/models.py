"""The order message: pydantic v2 models and the one parse function that turns any bad body into InvalidOrder."""

from __future__ import annotations

import os
from decimal import Decimal
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, field_validator, model_validator

from common.errors import InvalidOrder
from common.order_rules import (
    CURRENCY_MINOR_UNITS,
    MAX_AMOUNT,
    MAX_BODY_CHARS,
    MAX_LINE_ITEMS,
    MAX_QUANTITY,
    Currency,
    decimals_of,
)

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


# No pydantic plugins are used. Without this, building the first model scans the entry points of every installed
# distribution for plugins: the largest single cost of building these models at cold start. pydantic reads it when
# the first model is built; the function's environment may set it too.
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")

# strict: "2" is not a quantity and 1.0 is not an int; forbid: a misspelt field is an error, not ignored. Set on each
# model rather than through a shared base class, which pydantic would build as one more (empty) model at import.
_STRICT = ConfigDict(strict=True, extra="forbid", frozen=True)


class LineItem(BaseModel):
    model_config = _STRICT
    sku: Sku
    quantity: int = Field(gt=0, le=MAX_QUANTITY)


class Payment(BaseModel):
    model_config = _STRICT
    amount: Decimal = Field(gt=0, le=MAX_AMOUNT)
    # A Literal, not a validator: pydantic-core checks it natively and names the accepted codes in its message.
    currency: Currency
    paymentToken: PaymentToken  # wire names are camelCase, as the producer sends them

    @model_validator(mode="after")
    def _amount_fits_currency(self) -> Payment:
        if decimals_of(self.amount) > CURRENCY_MINOR_UNITS[self.currency]:
            raise ValueError(f"amount has more decimals than {self.currency} allows")
        return self


class ShippingAddress(BaseModel):
    model_config = _STRICT
    name: ShortText
    line1: Text
    city: ShortText
    postalCode: PostalCode
    country: CountryCode


class Order(BaseModel):
    """One order as the producer sends it in the SQS message body."""

    model_config = _STRICT

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
            # pydantic-core cannot build a json_invalid error without ctx.error (tests/unit/test_order_messages.py).
            problems.append(f"body is not valid JSON ({detail['ctx']['error']})")
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
        # Nor a pattern mismatch without ctx.pattern; a pattern without a hint still gets a message.
        return PATTERN_HINTS.get(str(detail["ctx"]["pattern"]), "has an unexpected format")
    return str(detail["msg"]).removeprefix("Value error, ")
