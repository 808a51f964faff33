"""The exception root of memconsolidate, and what each error means for the exit code.

Every exception the package raises on purpose derives from `MemconsolidateError` and carries its
`exit_code`: the command line prints its message as one line on stderr and exits with that code
(2 bad usage, config or path; 1 a run that failed), never a traceback.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path


class MemconsolidateError(Exception):
    """The root: a run that could not complete (exit 1) unless a subclass says otherwise."""

    exit_code: int = 1


class UsageError(MemconsolidateError):
    """Bad usage, path or configuration: exit 2, one line, no traceback."""

    exit_code = 2


class ConfigError(UsageError):
    """A configuration file that cannot be read or does not validate."""


class RunFailed(MemconsolidateError):
    """The run could not complete (exit 1)."""

    exit_code = 1


# What keeps a store from being written that is the user's to fix, like a bad path: permissions, an
# immutable file or folder (chattr +i), a read-only file system.
UNWRITABLE = (errno.EROFS, errno.EACCES, errno.EPERM)


class StoreUnwritable(RunFailed):
    """A run the store refused to be written by (UNWRITABLE), rolled back whole: exit 2, as the
    help says of a store that cannot be written; a full disk is still a run that failed (exit 1)."""

    exit_code = 2


class FolderSwapped(RunFailed):
    """A folder on a path a run changes was replaced (by a symlink, a file) while it ran: nothing
    went through it and the run was rolled back, but the store is the user's to look at (exit 2)."""

    exit_code = 2


_PLAIN = {errno.ENOSPC: "no space left on device", errno.EDQUOT: "disk quota exceeded", errno.EROFS: "read-only file system"}


def _shown(name: object, root: Path | None) -> str:
    text = os.fsdecode(name) if isinstance(name, (str, bytes, os.PathLike)) else str(name)
    if root is not None and text.startswith(f"{root}/"):
        text = text[len(str(root)) + 1 :]
    # one line, always: a file name with a newline must not start a line of its own
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text)


def os_reason(exc: OSError, root: Path | None = None) -> str:
    """An OSError in a few words: what the user can act on, never a traceback's worth."""
    if exc.errno in _PLAIN:
        return _PLAIN[exc.errno]
    name = exc.filename2 or exc.filename
    where = _shown(name, root) if name else ""
    if exc.errno == errno.EISDIR:
        return f"{where} is a directory"
    text = (exc.strerror or str(exc)).lower() if exc.errno else str(exc)
    return f"{where}: {text}" if where else text
