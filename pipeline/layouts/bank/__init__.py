"""The `bank` layout (iii record banks): reader, writer and its own rules."""
