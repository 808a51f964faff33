"""Folders of a store opened from its root down, never through a symlink: what every change the
journal makes (apply, undo, rollback, recovery) is done in.

Checking a path and then writing through it leaves a window: a folder on the way replaced by a
symlink in between (another process, a sync tool) carries the write out of the store, and the
check, made before, never sees it. So a change never names a path: it opens the folder that holds
the file one part at a time from the store's root, each part with O_NOFOLLOW | O_DIRECTORY (a part
that is a symlink, or no longer a folder, fails the open itself, atomically), and then acts on the
file's own name in that folder through the `dir_fd=` forms of the calls (openat, renameat,
unlinkat, mkdirat, linkat). The kernel then resolves nothing but that last name, which none of them
follows either; a folder swapped after the open is no longer on the way, the descriptor still
names the folder that was checked. A part refused raises `Swapped`, before anything is done there.

The root itself is opened as the command resolved it: the store is that folder, and what lies above
it is not the store's to guard (changing it takes write access outside the store).
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

# O_CLOEXEC: a model client's subprocess never inherits a descriptor of the store
_ROOT = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_PART = _ROOT | os.O_NOFOLLOW


class Swapped(OSError):
    """A folder on the way to a store path is a symlink or not a folder (any more): nothing was done
    there. An OSError, so whatever rolls back after a failed change rolls back after this one."""

    def __init__(self, folder: str, path: str) -> None:
        super().__init__(errno.ELOOP, f"the folder {folder} on its way is a symlink or not a folder", path)
        self.folder = folder  # relative to the store root, as `path`
        self.path = path


def open_folder(root: Path, rel: str, make: bool = False, path: str | None = None) -> int:
    """A descriptor of the store folder `rel` ("" for the root), for the caller to close. With
    `make`, missing folders are created on the way (mode 0777 less the umask, as `mkdir -p`).
    `path`: the store path the folder is opened for, named by Swapped (default `rel`)."""
    fd = os.open(root, _ROOT)
    walked = ""
    try:
        for name in rel.split("/") if rel else ():
            walked = f"{walked}/{name}" if walked else name
            child = _open_part(fd, name, make, walked, path or rel)
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_part(fd: int, name: str, make: bool, walked: str, path: str) -> int:
    if name in ("", ".", ".."):
        # never a step up or aside: every path the journal takes is normalized (journal_check)
        raise OSError(errno.EINVAL, "not a normalized store path", path)
    try:
        try:
            return os.open(name, _PART, dir_fd=fd)
        except FileNotFoundError:
            if not make:
                raise
        try:
            os.mkdir(name, dir_fd=fd)
        except FileExistsError:
            pass  # made meanwhile: opened below like any other (a symlink there is refused)
        return os.open(name, _PART, dir_fd=fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise Swapped(walked, path) from None
        raise


@contextmanager
def folder(root: Path, rel: str) -> Iterator[int]:
    """The store folder `rel`, open for the `with` block (see open_folder)."""
    fd = open_folder(root, rel)
    try:
        yield fd
    finally:
        os.close(fd)


@contextmanager
def parent(root: Path | None, path: Path, make: bool = False) -> Iterator[tuple[int, str]]:
    """(the folder holding `path`, open for the `with` block; its name in it). `path` is
    `root / <a store path>`; with `make`, its missing folders are created. With no `root` (a file of
    no store: a fleet's plans folder) the folder is opened as named, symlinks and all."""
    if root is None:
        fd = os.open(path.parent, _ROOT)
        name = path.name
    else:
        rel = path.relative_to(root).as_posix()  # lexical: `path` is built from `root`
        above, _, name = rel.rpartition("/")
        fd = open_folder(root, above, make, path=rel)
    try:
        yield fd, name
    except OSError as exc:
        # A call given `dir_fd` names only a name in this folder in its error (`name`, or another
        # made in the block: write_atomic's temporary file): name the whole path, as a call given the
        # path would (the one-line errors show it relative to the store).
        for attr in ("filename", "filename2"):
            named = getattr(exc, attr)
            if isinstance(named, str) and named and "/" not in named:
                setattr(exc, attr, str(path if named == name else path.parent / named))
        raise
    finally:
        os.close(fd)


# --- the changes themselves: each names only its last part, in a folder opened as above ----------


def make_folder(root: Path, path: Path, mode: int = 0o777, exist_ok: bool = False) -> None:
    """mkdir `path` (in store `root`); with `exist_ok`, one there already is fine if it is a real
    folder (a symlink or a file in its place raises Swapped)."""
    with parent(root, path) as (fd, name):
        try:
            os.mkdir(name, mode, dir_fd=fd)
        except FileExistsError:
            if not exist_ok:
                raise
            if not stat.S_ISDIR(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
                rel = path.relative_to(root).as_posix()
                raise Swapped(rel, rel) from None


def replace(root: Path, src: Path, dest: Path, make: bool = False) -> None:
    """os.replace `src` onto `dest` (both in store `root`); with `make`, `dest`'s missing folders
    are created."""
    with parent(root, src) as (src_fd, src_name), parent(root, dest, make) as (dest_fd, dest_name):
        os.replace(src_name, dest_name, src_dir_fd=src_fd, dst_dir_fd=dest_fd)


def link(root: Path, src: Path, dest: Path, make: bool = False) -> None:
    """A second name `dest` for the file `src` itself, a symlink there not followed (both in store
    `root`); with `make`, `dest`'s missing folders are created."""
    with parent(root, src) as (src_fd, src_name), parent(root, dest, make) as (dest_fd, dest_name):
        os.link(src_name, dest_name, src_dir_fd=src_fd, dst_dir_fd=dest_fd, follow_symlinks=False)


def remove(root: Path, path: Path, missing_ok: bool = False) -> None:
    """unlink `path` (in store `root`): a symlink there is removed itself, never what it points to."""
    with parent(root, path) as (fd, name):
        try:
            os.unlink(name, dir_fd=fd)
        except FileNotFoundError:
            if not missing_ok:
                raise


def remove_folder(root: Path, path: Path) -> None:
    """rmdir `path` (in store `root`): OSError unless it is an empty real folder."""
    with parent(root, path) as (fd, name):
        os.rmdir(name, dir_fd=fd)


def changed_at(root: Path, path: Path) -> int:
    """When `path` (in store `root`) last changed, its inode's ctime in ns, never through a symlink:
    OSError when there is none."""
    with parent(root, path) as (fd, name):
        return os.stat(name, dir_fd=fd, follow_symlinks=False).st_ctime_ns


def remove_tree(root: Path, path: Path, ignore_errors: bool = False) -> None:
    """`rm -r path` (in store `root`): shutil.rmtree from the folder that holds it, which opens each
    folder below without following a symlink and refuses one at the top."""
    with parent(root, path) as (fd, name):
        shutil.rmtree(name, ignore_errors=ignore_errors, dir_fd=fd)
