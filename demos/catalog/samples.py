"""Sample product-change messages for the catalog example's demo: what a catalog system fires, and what should become
of each (indexed, superseded by a newer version already in the index, or refused as an invalid document)."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from enum import StrEnum


class ProductFate(StrEnum):
    """What should become of a product message, decided when it is made (never read back from the handler)."""

    INDEXED = "indexed"
    SUPERSEDED = "superseded"
    INVALID = "in failure DLQ"


@dataclass(frozen=True)
class SampleProduct:
    body: str
    expected: ProductFate
    product_id: str | None  # None for an invalid document
    version: int | None


@dataclass(frozen=True)
class CatalogPlan:
    """Two waves: the first holds each product once (and the invalid documents); the second, fired after the first
    has run, holds older versions and producer resends of products already indexed, so each ends superseded."""

    first: list[SampleProduct]
    second: list[SampleProduct]
    sqs_duplicates: int  # deliveries SQS makes twice (the same messageId, two executions)

    @property
    def samples(self) -> list[SampleProduct]:
        return self.first + self.second

    def newest(self) -> dict[str, int]:
        """Product id -> the highest version of it sent as a valid document: what the index must hold at the end."""
        newest: dict[str, int] = {}
        for sample in self.samples:
            if sample.product_id is not None and sample.version is not None:
                newest[sample.product_id] = max(sample.version, newest.get(sample.product_id, 0))
        return newest


INVALID_SHARE = 0.15
OLDER_SHARE = 0.12  # an older version of a product arrives after its newer one (SQS standard keeps no order)
RESEND_SHARE = 0.06  # a producer sends the same version again, as a new message
SQS_DUPLICATE_SHARE = 0.08
_ADJECTIVES = ("Trail", "Copper", "Oolong", "Garden")
_NOUNS = ("Shoe", "Kettle", "Tea", "Hose")
TAGS = ("outdoor", "kitchen", "tea", "garden", "sale", "new")


def plan_products(count: int, seed: int) -> CatalogPlan:
    """`count` first-wave messages and the second wave they imply; the same seed gives the same plan."""
    rng = random.Random(seed)
    first: list[SampleProduct] = []
    for number in range(1, count + 1):
        if rng.random() < INVALID_SHARE:
            first.append(SampleProduct(rng.choice(_INVALID), ProductFate.INVALID, None, None))
        else:
            first.append(_product(f"prod-{number:04d}", rng.randint(2, 9), rng, ProductFate.INDEXED))
    valid = [s for s in first if s.expected is ProductFate.INDEXED]
    second = [
        _product(s.product_id or "", rng.randint(1, (s.version or 2) - 1), rng, ProductFate.SUPERSEDED)
        for s in rng.sample(valid, k=max(1, int(count * OLDER_SHARE)))
    ]
    second += [
        SampleProduct(s.body, ProductFate.SUPERSEDED, s.product_id, s.version)
        for s in rng.sample(valid, k=max(1, int(count * RESEND_SHARE)))
    ]
    rng.shuffle(second)
    return CatalogPlan(first, second, max(1, int(count * SQS_DUPLICATE_SHARE)))


def _product(product_id: str, version: int, rng: random.Random, expected: ProductFate) -> SampleProduct:
    document = {
        "productId": product_id,
        "version": version,
        "title": f"{rng.choice(_ADJECTIVES)} {rng.choice(_NOUNS)} v{version}",
        "description": "A product of the offline demo.",
        "tags": rng.sample(TAGS, k=rng.randint(0, 3)),
    }
    return SampleProduct(json.dumps(document), expected, product_id, version)


# Documents a careless producer sends; each must end in the failure DLQ as InvalidDocument.
_INVALID = (
    "not json at all",
    "",
    "[]",
    "null",
    '{"productId": "prod-x"}',
    '{"productId": "prod-x", "version": "3", "title": "a string version"}',
    '{"productId": "prod x", "version": 1, "title": "a space in the id"}',
    '{"productId": "prod-x", "version": 0, "title": "version below 1"}',
    '{"productId": "prod-x", "version": 1, "title": "T", "price": 3}',
)
