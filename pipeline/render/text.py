"""Line layout shared by the renderers: width, wrapping, plurals, folder prefixes."""

from __future__ import annotations

from ..text.counts import plural  # noqa: F401 - re-exported for the renderers

import os
import shutil
import textwrap
from typing import IO, Iterable

from ..printable import printable

PIPE_WIDTH = 100  # when stdout is not a terminal: a log or a pipe gets the same lines every time


def is_terminal(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def terminal_width(stream: IO[str]) -> int:
    """Columns to wrap at: the terminal's (or $COLUMNS) at a terminal, else PIPE_WIDTH."""
    if not is_terminal(stream):
        return PIPE_WIDTH
    return max(40, shutil.get_terminal_size((PIPE_WIDTH, 24)).columns)


def wrap(text: str, width: int, first: str = "", rest: str | None = None) -> list[str]:
    """`text` (made printable first, so escapes count) wrapped at `width`; continuation lines
    indented by `rest` (default: as deep as `first`). Words and paths are never split."""
    rest = " " * len(first) if rest is None else rest
    lines = textwrap.wrap(
        printable(text), width=max(width, len(first) + 20), initial_indent=first, subsequent_indent=rest,
        break_long_words=False, break_on_hyphens=False,
    )
    return lines or [first.rstrip()]


def common_folder(paths: Iterable[str]) -> str:
    """The folder (ending in '/') every path is in, or '' when they share none."""
    parts = [p.split("/")[:-1] for p in paths]
    if not parts:
        return ""
    prefix = os.path.commonprefix(parts)
    return "/".join(prefix) + "/" if prefix else ""


def joined(lines: Iterable[str]) -> str:
    # Each line as one line: a file name or reason with a line break cannot forge another.
    return "".join(printable(line) + "\n" for line in lines)
