"""ReserveInventory: the first task of the order saga."""
