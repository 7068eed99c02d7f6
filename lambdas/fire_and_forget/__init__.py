"""The handler-side runtime of the fire-and-forget pipeline construct (stacks/fire_and_forget)."""
