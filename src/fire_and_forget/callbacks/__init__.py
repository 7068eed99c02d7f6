"""The pattern's entry point for answers to a `.waitForTaskToken` step (entry_point.py), deployed by
fire_and_forget.construct.callbacks.CallbackEntryPoint."""
