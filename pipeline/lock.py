"""One run per store: an exclusive, non-blocking lock on `.memconsolidate/lock`.

`flock` is released by the kernel when the process dies, so a killed run never leaves a stale lock.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from .errors import UNWRITABLE, RunFailed, UsageError, os_reason
from .config import STATE_DIR
from .storage import anchored


class LockHeld(RunFailed):
    """Another process holds the store's lock (a nightly `run --if-due` takes this quietly)."""


def not_writable(root: Path, exc: OSError) -> UsageError:
    return UsageError(f"cannot write to {root}: {os_reason(exc, root)}")


def state_dir(root: Path) -> Path:
    path = root / STATE_DIR
    if path.is_symlink():
        # journals and backups written through it would live outside the store
        raise RunFailed(f"{path} is a symlink: refusing to keep the journal outside the store")
    try:
        path.mkdir(mode=0o700)
    except FileExistsError:
        if not path.is_dir():
            raise RunFailed(f"{path} is not a folder: refusing to keep the journal there") from None
        return path
    except OSError as exc:
        if exc.errno in UNWRITABLE:
            raise not_writable(root, exc) from None
        raise
    _ignore_in_git(root)
    return path


def _ignore_in_git(root: Path) -> None:
    """A new state folder ignores itself, as pytest's and ruff's caches do: a store inside a git
    repository must never commit the before-images of its memories."""
    try:
        fd = open_regular(root / STATE_DIR / ".gitignore", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644, root=root)
    except FileExistsError:
        return
    with os.fdopen(fd, "wb") as fh:
        fh.write(b"# created by memconsolidate: its journals hold copies of your memories\n*\n")


def open_regular(path: Path, flags: int, mode: int = 0o600, root: Path | None = None) -> int:
    """Open a file to change it where it is: never through a symlink, never a FIFO (which would block
    the open), never a file with a second name (a hard link to a memory, a snapshot or an outside
    file would grow or shrink that other file too). OSError (EINVAL) says which. With `root`, the
    store `path` is in, no folder on the way is a symlink either (storage/anchored.py)."""
    with anchored.parent(root, path) as (folder, name):
        fd = os.open(name, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, mode, dir_fd=folder)
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
        os.close(fd)
        why = "not a regular file" if not stat.S_ISREG(st.st_mode) else "it has other hard links"
        raise OSError(errno.EINVAL, why, str(path))
    return fd


@contextmanager
def store_lock(root: Path) -> Iterator[None]:
    path = state_dir(root) / "lock"
    try:
        # Taking the lock writes the pid into it: a planted symlink, FIFO or hard link (a store
        # unpacked from an archive can carry one to a memory) is never our lock.
        fd = open_regular(path, os.O_RDWR | os.O_CREAT, root=root)
    except OSError as exc:
        if exc.errno in UNWRITABLE:
            raise not_writable(root, exc) from None
        raise RunFailed(f"cannot use the lock file {path}: {exc.strerror} (a symlink is never followed): remove it and run again") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip() or "unknown"
            raise LockHeld(f"another memconsolidate run is working on {root} (pid {holder}); try again later") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)


def run_in_progress(root: Path) -> str | None:
    """The pid of a run holding the store's lock right now, or None; never creates anything."""
    path = root / STATE_DIR / "lock"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return os.pread(fd, 64, 0).decode("ascii", "replace").strip() or "unknown"
        return None
    finally:
        os.close(fd)
