"""ArrangeShipping: books the shipment of the order."""
