"""BookCarrier: hand the shipment to the carrier and wait, hours if need be, for its answer."""
