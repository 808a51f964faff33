"""`os.walk` as an explicit stack: Python 3.11's os.walk calls itself once per level, so a tree
nested deeper than the recursion limit (about a thousand folders: a runaway script, a planted store)
ended a command with RecursionError. The same triples in the same order (top-down, depth first,
each folder before its sub-folders); the caller may prune or reorder `dirnames` in place; a
symlinked folder is listed among `dirnames` and never walked into (os.walk's `followlinks=False`),
a folder that cannot be listed is passed over (os.walk's default)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path


def walk_down(top: str | Path) -> Iterator[tuple[str, list[str], list[str]]]:
    """(dirpath, dirnames, filenames) of `top` and every folder below it, as `os.walk(top)`."""
    stack = [os.fspath(top)]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as entries:
                listed = list(entries)
        except OSError:
            continue
        dirs: list[str] = []
        files: list[str] = []
        links: set[str] = set()  # the folders among `dirs` that are symlinks: listed, never walked into
        for entry in listed:
            try:
                is_dir = entry.is_dir()  # a symlink to a folder counts as one, as in os.walk
                if is_dir and entry.is_symlink():
                    links.add(entry.name)
            except OSError:
                is_dir = False
            (dirs if is_dir else files).append(entry.name)
        yield folder, dirs, files
        stack.extend(os.path.join(folder, d) for d in reversed(dirs) if d not in links)
