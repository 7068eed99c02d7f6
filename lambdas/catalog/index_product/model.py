"""The product-change message as a strict pydantic model, its parse into InvalidDocument, and its search terms."""

from __future__ import annotations

import os
import re
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from index_product.errors import InvalidDocument

MAX_VERSION = 2**53  # the largest integer every JSON producer (JavaScript included) holds exactly
MAX_TITLE = 200
MAX_DESCRIPTION = 2000
MAX_TAGS = 20
MAX_TAG = 40
MAX_TERMS = 200
PROBLEMS_SHOWN = 3

# No pydantic plugins are used; without this the first model build scans every installed distribution for them.
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")

ProductId = Annotated[str, StringConstraints(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_-]+$")]
Tag = Annotated[str, StringConstraints(min_length=1, max_length=MAX_TAG)]


class ProductDocument(BaseModel):
    """One product change as the caller fires it; camelCase field names are the wire names."""

    # strict: "3" is not a version and true is not 1; forbid: a misspelt key is refused rather than dropped.
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    productId: ProductId
    version: int = Field(ge=1, le=MAX_VERSION)
    title: str = Field(min_length=1, max_length=MAX_TITLE)
    description: str = Field(default="", max_length=MAX_DESCRIPTION)
    tags: list[Tag] = Field(default_factory=list, max_length=MAX_TAGS)


def parse_document(body: str) -> ProductDocument:
    """The document in an SQS body; any defect (not JSON, nested too deep, a bad field) raises InvalidDocument."""
    try:
        return ProductDocument.model_validate_json(body)
    except ValidationError as error:
        raise InvalidDocument(explain(error)) from None  # the chained error would repeat the input


def explain(error: ValidationError) -> str:
    """'invalid product document: <field>: <what to change>; ...' for the first few problems."""
    details = error.errors(include_url=False, include_input=False)
    shown = "; ".join(_problem(detail) for detail in details[:PROBLEMS_SHOWN])
    hidden = len(details) - PROBLEMS_SHOWN
    return f"invalid product document: {shown}" + (f" (+{hidden} more)" if hidden > 0 else "")


def _problem(detail: Any) -> str:
    kind = detail["type"]
    field = ".".join(str(part) for part in detail["loc"]) or "body"
    if kind == "json_invalid":
        # pydantic-core's JSON parser stops at a nesting depth limit and says so here ("recursion limit exceeded").
        return f"body is not usable JSON: {detail['ctx']['error']}"
    if kind in {"model_type", "model_attributes_type"}:
        return "body must be a JSON object with productId, version, title and optionally description, tags"
    if kind == "extra_forbidden":
        return f"{field}: not a field of a product document (remove it)"
    if kind == "missing":
        return f"{field}: is required"
    if kind == "string_pattern_mismatch":
        return f"{field}: use only letters, digits, '_' and '-'"
    return f"{field}: {detail['msg']}"


_WORD = re.compile(r"[^\W_]+")  # runs of letters and digits in any script; punctuation and '_' separate words


def search_terms(document: ProductDocument) -> list[str]:
    """Distinct lower-cased words of title, description and tags, in that order, at most MAX_TERMS of them."""
    terms: dict[str, None] = {}  # a dict keeps first-seen order, which decides what the cap drops
    for text in (document.title, document.description, *document.tags):
        for word in _WORD.findall(text.lower()):
            terms.setdefault(word, None)
            if len(terms) == MAX_TERMS:
                return list(terms)
    return list(terms)
