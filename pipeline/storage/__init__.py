"""Layout-neutral access to the files of a store: confined reading (files.py), and the folders the
journal's changes are made in (anchored.py)."""
