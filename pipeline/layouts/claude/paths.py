"""Where a key puts a memory of a claude store: its folder, its file name, and its place in the
run's archive (`<folder>/.archive/<run-id>/<name>`). The decisions, the MEMORY.md rebuild, the
report and the writer all name files this way, so it sits below them all (none imports the writer).
"""

from __future__ import annotations

import posixpath

from ...model import file_of

ARCHIVE_DIR = ".archive"


def folder_of(key: str) -> str:
    # A memory kept inside MEMORY.md is keyed `<folder>/MEMORY.md#<section>/<n>`.
    return posixpath.dirname(file_of(key)) or "."


def _in_folder(folder: str, name: str) -> str:
    return name if folder == "." else f"{folder}/{name}"


def archive_path(folder: str, run_id: str, name: str) -> str:
    return _in_folder(folder, f"{ARCHIVE_DIR}/{run_id}/{name}")


def _name(key: str) -> str:
    path = file_of(key)
    return path.rsplit("/", 1)[-1] + key[len(path):]
