"""Layout-neutral, read-only access to the files of a store."""
