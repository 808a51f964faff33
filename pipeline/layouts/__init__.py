"""One package per memory-store layout, behind the `Layout` protocol (`base.py`) and the registry."""
