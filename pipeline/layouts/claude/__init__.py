"""The `claude` layout (Claude Code auto-memory folders): reader, writer and its own rules."""
