"""Settings models: parsed from the environment, with the contract's defaults and guards."""

from __future__ import annotations

from decimal import Decimal

import pytest

from common.settings import (
    ArrangeShippingSettings,
    CancelShipmentSettings,
    ChargePaymentSettings,
    ConfigurationError,
    IdempotencySettings,
    ReserveInventorySettings,
)

BASE = {"IDEMPOTENCY_TABLE_NAME": "idem"}


def test_idempotency_expiry_defaults_to_fifteen_days() -> None:
    assert IdempotencySettings.from_env(BASE).expiry_seconds == 1_296_000


@pytest.mark.parametrize("value", ["1209599", "3600", "soon"])
def test_idempotency_expiry_below_fourteen_days_or_garbage_is_refused(value: str) -> None:
    with pytest.raises(ConfigurationError, match="IDEMPOTENCY_EXPIRY_SECONDS"):
        IdempotencySettings.from_env({**BASE, "IDEMPOTENCY_EXPIRY_SECONDS": value})


def test_a_missing_table_name_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="DELIVERIES_TABLE_NAME"):
        ReserveInventorySettings.from_env({**BASE, "INVENTORY_TABLE_NAME": "i", "RESERVATIONS_TABLE_NAME": "r"})


def test_credit_limit_defaults_to_5000_and_must_be_a_number() -> None:
    env = {**BASE, "PAYMENTS_TABLE_NAME": "p", "ORDERS_TABLE_NAME": "o"}
    assert ChargePaymentSettings.from_env(env).default_credit_limit == Decimal("5000")
    with pytest.raises(ConfigurationError):
        ChargePaymentSettings.from_env({**env, "DEFAULT_CREDIT_LIMIT": "lots"})


def test_served_countries_default_and_parsing() -> None:
    env = {**BASE, "SHIPMENTS_TABLE_NAME": "s", "ORDERS_TABLE_NAME": "o"}
    assert ArrangeShippingSettings.from_env(env).served_countries == frozenset(
        {"JP", "US", "CA", "GB", "DE", "FR", "AU", "NZ", "SG"}
    )
    assert ArrangeShippingSettings.from_env({**env, "SERVED_COUNTRIES": " jp, us "}).served_countries == {"JP", "US"}
    with pytest.raises(ConfigurationError):
        ArrangeShippingSettings.from_env({**env, "SERVED_COUNTRIES": "JPN"})


def test_cancel_shipment_needs_the_shipments_table() -> None:
    assert CancelShipmentSettings.from_env(
        {**BASE, "SHIPMENTS_TABLE_NAME": "s", "ORDERS_TABLE_NAME": "o"}
    ).shipments_table == "s"
    with pytest.raises(ConfigurationError, match="SHIPMENTS_TABLE_NAME"):
        CancelShipmentSettings.from_env(BASE)
