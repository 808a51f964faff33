"""The `crux` layout (CRUX memories): reader, writer and its own rules."""
