"""IndexProduct's runtime settings: the environment variables the construct sets, read into one typed object."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from fire_and_forget.runtime.deliveries import stale_after_from_env


@dataclass(frozen=True)
class IndexProductSettings:
    deliveries_table: str
    claim_ttl_seconds: int
    search_index_table: str
    claim_stale_after_seconds: int | None = None  # REQUEST_RESPONSE only (fire_and_forget.runtime.deliveries)

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> IndexProductSettings:
        def required(name: str) -> str:
            value = environ.get(name, "")
            if not value:
                raise LookupError(f"environment variable {name} is not set; the pipeline construct must set it")
            return value

        ttl = required("DELIVERY_CLAIM_TTL_SECONDS")
        if not ttl.isdigit() or int(ttl) <= 0:
            raise ValueError(f"DELIVERY_CLAIM_TTL_SECONDS must be a positive number of seconds, got {ttl!r}")
        return cls(
            deliveries_table=required("DELIVERIES_TABLE_NAME"),
            claim_ttl_seconds=int(ttl),
            search_index_table=required("SEARCH_INDEX_TABLE_NAME"),
            claim_stale_after_seconds=stale_after_from_env(environ),
        )
