"""ReleaseInventory: compensation that returns the stock a failed saga attempt reserved."""
