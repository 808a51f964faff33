"""Layout-neutral text grammars shared by readers and writers."""
