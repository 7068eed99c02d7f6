"""CancelShipment: compensation that cancels the shipment a failed saga attempt arranged."""
