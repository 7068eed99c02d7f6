"""Typed runtime settings, one model per function, parsed from the environment the CDK app sets.

Value types here and in the adapters are NamedTuples, not frozen dataclasses: creating a dataclass execs its
generated methods (~0.4 ms each), and a dozen of them were a visible share of every cold start.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import NamedTuple

from fire_and_forget.runtime.deliveries import stale_after_from_env

MIN_IDEMPOTENCY_EXPIRY_SECONDS = 14 * 24 * 3600  # the DLQ retention and redrive window
DEFAULT_IDEMPOTENCY_EXPIRY_SECONDS = 15 * 24 * 3600
DEFAULT_SERVED_COUNTRIES = "JP,US,CA,GB,DE,FR,AU,NZ,SG"


class ConfigurationError(Exception):
    """The function is deployed with missing or wrong environment variables: a deployment bug."""


def _required(env: Mapping[str, str], name: str) -> str:
    value = env.get(name, "").strip()
    if not value:
        raise ConfigurationError(f"environment variable {name} is required")
    return value


class IdempotencySettings(NamedTuple):
    table_name: str
    expiry_seconds: int

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> IdempotencySettings:
        raw = env.get("IDEMPOTENCY_EXPIRY_SECONDS", str(DEFAULT_IDEMPOTENCY_EXPIRY_SECONDS))
        try:
            expiry = int(raw)
        except ValueError:
            raise ConfigurationError(f"IDEMPOTENCY_EXPIRY_SECONDS must be an integer, got {raw!r}") from None
        # A shorter expiry would let a message redriven from the DLQ within its retention run a step again.
        if expiry < MIN_IDEMPOTENCY_EXPIRY_SECONDS:
            raise ConfigurationError(f"IDEMPOTENCY_EXPIRY_SECONDS must be >= {MIN_IDEMPOTENCY_EXPIRY_SECONDS}")
        return cls(table_name=_required(env, "IDEMPOTENCY_TABLE_NAME"), expiry_seconds=expiry)


class ReserveInventorySettings(NamedTuple):
    inventory_table: str
    reservations_table: str
    deliveries_table: str
    orders_table: str
    idempotency: IdempotencySettings
    claim_stale_after_seconds: int | None = None  # REQUEST_RESPONSE only (fire_and_forget.runtime.deliveries)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> ReserveInventorySettings:
        try:
            stale_after = stale_after_from_env(env)
        except ValueError as error:
            raise ConfigurationError(str(error)) from None
        return cls(
            inventory_table=_required(env, "INVENTORY_TABLE_NAME"),
            reservations_table=_required(env, "RESERVATIONS_TABLE_NAME"),
            deliveries_table=_required(env, "DELIVERIES_TABLE_NAME"),
            orders_table=_required(env, "ORDERS_TABLE_NAME"),
            idempotency=IdempotencySettings.from_env(env),
            claim_stale_after_seconds=stale_after,
        )


class ChargePaymentSettings(NamedTuple):
    payments_table: str
    orders_table: str  # read only: whether this attempt owns the order, before it refunds another attempt's charge
    default_credit_limit: Decimal
    idempotency: IdempotencySettings
    deliveries_table: str | None = None  # where it reports the order's progress (common/progress.py)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> ChargePaymentSettings:
        raw = env.get("DEFAULT_CREDIT_LIMIT", "5000")
        try:
            limit = Decimal(raw)
        except InvalidOperation:
            raise ConfigurationError(f"DEFAULT_CREDIT_LIMIT must be a decimal number, got {raw!r}") from None
        if not limit.is_finite() or limit < 0:
            raise ConfigurationError(f"DEFAULT_CREDIT_LIMIT must be a finite number >= 0, got {raw!r}")
        return cls(
            payments_table=_required(env, "PAYMENTS_TABLE_NAME"),
            orders_table=_required(env, "ORDERS_TABLE_NAME"),
            default_credit_limit=limit,
            idempotency=IdempotencySettings.from_env(env),
            deliveries_table=env.get("DELIVERIES_TABLE_NAME") or None,
        )


def _served_countries(env: Mapping[str, str]) -> frozenset[str]:
    raw = env.get("SERVED_COUNTRIES", DEFAULT_SERVED_COUNTRIES)
    countries = frozenset(code.strip().upper() for code in raw.split(",") if code.strip())
    bad = sorted(code for code in countries if len(code) != 2 or not code.isalpha() or not code.isascii())
    if bad or not countries:
        raise ConfigurationError(f"SERVED_COUNTRIES must be ISO 3166 alpha-2 codes, got {raw!r}")
    return countries


class ArrangeShippingSettings(NamedTuple):
    shipments_table: str
    orders_table: str
    served_countries: frozenset[str]
    idempotency: IdempotencySettings
    deliveries_table: str | None = None  # where it reports the order's progress (common/progress.py)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> ArrangeShippingSettings:
        return cls(
            shipments_table=_required(env, "SHIPMENTS_TABLE_NAME"),
            orders_table=_required(env, "ORDERS_TABLE_NAME"),
            served_countries=_served_countries(env),
            idempotency=IdempotencySettings.from_env(env),
            deliveries_table=env.get("DELIVERIES_TABLE_NAME") or None,
        )


class BookCarrierSettings(NamedTuple):
    waits_table: str
    carrier_requests_queue_url: str
    served_countries: frozenset[str]
    timeout_seconds: int  # how long the workflow waits for the carrier (BookCarrier's TimeoutSeconds)
    deliveries_table: str | None = None  # where it reports the order's progress (common/progress.py)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> BookCarrierSettings:
        raw = _required(env, "CARRIER_TIMEOUT_SECONDS")
        if not raw.isdigit() or int(raw) <= 0:
            raise ConfigurationError(f"CARRIER_TIMEOUT_SECONDS must be a positive number of seconds, got {raw!r}")
        return cls(
            waits_table=_required(env, "CALLBACK_WAITS_TABLE_NAME"),
            carrier_requests_queue_url=_required(env, "CARRIER_REQUESTS_QUEUE_URL"),
            served_countries=_served_countries(env),
            timeout_seconds=int(raw),
            deliveries_table=env.get("DELIVERIES_TABLE_NAME") or None,
        )


class RefundPaymentSettings(NamedTuple):
    payments_table: str
    orders_table: str
    idempotency: IdempotencySettings

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> RefundPaymentSettings:
        return cls(
            payments_table=_required(env, "PAYMENTS_TABLE_NAME"),
            orders_table=_required(env, "ORDERS_TABLE_NAME"),
            idempotency=IdempotencySettings.from_env(env),
        )


class ReleaseInventorySettings(NamedTuple):
    inventory_table: str
    reservations_table: str
    orders_table: str
    idempotency: IdempotencySettings

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> ReleaseInventorySettings:
        return cls(
            inventory_table=_required(env, "INVENTORY_TABLE_NAME"),
            reservations_table=_required(env, "RESERVATIONS_TABLE_NAME"),
            orders_table=_required(env, "ORDERS_TABLE_NAME"),
            idempotency=IdempotencySettings.from_env(env),
        )


class CancelShipmentSettings(NamedTuple):
    shipments_table: str
    orders_table: str
    idempotency: IdempotencySettings

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> CancelShipmentSettings:
        return cls(
            shipments_table=_required(env, "SHIPMENTS_TABLE_NAME"),
            orders_table=_required(env, "ORDERS_TABLE_NAME"),
            idempotency=IdempotencySettings.from_env(env),
        )
