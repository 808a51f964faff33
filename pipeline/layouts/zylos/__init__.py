"""The `zylos` layout (tiered markdown): reader, writer and its own rules."""
