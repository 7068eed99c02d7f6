"""Which carrier ships an order: the one that serves its destination country, from CARRIERS, with DEFAULT_CARRIER for
a served country the table does not list. A destination is served when its ISO 3166 alpha-2 code is in
SERVED_COUNTRIES (default JP,US,CA,GB,DE,FR,AU,NZ,SG); any other raises ShippingUnavailable."""

from __future__ import annotations

from common.errors import ShippingUnavailable
from common.observability import count

CARRIERS = {
    "JP": "JapanPost",
    "US": "UPS",
    "CA": "UPS",
    "GB": "RoyalMail",
    "DE": "DHL",
    "FR": "DHL",
    "AU": "AusPost",
    "NZ": "AusPost",
    "SG": "SingPost",
}
DEFAULT_CARRIER = "DHL"
# The error a carrier's failure answer carries when it will not take the shipment: the saga compensates.
CARRIER_DECLINED = "CarrierDeclined"


def carrier_for(order_id: str, country: str, served: frozenset[str]) -> str:
    """The carrier of `country`; counts ShippingUnavailable and raises it for a country nobody serves."""
    if country not in served:
        count("ShippingUnavailable")
        raise ShippingUnavailable(f"order {order_id}: no carrier serves {country}; served: {sorted(served)}")
    return CARRIERS.get(country, DEFAULT_CARRIER)
