"""All-or-nothing changes to a store: journal first, then change, then commit.

A run's changes are a list of primitive `Op`s: write a file (through a temp file and a rename),
move one, append to one in place, and, only when undoing, remove a file or cut an append back off.
Before the first change, every path the run touches has its current bytes copied into
`.memconsolidate/runs/<run-id>/before/` (an appended-to file only records its length and the bytes
it gets) and a journal listing them is written, signed and fsynced. A run whose journal is not
marked committed is rolled back by the next command on the store, so a store is always either
entirely before or entirely after a run. A committed run can be undone byte-for-byte, as long as the
files it wrote are still what it wrote.

Nothing in the state folder is trusted (`journal_check.py`): a journal that is not signed with this
store's key, is not of our shape, or names a path outside the store is reported and never acted on.
Rollback keeps whatever someone else wrote, and never unlinks a file whose bytes exist nowhere else.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import hashlib
import json
import os
import re
import secrets
import stat
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache, partial
from pathlib import Path
from typing import Any, Literal

from .errors import UNWRITABLE, FolderSwapped, RunFailed, StoreUnwritable, os_reason
from .journal_check import (
    ABSENT,
    ADDED,
    LIVE,
    MAX_JOURNAL_BYTES,
    RUN_NAME,
    Refused,
    check_paths,
    check_rel,
    check_shape,
    path_problem,
    read_blob,
    read_regular,
    run_file,
    sign,
    store_key,
    verify,
)
from .lock import open_regular, state_dir
from .storage import anchored
from .storage.anchored import Swapped
from .config import STATE_DIR

JOURNAL = "journal.json"
SPARE = "journal.spare"  # preallocated room for the commit record: a full disk cannot stop the commit
SPARE_SLACK = 8192
# Our temp files: `.mc-tmp-` and 16 hex digits, 24 bytes whatever the file they replace, so a temp
# name fits wherever that file's name does (`.NAME.mc-tmp-XXXXXX`, as earlier versions named them,
# is 15 bytes over NAME_MAX for a name of 241 bytes or more: 81 CJK characters). The old names are
# still ours to sweep, left by a kill under an earlier version.
TMP_NAME = re.compile(r"\.mc-tmp-[0-9a-f]{16}|\..+\.mc-tmp-[0-9a-f]{6}")


def tmp_name() -> str:
    """A fresh temp file name for a write in any folder of the store (see TMP_NAME)."""
    return f".mc-tmp-{secrets.token_hex(8)}"


@dataclass(frozen=True)
class Op:
    kind: Literal["write", "move", "remove", "append", "truncate"]
    path: str  # relative to the store root, POSIX
    dest: str | None = None  # for moves
    data: bytes | None = None  # write: the new bytes; append: the bytes added at the end
    # sha (or ABSENT) of the bytes the op was built from: a file that changed since is never replaced
    expect: str | None = None
    mode: int | None = None  # permission bits for a write (undo of a moved file); None keeps them
    length: int | None = None  # truncate: the length to cut the file back to


@dataclass
class RunRecord:
    run_id: str
    status: str
    created: str
    touched: dict[str, dict[str, Any]] = field(default_factory=dict)
    dirs_created: list[str] = field(default_factory=list)
    ops: list[dict[str, Any]] = field(default_factory=list)
    info: dict = field(default_factory=dict)
    hmac: str = ""


def new_run_id(root: Path | None = None) -> str:
    """A run id: the UTC second, then a suffix. Runs are ordered by id, so within one second (a
    nightly run and a retry, or tests) the suffix counts up from the store's last run of that
    second; the first of a second starts at a random point of the lower half, leaving room."""
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    base = root / STATE_DIR / "runs" if root is not None else None
    try:
        same = sorted(e.name for e in os.scandir(base) if e.name.startswith(stamp + "-")) if base else []
    except OSError:
        same = []
    last = max((int(n[len(stamp) + 1:], 16) for n in same if re.fullmatch(r"[0-9a-f]{4}", n[len(stamp) + 1:])), default=None)
    if last is None:
        return f"{stamp}-{secrets.randbelow(0x8000):04x}"
    if last < 0xFFFF:
        return f"{stamp}-{last + 1:04x}"
    time.sleep(1.0)  # 32k runs in one second: wait for the next one rather than break the order
    return new_run_id(root)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def state(data: bytes | None) -> str:
    return ABSENT if data is None else sha(data)


class ChangedMeanwhile(OSError):
    """A path no longer holds what the journal recorded: something else wrote it during the run."""


def runs_dir(root: Path) -> Path:
    path = state_dir(root) / "runs"
    if path.is_symlink():
        raise RunFailed(f"{path} is a symlink: refusing to keep journals outside the store")
    anchored.make_folder(root, path, 0o700, exist_ok=True)
    return path


# --- fault injection for the kill tests -------------------------------------------------------
# MEMCONSOLIDATE_FAULT_AFTER=N exits hard at step N (after a copy, the journal, an op, the commit);
# MEMCONSOLIDATE_FAULT_IN_WRITE=N exits inside the Nth atomic write, its temp file written, not renamed.

_steps = 0
_writes = 0


def _step() -> None:
    global _steps
    _steps += 1
    delay = os.environ.get("MEMCONSOLIDATE_FAULT_DELAY_MS")
    if delay:
        time.sleep(int(delay) / 1000)
    limit = os.environ.get("MEMCONSOLIDATE_FAULT_AFTER")
    if limit and _steps >= int(limit):
        os._exit(99)


def _write_fault() -> None:
    global _writes
    _writes += 1
    limit = os.environ.get("MEMCONSOLIDATE_FAULT_IN_WRITE")
    if limit and _writes >= int(limit):
        os._exit(99)


# --- durable file primitives ------------------------------------------------------------------


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def write_atomic(
    path: Path, data: bytes, mode: int | None = None, expect: str | None = None, root: Path | None = None, make: bool = False
) -> None:
    """Write through a temp file in the same folder and `os.replace`, fsyncing file and folder.

    With `expect`, the replace happens only if `path` still holds those bytes (ChangedMeanwhile).
    With `root`, the store `path` is in (every write of a run, to the store or its run folder), the
    folder is opened from the root down and never through a symlink (storage/anchored.py: Swapped);
    with `make`, folders missing on the way are created.
    """
    with anchored.parent(root, path, make) as (folder, name):
        _write_in(folder, name, data, mode, expect)


def _write_in(folder: int, name: str, data: bytes, mode: int | None, expect: str | None) -> None:
    """write_atomic in the open `folder`: the temp file, the check and the rename all name only
    `name` in it, so a folder on the way swapped meanwhile changes nothing of where they go."""
    tmp = tmp_name()  # never longer than NAME_MAX, however long `name` is
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 mode if mode is not None else 0o644, dir_fd=folder)
    try:
        try:
            if mode is not None:
                os.fchmod(fd, mode)  # exact bits back (undo of a 0600 file), whatever the umask
            elif (kept := _regular_mode(folder, name)) is not None:
                os.fchmod(fd, kept)  # a rewrite keeps the file's mode; a symlink's target lends it none
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        _write_fault()
        if expect is not None:
            _check(folder, name, expect)  # last moment before the replace: keep the race window tiny
        os.replace(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        _unlink_quietly(folder, tmp)
        raise
    os.fsync(folder)


def _unlink_quietly(folder: int, name: str) -> None:
    try:
        os.unlink(name, dir_fd=folder)
    except OSError:
        pass  # already gone, or a temp file of ours the next sweep removes


def _regular_mode(folder: int, name: str) -> int | None:
    """The permission bits of the regular file `name` itself, or None (absent, or a symlink: the
    mode of whatever it points to, a world-writable /tmp or a setuid program, is not the file's)."""
    try:
        st = os.stat(name, dir_fd=folder, follow_symlinks=False)
    except OSError:
        return None
    return st.st_mode & 0o7777 if stat.S_ISREG(st.st_mode) else None


def _read_or_absent(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


class _Other:
    """What a touched path holds when it is no longer a regular file (a folder, a symlink, a FIFO)."""


OTHER = _Other()


def _now(root: Path, p: str) -> bytes | None | _Other:
    """The bytes at store path `p` as rollback and undo see them: never through a symlink, a
    folder on the way included, nor into a FIFO. Beyond a folder that is a symlink or a file now
    (swapped meanwhile) lies nothing of the store's: OTHER, which rollback leaves as found and
    undo takes for a change since the run."""
    try:
        with anchored.parent(root, root / p) as (folder, name):
            return _now_in(folder, name)
    except FileNotFoundError:
        return None
    except Swapped:
        return OTHER


def _now_in(folder: int, name: str) -> bytes | None | _Other:
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=folder)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENXIO):
            return OTHER  # a symlink (never followed), a socket
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return OTHER  # a folder, a FIFO (opened without blocking, never read)
        return _read_fd(fd)
    finally:
        os.close(fd)


def _state_now(value: bytes | None | _Other) -> str:
    return "other" if isinstance(value, _Other) else state(value)


def _check(folder: int, name: str, expect: str) -> None:
    now = _now_in(folder, name)
    if isinstance(now, _Other) and stat.S_ISDIR(os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), name)  # said as such: a folder put there
    if _state_now(now) != expect:
        raise ChangedMeanwhile(f"{name} changed while the run was applying (written by something else)")


def _read_fd(fd: int) -> bytes:
    chunks, offset = [], 0
    while chunk := os.pread(fd, 1 << 20, offset):
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def _hard_linked(path: Path) -> bool:
    try:
        st = path.lstat()
    except FileNotFoundError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_nlink > 1


# --- the journal file -------------------------------------------------------------------------


def _record_bytes(record: RunRecord, key: bytes, run: Path) -> bytes:
    data = dict(record.__dict__)
    data["hmac"] = ""
    record.hmac = data["hmac"] = sign(key, data, run.name)
    return json.dumps(data, indent=1, sort_keys=True).encode()


def _run_folder(run: Path) -> contextlib.AbstractContextManager[int]:
    """Run folder `run` open, from its store's root down (storage/anchored.py): run folders are
    `<root>/.memconsolidate/runs/<run-id>` (runs_dir)."""
    return anchored.folder(run.parents[2], run.relative_to(run.parents[2]).as_posix())


def _save_record(run: Path, record: RunRecord, key: bytes) -> None:
    """Sign and save the journal. Once it is renamed into place it counts as saved, whatever a
    folder fsync says after; before that, an error means the old journal still stands."""
    data = _record_bytes(record, key, run)
    with _run_folder(run) as folder:
        fd = _open_spare(folder, run / SPARE)
        if fd is not None:
            try:
                size = os.fstat(fd).st_size
                if len(data) <= size:
                    # Over blocks written at prepare time: no new space needed; JSON ignores the padding.
                    os.pwrite(fd, data.ljust(size), 0)
                    os.fsync(fd)
                    os.close(fd)
                    fd = None
                    os.replace(SPARE, JOURNAL, src_dir_fd=folder, dst_dir_fd=folder)
                    _fsync_quietly(folder)
                    return
            finally:
                if fd is not None:
                    os.close(fd)
    write_atomic(run / JOURNAL, data, mode=0o600, root=run.parents[2])  # as _run_folder


# (device, inode) of each spare this process created: only those are ever written into
_spares: dict[str, tuple[int, int]] = {}


def _open_spare(folder: int, spare: Path) -> int | None:
    """Our own spare (`spare`, in the open run `folder`), open for writing, or None. Anything else
    planted under its name (a hard link to a store file, a FIFO, a file of a crashed process) is
    never written into: its name is unlinked, which loses no data, and the journal goes through a
    temp file."""
    try:
        fd = os.open(SPARE, os.O_WRONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=folder)
    except FileNotFoundError:
        return None
    except OSError:
        fd = None
    if fd is not None:
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode) and st.st_nlink == 1 and _spares.get(str(spare)) == (st.st_dev, st.st_ino):
            return fd
        os.close(fd)
    _unlink_quietly(folder, SPARE)
    return None


def _fsync_quietly(fd: int) -> None:
    """For rollback, whose renames and truncations need no new space: a failing fsync only weakens
    durability, and must not leave the store half restored."""
    try:
        os.fsync(fd)
    except OSError:
        pass


def _fsync_dir_quietly(path: Path) -> None:
    try:
        _fsync_dir(path)
    except OSError:
        pass  # the rename is done; durability is the most a failed fsync can cost


def _write_spare(run: Path, size: int) -> None:
    with _run_folder(run) as folder:
        fd = os.open(SPARE, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=folder)
    try:
        st = os.fstat(fd)
        _spares[str(run / SPARE)] = (st.st_dev, st.st_ino)
        _write_all(fd, b" " * size)
        os.fsync(fd)
    finally:
        os.close(fd)


# --- which runs are ours ----------------------------------------------------------------------


@dataclass
class RunView:
    """One folder of `.memconsolidate/runs/`, as the journal checks see it."""

    name: str
    path: Path
    record: RunRecord | None = None  # set only for a journal of ours, of our shape
    problem: str | None = None  # why it is not acted on
    empty: bool = False  # no journal: interrupted before any change
    finished: bool = False  # a refused journal that at least says it is done

    @property
    def unfinished(self) -> bool:
        if self.record is not None:
            return self.record.status == "prepared"
        return self.empty or (self.problem is not None and not self.finished)

    def refusal(self) -> str:
        return f"not acting on run {self.name}: {self.problem}; it is left as it is in {self.path}: check it, then move that folder away by hand"


def _only_our_files(run: Path) -> bool:
    """Whether a journal-less run folder holds nothing but what a run writes before its journal."""
    for entry in os.scandir(run):
        if entry.name in ("before", "added") and entry.is_dir(follow_symlinks=False):
            if not all(_our_copy(e) for e in os.scandir(entry.path)):
                return False
        elif not (TMP_NAME.fullmatch(entry.name) and entry.is_file(follow_symlinks=False)):
            return False
    return True


def _our_copy(entry: os.DirEntry) -> bool:
    """A copy a run writes: a regular file of one link, named NNNNN or as our temp file. A folder
    or a second name of another file is never ours, so the folder holding it is never removed."""
    if not (re.fullmatch(r"[0-9]{5}", entry.name) or TMP_NAME.fullmatch(entry.name)):
        return False
    st = entry.stat(follow_symlinks=False)
    return stat.S_ISREG(st.st_mode) and st.st_nlink == 1


def _view(root: Path, entry: os.DirEntry, key: bytes | None) -> RunView | None:
    view = RunView(entry.name, Path(entry.path))
    if entry.is_symlink():
        view.problem = "its folder is a symlink"
        return view
    if not entry.is_dir(follow_symlinks=False):
        return None  # a stray file: not a run
    if not RUN_NAME.fullmatch(entry.name):
        view.problem = "its folder name is not a run id"
        return view
    journal = view.path / JOURNAL
    if not os.path.lexists(journal):
        if _only_our_files(view.path):
            view.empty = True
        else:
            view.problem = "it has no journal but holds files that are not a run's copies"
        return view
    try:
        data = json.loads(read_regular(journal, MAX_JOURNAL_BYTES))
    except Refused as exc:
        view.problem = f"its journal cannot be read ({exc})"
        return view
    except (OSError, ValueError, RecursionError) as exc:
        view.problem = f"its journal cannot be read ({type(exc).__name__})"
        return view
    try:
        check_shape(data, entry.name)
    except Refused as exc:
        view.problem = str(exc)  # not even of our shape: whatever it says, it may be unfinished
        return view
    try:
        verify(key, data, entry.name)
    except Refused as exc:
        view.problem = str(exc)
        view.finished = data["status"] != "prepared"  # a foreign run that says it is done: ignored
        return view
    view.record = RunRecord(**data)
    return view


def run_views(root: Path) -> list[RunView]:
    """Every run folder of the store, read-only: ours (with its record) or refused (with why)."""
    base = root / STATE_DIR / "runs"
    if (root / STATE_DIR).is_symlink():  # its runs and key would be another folder's
        return [RunView(STATE_DIR, root / STATE_DIR, problem="the state folder is a symlink")]
    if base.is_symlink():
        return [RunView("runs", base, problem="the runs folder is a symlink")]
    if not base.is_dir():
        return []
    key = store_key(root / STATE_DIR)
    views = [_view(root, e, key) for e in sorted(os.scandir(base), key=lambda e: e.name)]
    return [v for v in views if v is not None]


def unfinished_runs(root: Path) -> tuple[list[str], list[RunView]]:
    """(our unfinished runs, the unfinished journals that are not acted on), without writing."""
    views = run_views(root)
    return [v.name for v in views if v.unfinished and not v.problem], [v for v in views if v.unfinished and v.problem]


# --- planning the touched set -----------------------------------------------------------------


@dataclass
class _Sim:
    before: dict[str, bytes | None]
    after: dict[str, bytes | None]
    dirs: list[str]
    states: dict[str, set[str]]
    appends: dict[str, tuple[int, bytes]]  # path -> (length before, bytes added): in place, no copy
    ops: list[Op]


def _simulate(root: Path, ops: list[Op]) -> _Sim:
    """Before and after contents of every touched path, the folders the ops will create, every
    state (sha or ABSENT) the ops put each path in, and the ops to execute."""
    before: dict[str, bytes | None] = {}
    after: dict[str, bytes | None] = {}
    states: dict[str, set[str]] = {}
    uses: dict[str, int] = {}
    for op in ops:
        for p in (op.path, op.dest):
            if p is not None:
                uses[p] = uses.get(p, 0) + 1
    appends: dict[str, tuple[int, bytes]] = {}
    planned: list[Op] = []

    def current(p: str) -> bytes | None:
        if p not in before:
            before[p] = _read_or_absent(root / p)
            after.setdefault(p, before[p])
        return after[p]

    def put(p: str, data: bytes | None) -> None:
        after[p] = data
        states.setdefault(p, set()).add(state(data))

    for op in ops:
        if op.expect is not None and state(current(op.path)) != op.expect:
            # The writer built this op on bytes that are no longer there: replacing them would lose
            # whatever was written since (an agent appending a memory between plan and apply).
            raise RunFailed(f"{op.path} changed since it was read: nothing applied; run apply again")
        if op.kind == "write":
            current(op.path)
            put(op.path, op.data)
        elif op.kind == "append":
            assert op.data is not None
            data = current(op.path)
            if data is None:
                raise RunFailed(f"cannot append to {op.path}: it does not exist")
            if _hard_linked(root / op.path):
                raise RunFailed(f"refusing to append to {op.path}: it has other hard links (they would change too); nothing applied")
            added = op.data
            assert added is not None  # an append always carries the bytes it adds
            if uses[op.path] > 1:
                # touched by other ops too: one journaled rewrite, so rollback has a single story
                op = Op("write", op.path, data=data + added, expect=op.expect)
            else:
                appends[op.path] = (len(data), added)
            put(op.path, data + added)
        elif op.kind == "truncate":
            data = current(op.path)
            if _hard_linked(root / op.path):
                raise RunFailed(f"refusing to cut {op.path} back: it has other hard links (they would change too); nothing changed")
            if data is None or op.length is None or not 0 <= op.length <= len(data):
                raise RunFailed(f"cannot cut {op.path} back: it is shorter than the run left it")
            put(op.path, data[: op.length])
        elif op.kind == "move":
            assert op.dest is not None
            data = current(op.path)
            if data is None:
                raise RunFailed(f"cannot move {op.path}: it does not exist")
            if current(op.dest) is not None:
                raise RunFailed(f"cannot move {op.path} to {op.dest}: the destination exists")
            put(op.dest, data)
            put(op.path, None)
        elif op.kind == "remove":
            current(op.path)
            put(op.path, None)
        planned.append(op)
    dirs: set[str] = set()
    for p, data in after.items():
        if data is None:
            continue
        parent = Path(p).parent
        while str(parent) not in ("", ".") and not (root / parent).exists():
            dirs.add(parent.as_posix())
            parent = parent.parent
    return _Sim(before, after, sorted(dirs, key=lambda d: (d.count("/"), d)), states, appends, planned)


# --- execute ----------------------------------------------------------------------------------


def _astray(root: Path, folder_rel: str, names_state: bool) -> str | None:
    """Where a symlinked folder on the way would carry a write into `folder_rel` (a folder's path
    relative to `root`, "" for root itself): out of `root`, or into a state folder the path does not
    name (`names_state`: whether it does; `memories/core -> ../.memconsolidate`); None if nowhere.
    Judged on the deepest folder of the path that exists."""
    folder = root / folder_rel
    while not folder.exists() and folder != root:
        folder = folder.parent
    try:
        below = folder.resolve().relative_to(root.resolve())
    except ValueError:
        return "a folder on its path leads outside the store"
    if STATE_DIR in below.parts and not names_state:
        return f"a folder on its path leads into {STATE_DIR}/"
    # Inside the store too, a write goes where its path says or nowhere: an archive folder linked to a
    # memory folder would put what a run retires back among the live memories (read again next run).
    if below != folder.relative_to(root):
        return f"a folder on its path is a symlink (to {below.as_posix() or '.'})"
    return None


FolderAstray = Callable[[str, bool], str | None]  # `_astray` of one root


def unsafe_reason(root: Path, p: str, folder: bool = False, astray: FolderAstray | None = None) -> str | None:
    """Why a run may not change `p` (a path the journal does not record, a symlink, a folder on its
    way leading out of the store or into its state folder), or None. Apply asks before it runs a
    change set (the action that leads there is skipped, the rest applied); execute refuses the run
    if one is left. `astray`: `_astray` of `root`, as `unsafe_reasons` keeps it."""
    problem = path_problem(p, folder)
    if problem is not None:
        return f"path {p!r} {problem}"
    if (root / p).is_symlink():
        return "it is a symlink"
    folder_rel, _, _ = p.rpartition("/")  # "" for a file of the root: `root / ""` is root
    return (astray or partial(_astray, root))(folder_rel, STATE_DIR in p.split("/"))


def unsafe_reasons(root: Path) -> Callable[[str], str | None]:
    """`unsafe_reason` of file paths under `root`, for a pass asking it of many (a plan, of every
    memory): the folders on their way are judged once each (a resolve is a stat per folder on the way,
    and thousands of memories share a few folders). The verdicts live as long as the function
    returned: one pass's, never a later plan's or apply's, which ask the disk again."""
    astray = cache(partial(_astray, root))
    return partial(unsafe_reason, root, astray=astray)


def _refuse_unsafe(root: Path, paths: list[str], folders: bool = False) -> None:
    for p in paths:
        why = unsafe_reason(root, p, folders)
        if why is not None:
            shown = repr(p) if path_problem(p, folders) is not None else p  # one the journal does not take, quoted
            raise RunFailed(f"refusing to change {shown}: {why}")


def cannot_write(root: Path, exc: OSError) -> str:
    return f"cannot write {root}: {os_reason(exc, root)}"


def write_failed(root: Path, exc: OSError, message: str | None = None) -> RunFailed:
    """The error of a run a write failed (`message`, by default that `root` cannot be written): exit 2
    when the store refused it (permissions, an immutable file, a read-only file system), else 1."""
    text = message or cannot_write(root, exc)
    return StoreUnwritable(text) if exc.errno in UNWRITABLE else RunFailed(text)


@dataclass
class _Live:
    """Hard links, inside the run folder, to the files a run replaces by rename: an agent holding one
    open keeps writing to that inode; the link is how the run sees those bytes and gives them back."""

    root: Path
    run: Path
    names: dict[str, str]  # path -> live/NNNNN
    linked: set[str] = field(default_factory=set)

    def link(self, p: str) -> None:
        if p not in self.names or p in self.linked:
            return
        link = self.run / self.names[p]
        try:
            with anchored.parent(self.root, self.root / p) as (folder, name), anchored.parent(self.root, link) as (lives, n):
                if stat.S_ISREG(os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode):
                    os.link(name, n, src_dir_fd=folder, dst_dir_fd=lives, follow_symlinks=False)
                    st = os.stat(n, dir_fd=lives, follow_symlinks=False)
                    _lives[str(link)] = (st.st_dev, st.st_ino)
                    self.linked.add(p)
        except OSError:
            # another file system, no hard links: no detection for this file (a swapped folder
            # on the way: the write that follows refuses the run)
            self.names.pop(p)


def execute(root: Path, ops: list[Op], run_id: str | None = None, info: dict | None = None) -> RunRecord:
    """Apply `ops` as one transaction. Raises RunFailed (after rolling back) if a change fails."""
    run_id = run_id or new_run_id(root)
    if not RUN_NAME.fullmatch(run_id):
        raise RunFailed(f"not a run id: {run_id!r}")
    try:
        sim = _simulate(root, ops)
    except OSError as exc:
        raise write_failed(root, exc) from None
    _refuse_unsafe(root, sorted(sim.before))
    _refuse_unsafe(root, sim.dirs, folders=True)
    try:
        key = store_key(state_dir(root), create=True)
        run = runs_dir(root) / run_id
        anchored.make_folder(root, run, 0o700)
    except FileExistsError:
        raise RunFailed(f"run {run_id} exists already in {root}") from None
    except OSError as exc:
        raise _failure(root, exc) from None
    assert key is not None
    try:
        record, live = _prepare(root, run, run_id, sim, info or {}, key)
    except OSError as exc:
        # Nothing in the store was changed yet, and the folder holds only our own copies.
        with contextlib.suppress(OSError):  # the folder on its way swapped: nothing removed there
            anchored.remove_tree(root, run, ignore_errors=True)
        raise _failure(root, exc) from None
    _step()
    expected = {p: entry["before"] for p, entry in record.touched.items()}
    try:
        for d in sim.dirs:
            anchored.make_folder(root, root / d, exist_ok=True)
            _fsync_dir((root / d).parent)  # else a moved file's new folder may vanish on power loss
        for op in sim.ops:
            _apply_op(root, op, expected, live)
            _step()
        _check_live(record, live)
        record.status = "committed"
        _save_record(run, record, key)
    except OSError as exc:
        result = rollback(root, run, record, key)
        raise _failure(root, exc, result) from None
    _step()
    _drop_live(live)
    return record


def _prepare(root: Path, run: Path, run_id: str, sim: _Sim, info: dict, key: bytes) -> tuple[RunRecord, _Live]:
    """Copy what the run will change, write and sign the journal: after this, a crash rolls back."""
    anchored.make_folder(root, run / "before", 0o700)
    if sim.appends:
        anchored.make_folder(root, run / "added", 0o700)
    # The run's folder must survive a power loss with the journal in it: fsync each new entry's parent.
    for folder in (run, run.parent, run.parent.parent, root):
        _fsync_dir(folder)
    # Microseconds: `undo` takes the latest run by this, and two runs can start in one second.
    created = dt.datetime.now(dt.timezone.utc).isoformat(timespec="microseconds")
    record = RunRecord(run_id=run_id, status="prepared", created=created, info=info)
    rewritten = {op.path for op in sim.ops if op.kind == "write"}
    live = _Live(root, run, {})
    for n, (p, data) in enumerate(sorted(sim.before.items())):
        entry: dict[str, Any] = {"before": state(data), "after": state(sim.after[p]), "states": sorted(sim.states.get(p, ()))}
        if (left := sim.after[p]) is not None:
            entry["after_size"] = len(left)  # what `undo` needs to tell lines an agent added since
        if p in sim.appends:
            length, added = sim.appends[p]
            name = f"added/{n:05d}"
            write_atomic(run / name, added, mode=0o600, root=root)
            entry["append"] = {"length": length, "added": name, "size": len(added), "sha": sha(added)}
            _step()
        elif data is not None:
            blob = f"before/{n:05d}"
            write_atomic(run / blob, data, mode=0o600, root=root)
            # the mode too: a moved-away file is re-created by rollback or undo, not rewritten
            entry.update(blob=blob, mode=(root / p).stat().st_mode & 0o7777)
            if p in rewritten:
                entry["live"] = live.names[p] = f"live/{n:05d}"
            _step()
        record.touched[p] = entry
    record.dirs_created = sim.dirs
    record.ops = [_op_json(o) for o in sim.ops]
    data = _record_bytes(record, key, run)
    write_atomic(run / JOURNAL, data, mode=0o600, root=root)  # from here on, a crash is rolled back by the next command
    _write_spare(run, len(data) + SPARE_SLACK)
    if live.names:
        anchored.make_folder(root, run / "live", 0o700)  # after the journal: a folder without one holds only copies
    _fsync_dir(run)
    return record, live


def _op_json(op: Op) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": op.kind, "path": op.path, "dest": op.dest}
    if op.length is not None:
        out["length"] = op.length
    return out


def _check_live(record: RunRecord, live: _Live) -> None:
    """Refuse the run if a file it replaced was written meanwhile through a descriptor still open on
    the old file (an agent appending to MEMORY.md): rollback then puts that very file back."""
    for p in sorted(live.linked):
        data = (live.run / live.names[p]).read_bytes()
        if sha(data) != record.touched[p]["before"]:
            raise ChangedMeanwhile(
                f"{p} was written by something else while the run was applying (to the file the run replaced)"
            )


def _drop_live(live: _Live) -> None:
    for p in sorted(live.linked):
        try:
            anchored.remove(live.root, live.run / live.names[p])
        except OSError:
            pass  # a second name for bytes the run's copy also holds: harmless if it stays
    try:
        anchored.remove_folder(live.root, live.run / "live")
    except OSError:
        pass


def _failure(root: Path, exc: OSError, result: "Rollback | None" = None) -> RunFailed:
    """The one-line error of a run `exc` stopped: before any change (no `result`) or after its
    rollback; a folder swapped on the way (Swapped) is FolderSwapped, a store refusing the write
    StoreUnwritable (`write_failed`), both exit 2."""
    if isinstance(exc, Swapped):
        return FolderSwapped(_swapped(exc, result))
    if result is None:
        return write_failed(root, exc)
    # not all put back: a run that failed, whatever stopped it (the next command tries again)
    return RunFailed(_rolled_back(root, exc, result)) if result.errors else write_failed(root, exc, _rolled_back(root, exc, result))


def _swapped(exc: Swapped, result: "Rollback | None") -> str:
    said = (f"refusing to change {exc.path}: {exc.folder} is not a folder of the store any more (a symlink or a "
            "file was put in its place while the run applied); nothing went through it")
    if result is None:
        return f"{said}, and nothing was changed"
    if result.errors:
        return f"{said}, but the run could not be fully rolled back ({'; '.join(result.errors[:2])}): the next command on the store tries again"
    # what lies beyond the swapped folder is left as found: "nothing went through it" says so
    kept = [p for p in result.kept if not p.startswith(f"{exc.folder}/")]
    also = f"; left as found: {', '.join(kept)}" if kept else ""
    return f"{said}, and the run was rolled back{also}"


def _rolled_back(root: Path, exc: OSError, result: "Rollback") -> str:
    if result.errors:
        # Should not happen (rollback renames and truncates, it needs no space); if it does, say so.
        return (
            f"{cannot_write(root, exc) if exc.errno else f'apply failed: {exc}'}; and it could not be fully "
            f"rolled back ({'; '.join(result.errors[:2])}): the next command on the store tries again"
        )
    also = f"; left as found (written by something else): {', '.join(result.kept)}" if result.kept else ""
    if exc.errno:
        return f"{cannot_write(root, exc)}{also}"
    return f"apply failed and was rolled back: {exc}{also}"


def _apply_op(root: Path, op: Op, expected: dict[str, str] | None = None, live: _Live | None = None) -> None:
    """Apply one op; with `expected` (path -> state the journal says it is in), refuse with
    ChangedMeanwhile when a path was written by something else since the journal's copy.

    Every change names its file only within a folder opened from the root down, never through a
    symlink (storage/anchored.py): a folder swapped since the run's checks raises Swapped, an
    OSError, so execute rolls the run back and stops."""
    target = root / op.path
    want = expected or {}
    if op.kind == "write":
        assert op.data is not None
        if live is not None:
            live.link(op.path)
        write_atomic(target, op.data, mode=op.mode, expect=want.get(op.path), root=root, make=True)
        if expected is not None:
            expected[op.path] = sha(op.data)
    elif op.kind in ("append", "truncate"):
        _in_place(root, op, expected)
    elif op.kind == "move":
        assert op.dest is not None
        with anchored.parent(root, target) as (src, src_name), anchored.parent(root, root / op.dest, make=True) as (dest, dest_name):
            if _lexists(dest, dest_name):
                raise OSError(f"destination exists: {op.dest}")
            if op.path in want:
                _check(src, src_name, want[op.path])
            os.rename(src_name, dest_name, src_dir_fd=src, dst_dir_fd=dest)
            os.fsync(dest)
            os.fsync(src)
        if expected is not None:
            expected[op.dest], expected[op.path] = expected[op.path], ABSENT
    elif op.kind == "remove":
        with anchored.parent(root, target) as (folder, name):
            if op.path in want:
                _check(folder, name, want[op.path])
            with contextlib.suppress(FileNotFoundError):
                os.unlink(name, dir_fd=folder)
            os.fsync(folder)
        if expected is not None:
            expected[op.path] = ABSENT


def _lexists(folder: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


def _in_place(root: Path, op: Op, expected: dict[str, str] | None) -> None:
    """Append to or cut back a file where it is: whoever holds it open keeps writing to the file
    everyone sees. Refused if it is not what the journal recorded (an agent wrote meanwhile)."""
    flags = os.O_RDWR | (os.O_APPEND if op.kind == "append" else 0)
    fd = open_regular(root / op.path, flags, root=root)
    try:
        data = _read_fd(fd) if expected is not None and op.path in expected else None
        if data is not None and sha(data) != expected[op.path]:  # type: ignore[index]
            raise ChangedMeanwhile(f"{op.path} changed while the run was applying (written by something else)")
        if op.kind == "append":
            assert op.data is not None
            _write_all(fd, op.data)
            new = hashlib.sha256(data + op.data).hexdigest() if data is not None else None
        else:
            assert op.length is not None
            os.ftruncate(fd, op.length)
            new = sha(data[: op.length]) if data is not None else None
        os.fsync(fd)
    finally:
        os.close(fd)
    if expected is not None and new is not None:
        expected[op.path] = new


# --- rollback ---------------------------------------------------------------------------------


@dataclass
class Rollback:
    kept: list[str] = field(default_factory=list)  # written by something else: left as found
    notes: list[str] = field(default_factory=list)  # what was kept beside them, and where
    errors: list[str] = field(default_factory=list)  # what could not be put back (the run stays unfinished)
    swapped: bool = False  # one of them because a folder on its way is a symlink or a file now

    def error(self, root: Path, p: str, exc: OSError | Refused) -> None:
        self.errors.append(f"{p}: {os_reason(exc, root) if isinstance(exc, OSError) else exc}")
        self.swapped = self.swapped or isinstance(exc, Swapped)


def _appended_part(run: Path, entry: dict[str, Any], cur: bytes) -> bool:
    """Whether `cur` is the file before an append of this run plus some or all of what it appended."""
    a = entry["append"]
    if len(cur) < a["length"] or sha(cur[: a["length"]]) != entry["before"]:
        return False
    return read_blob(run, a["added"], a["sha"], ADDED).startswith(cur[a["length"] :])


def _ours(run: Path, entry: dict[str, Any], cur: bytes | None | _Other) -> bool:
    if isinstance(cur, _Other):
        return False
    if state(cur) in entry.get("states", [entry["after"]]):
        return True
    return "append" in entry and cur is not None and _appended_part(run, entry, cur)


def _pre_run_bytes_in_place(run: Path, entry: dict[str, Any], cur: bytes | None | _Other) -> bool:
    """Whether a path left as found still starts with what it held before the run (an append on top)."""
    if entry["before"] == ABSENT:
        return True
    if not isinstance(cur, bytes):
        return False
    if "append" in entry:
        return sha(cur[: entry["append"]["length"]]) == entry["before"]
    return cur.startswith(read_blob(run, entry["blob"], entry["before"]))


def _restore(
    root: Path, run: Path, p: str, entry: dict[str, Any], cur: bytes | None, now: dict[str, Any], touched: dict[str, dict[str, Any]]
) -> str | None:
    """Put `p` back to before the run by the cheapest way that needs no free space; returns a note."""
    target = root / p  # every change below within folders opened from the root down (anchored)
    if "append" in entry:
        fd = open_regular(target, os.O_RDWR, root=root)
        try:
            if sha(_read_fd(fd)) != state(cur):
                # written since rollback read it: cutting now could drop those bytes; next time decides
                raise ChangedMeanwhile(f"{p} changed while it was being rolled back (written by something else)")
            os.ftruncate(fd, entry["append"]["length"])
            _fsync_quietly(fd)
        finally:
            os.close(fd)
        return None
    live = run / entry["live"] if "live" in entry else None
    if live is not None and os.path.lexists(live):
        if _our_live(run, entry):
            changed = sha(live.read_bytes()) != entry["before"]
            anchored.replace(root, live, target)  # the very file the run replaced: whoever holds it open is back
            _fsync_dir_quietly(target.parent)
            return f"{p}: put back with what was written to it during the run" if changed else None
    for q, other in now.items():
        # A file this run moved away (maybe with a new file of ours in its place): bring it back by
        # name, the same file, no copy and no space needed. Into an empty place by a hard link,
        # which fails if something appeared meanwhile; over our own new file by a rename.
        if isinstance(other, bytes) and q != p and touched[q]["before"] == ABSENT and sha(other) == entry["before"]:
            try:
                if cur is None:
                    anchored.link(root, root / q, target, make=True)  # q goes later: same bytes are here
                else:
                    anchored.replace(root, root / q, target, make=True)
                    now[q] = None
            except OSError:
                break
            _fsync_dir_quietly(target.parent)
            return None
    blob = read_blob(run, entry["blob"], entry["before"])
    if cur is not None and len(cur) < len(blob) and blob.startswith(cur):
        fd = open_regular(target, os.O_WRONLY | os.O_APPEND, root=root)  # an append this run cut off: add it back
        try:
            _write_all(fd, blob[len(cur) :])
            _fsync_quietly(fd)
        finally:
            os.close(fd)
        return None
    write_atomic(target, blob, mode=entry.get("mode"), root=root, make=True)
    return None


# (device, inode) of each live link this process made: a planted one is never put at a store path
_lives: dict[str, tuple[int, int]] = {}


def _our_live(run: Path, entry: dict[str, Any]) -> bool:
    """Whether the live link is the very file the run replaced: a regular file of one link (a second
    name of some other store file would put that file's inode at the target), and, when this
    process made it, the inode it linked; from a crashed process, one whose bytes started as ours."""
    link = run_file(run, entry["live"], LIVE)
    st = link.lstat()
    if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
        return False
    made = _lives.get(str(link))
    if made is not None:
        return made == (st.st_dev, st.st_ino)
    return _pre_run_bytes_in_place(run, {"before": entry["before"], "blob": entry["blob"]}, link.read_bytes())


def rollback(root: Path, run: Path, record: RunRecord, key: bytes | None = None) -> Rollback:
    """Put every touched path back to its journaled bytes. Idempotent, so a crash here is fine.

    Only a path that holds bytes this run wrote is put back. One holding anything else was written
    by something else (an agent appending after a crash, a new file at a path the run meant to
    create): it is left as found. A file the run created is removed only if that loses nothing: the
    store is back to before everywhere else, or the same bytes are at another touched path.
    """
    out = Rollback()
    now: dict[str, Any] = {p: _now(root, p) for p in record.touched}
    created: list[str] = []
    for p, entry in sorted(record.touched.items()):
        cur = now[p]
        try:
            if _state_now(cur) == entry["before"]:
                continue
            if not _ours(run, entry, cur):
                out.kept.append(p)
                continue
            if entry["before"] == ABSENT:
                created.append(p)
                continue
            note = _restore(root, run, p, entry, cur, now, record.touched)
            now[p] = _now(root, p)
            if note:
                out.notes.append(note)
            elif _state_now(now[p]) != entry["before"]:
                out.errors.append(f"{p}: not back to its bytes from before the run")
        except (OSError, Refused) as exc:
            out.error(root, p, exc)
    _remove_created(root, run, record, now, created, out)
    _sweep_touched(root, record)  # a kill mid-write left a temp file: before the folders go
    _remove_created_dirs(root, record)
    _settle_live(root, run, record, out)
    if out.errors:
        return out  # still "prepared": the next command tries again
    record.status = "rolled_back"
    if out.kept:
        record.info["left_as_found"] = out.kept
    if key is not None:
        try:
            _save_record(run, record, key)
        except OSError:
            pass  # the store is back; an unsaved status only means the next command checks again
    return out


def _remove_created(root: Path, run: Path, record: RunRecord, now: dict[str, Any], created: list[str], out: Rollback) -> None:
    """Unlink the files the run created, unless one may be the only live copy of something."""
    try:
        lost = [p for p in out.kept if not _pre_run_bytes_in_place(run, record.touched[p], now[p])]
    except (OSError, Refused):
        lost = list(out.kept)
    holders = None if out.errors else _holders(record, lost)
    for p in created:
        digest = _state_now(now[p])
        elsewhere = [q for q in record.touched if q != p and q not in created and _state_now(now[q]) == digest]
        if not elsewhere and (holders is None or p in holders):
            # e.g. a moved session log whose source path an agent re-created after a crash: both hold data
            origin = [q for q in record.touched if record.touched[q]["before"] == digest]
            why = f"it holds what {origin[0]} held before the run" if origin else "it may hold data found nowhere else"
            out.kept.append(p)
            out.notes.append(f"{p}: kept ({why}; {', '.join(lost) or 'another path'} was written since)")
            continue
        try:
            anchored.remove(root, root / p, missing_ok=True)
            _fsync_dir_quietly((root / p).parent)
        except OSError as exc:
            out.error(root, p, exc)


def _holders(record: RunRecord, lost: list[str]) -> set[str] | None:
    """The files this run created that may hold the pre-run bytes of the `lost` paths (left as
    found, their old bytes not in place): the destination of a move from one; or, if the run
    rewrote one where it was, any file it created (None)."""
    holders: set[str] = set()
    gone: set[str] = set()  # moved or removed so far: a write there makes a new file
    for op in record.ops:
        path, kind = op["path"], op["kind"]
        if path in lost and kind == "move" and path not in gone:
            holders.add(op["dest"])
        if path in lost and kind == "write" and path not in gone:
            return None
        if kind in ("move", "remove"):
            gone.add(path)
        elif kind == "write":
            gone.discard(path)
    return holders


def _settle_live(root: Path, run: Path, record: RunRecord, out: Rollback) -> None:
    """Drop the hard links left over, unless one holds bytes written nowhere else."""
    for p, entry in sorted(record.touched.items()):
        if "live" not in entry:
            continue
        link = run / entry["live"]
        try:
            if not os.path.lexists(link):
                continue
            target = root / p
            same = target.exists() and os.path.samefile(link, target)
            if same or (not link.is_symlink() and sha(link.read_bytes()) == entry["before"]):
                anchored.remove(root, link)
            else:
                out.notes.append(f"{p}: what was written to the file the run replaced is kept in {link}")
        except OSError:
            continue
    try:
        anchored.remove_folder(root, run / "live")
    except OSError:
        pass


# --- recovery ---------------------------------------------------------------------------------


def _sweep(root: Path, rel: str) -> None:
    """Remove our own temp files (TMP_NAME) left by a kill in the store folder `rel`, opened from
    the root down: one that is a symlink, or has one on its way, is not swept."""
    try:
        with anchored.folder(root, rel) as folder:
            for e in list(os.scandir(folder)):
                if TMP_NAME.fullmatch(e.name) and e.is_file(follow_symlinks=False):
                    with contextlib.suppress(OSError):
                        os.unlink(e.name, dir_fd=folder)
    except OSError:
        pass


def _sweep_touched(root: Path, record: RunRecord) -> None:
    folders = {str(Path(p).parent) for p in record.touched} | set(record.dirs_created)
    for rel in sorted(folders):
        _sweep(root, "" if rel == "." else rel)


def _sweep_run(root: Path, view: RunView) -> None:
    for sub in ("", "/before", "/added"):
        _sweep(root, f"{STATE_DIR}/runs/{view.name}{sub}")


def recover(root: Path, strict: bool = True, discard: bool = True) -> list[str]:
    """Roll back every run of ours a crash left unfinished and remove its temp files. Returns one
    message per run recovered. With `strict` (every command that writes), an unfinished journal
    that is not ours, or not of our shape, stops the command (RunFailed); either way it is never
    acted on. With `discard` (every command that writes; `plan` only reports), a run folder
    interrupted before its journal is removed, and an undo killed just past its commit finishes
    removing the folders the run it undid had created (`_finish_cut_short_undo`)."""
    messages = []
    views = run_views(root)
    for view in views:
        if view.problem:
            continue
        if view.empty:
            if not discard:
                continue  # `plan` only reports it: discarding is for the commands that write
            # The crash came before the journal existed: nothing in the store was changed yet, and
            # the folder holds only our own copies.
            anchored.remove_tree(root, view.path)
            messages.append(f"discarded run {view.name}: interrupted before any change")
            continue
        assert view.record is not None
        if view.record.status == "prepared":
            try:
                check_paths(root, view.record)
            except Refused as exc:
                view.problem = str(exc)  # ours, but a folder on its way now leads out of the store
                if not strict:
                    messages.append(view.refusal())
                continue
            messages.append(_recover_one(root, view))
        _sweep(root, f"{STATE_DIR}/runs/{view.name}")
    _sweep(root, STATE_DIR)
    if discard:
        messages.extend(_finish_cut_short_undo(root, views))
    blocked = [v for v in views if v.problem and v.unfinished]
    if strict and blocked:
        more = f" (and {len(blocked) - 1} more)" if len(blocked) > 1 else ""
        raise RunFailed(blocked[0].refusal() + more)
    return messages


def _finish_cut_short_undo(root: Path, views: list[RunView]) -> list[str]:
    """The last step of an undo a kill cut short just past its commit: the folders the undone run
    created, emptied by the undo, removed (`_remove_created_dirs`: only those its signed journal
    records, only empty ones); a message when any went. Only while that undo is the store's last
    run: any run since was made by a command whose recovery came first. The undone run stays
    recorded as committed, as the kill left it: `undo` records it undone (a second `undo` after the
    kill finishes the first, never undoing the run before it as well)."""
    ours = sorted((v.record for v in views if v.record is not None and not v.problem), key=lambda r: (r.created, r.run_id))
    last = ours[-1] if ours else None
    if last is None or last.status != "committed" or "undo_of" not in last.info:
        return []
    undone = [r for r in ours if r.run_id == last.info["undo_of"] and r.status == "committed"]
    removed = _finish_undone_folders(root, undone[0], last.run_id) if undone else []
    if not removed:
        return []
    shown = ", ".join(removed[:3]) + (f" and {len(removed) - 3} more" if len(removed) > 3 else "")
    return [f"run {last.run_id}, the undo of run {undone[0].run_id}, was interrupted after its commit: removed the "
            f"empty folders that run had created ({shown})"]


def _recover_one(root: Path, view: RunView) -> str:
    assert view.record is not None
    key = store_key(root / STATE_DIR)
    result = rollback(root, view.path, view.record, key)
    _sweep_run(root, view)
    if result.errors:
        # a folder of the store swapped for a symlink or a file: the user's to look at (exit 2)
        raise (FolderSwapped if result.swapped else RunFailed)(
            f"run {view.name} was interrupted and could not be fully rolled back ({'; '.join(result.errors[:2])}); "
            f"its copies are in {view.path / 'before'}"
        )
    message = f"rolled back run {view.name}: it was interrupted; the store is as before it"
    if result.kept:
        message += (
            f", except {', '.join(result.kept)}: written by something else since, left as found "
            f"(their bytes from before the run are in {view.path / 'before'})"
        )
    if result.notes:
        message += "; " + "; ".join(result.notes)
    return message


# --- undo -------------------------------------------------------------------------------------


def committed_runs(root: Path) -> list[RunRecord]:
    records = [v.record for v in run_views(root) if v.record is not None and v.record.status == "committed"]
    # In the order they ran: run ids sort by second, then by a suffix counting up (new_run_id).
    return sorted(records, key=lambda r: (r.created, r.run_id))


# --- retention ----------------------------------------------------------------------------------

FINISHED = ("committed", "undone")  # what a signed journal of ours says of a run that is over
_RUN_ENTRIES = {JOURNAL, SPARE, "before", "added", "live"}  # all a run folder of ours ever holds


def prune_runs(root: Path, keep: int) -> list[str]:
    """Remove the run folders of all but the newest `keep` finished runs; the names removed.

    Only a folder whose journal is ours (signed with this store's key, of our shape) and says the
    run is over is ever removed, and only when it holds nothing but what a run writes: an
    unfinished run, a foreign or unreadable journal, or a stray file is left alone. The journal
    goes first: a prune cut short leaves a folder of copies without a journal, which reads as a run
    interrupted before any change and is discarded by the next command that writes.
    """
    finished = sorted(
        (v for v in run_views(root) if v.record is not None and v.record.status in FINISHED),
        key=lambda v: (v.record.created, v.record.run_id),  # type: ignore[union-attr]
    )
    pruned = []
    for view in finished[: max(0, len(finished) - max(1, keep))]:
        if view.path.is_symlink() or not {e.name for e in os.scandir(view.path)} <= _RUN_ENTRIES:
            continue
        for name in (SPARE, JOURNAL):
            anchored.remove(root, view.path / name, missing_ok=True)
        anchored.remove_tree(root, view.path)  # never follows a symlink inside (and refuses one at the top)
        pruned.append(view.name)
    if pruned:
        _fsync_dir_quietly(view.path.parent)
    return pruned


def pruned_message(root: Path, run_id: str) -> str | None:
    """Why `run_id` cannot be undone when it looks like one of ours that retention removed."""
    kept = [v.name for v in run_views(root) if v.record is not None]
    if RUN_NAME.fullmatch(run_id) and re.fullmatch(r"[0-9]{8}T[0-9]{6}Z-[0-9a-f]{4}", run_id) and kept and run_id < min(kept):
        return (f"run {run_id} is too old to undo: only the newest runs are kept (journal.keep_runs) and its "
                f"journal was pruned; the oldest run kept is {min(kept)}")
    return None


def _state_of(root: Path, record: RunRecord, side: str) -> list[str]:
    """Touched paths whose current bytes differ from the run's `side` ("before" or "after")."""
    differ = []
    for p, entry in sorted(record.touched.items()):
        if _state_now(_now(root, p)) != entry[side]:
            differ.append(p)
    return differ


def _lines_added_since(run: Path, entry: dict[str, Any], cur: bytes | None | _Other) -> tuple[bytes, bytes] | None:
    """(the bytes from before the run, ready for what was added since; the bytes added since) when
    `cur` is exactly what the run left plus lines after it (an agent appending a memory the next
    morning); else None.

    Raises RunFailed when the lines cannot be kept: the run appended to the file in place (undo cuts
    such a file back where it is, or not at all)."""
    size = entry.get("after_size")
    if size is None or entry["before"] == ABSENT or not isinstance(cur, bytes) or len(cur) <= size:
        return None
    left = cur[:size]
    if sha(left) != entry["after"] or not cur.endswith((b"\n", b"\r")):
        return None  # a line still being written, or something else
    if "append" in entry:
        # Cut back in place or not at all: a rewrite would leave an agent holding the file open
        # writing on into a file no one reads any more.
        raise RunFailed("the run appended to it in place, and undo takes such an append back only by cutting "
                        "the file where it is: save the lines added since, remove them, undo, then add them back")
    before = _ready_for_added(read_blob(run, entry["blob"], entry["before"]), left, cur)
    return None if before is None else (before, cur[size:])


def _ready_for_added(before: bytes, left: bytes, cur: bytes) -> bytes | None:
    """The bytes from before the run, made ready for what was added after the bytes the run `left`
    (`cur`: those and the added ones) to follow them as it followed the run's: as they are when both
    end alike (with a line break, or on the same last line, which the agent then wrote on in either
    file); with the line break the run gave their last line when they had none (a rebuild ends
    MEMORY.md with one: the agent's first line would otherwise be glued onto the owner's last); None
    when the added bytes continue an unterminated last line of the run's own (write on it, not after it)."""
    last = _last_line(left)
    if last == _last_line(before):
        return before
    if not last:
        return before + (_final_break(left) or _final_break(cur))
    if _last_line(before) and cur[len(left) : len(left) + 1] in (b"\n", b"\r"):
        # The run's last line and the owner's differ, both unterminated, and the agent first ended
        # that line: what it added follows the owner's last line as it followed the run's.
        return before
    return None


def _last_line(data: bytes) -> bytes:
    """What follows the last line break (b"" when the bytes end with one)."""
    return data[max(data.rfind(b"\n"), data.rfind(b"\r")) + 1 :]


def _final_break(data: bytes) -> bytes:
    """The line break the bytes end with (CRLF, LF or CR), b"" when none."""
    return b"\r\n" if data.endswith(b"\r\n") else data[-1:] if data.endswith((b"\n", b"\r")) else b""


def undo_ops(root: Path, record: RunRecord, later: Sequence[RunRecord] = ()) -> tuple[list[Op], dict[str, int]]:
    """The ops that put back what `record` changed, and the bytes of lines added since that they
    keep (path -> count): a file the run rewrote that holds exactly what the run left plus whole
    lines added at its end gets its bytes from before the run plus those lines, unless one of the
    `later` runs (applied after it, not undone) changed it too: those lines may be that run's.
    Refuses if the files changed any other way."""
    run = runs_dir(root) / record.run_id
    try:
        check_paths(root, record)
    except Refused as exc:
        raise RunFailed(f"cannot undo run {record.run_id}: {exc}") from None
    added: dict[str, tuple[bytes, bytes, str]] = {}
    changed = []
    for p in _state_of(root, record, "after"):
        after_it = [r.run_id for r in later if p in r.touched]
        if after_it:
            raise RunFailed(f"cannot undo run {record.run_id}: {p} was changed since by run {after_it[-1]}, applied after it: "
                            f"undo that run first")
        cur = _now(root, p)
        try:
            found = _lines_added_since(run, record.touched[p], cur)
        except (OSError, Refused) as exc:
            raise RunFailed(f"cannot undo run {record.run_id}: the copy of {p} is unusable ({exc})") from None
        except RunFailed as exc:
            raise RunFailed(f"cannot undo run {record.run_id}: {p} gained lines since it ran, but {exc}") from None
        if found is None:
            changed.append(p)
        else:
            added[p] = (*found, _state_now(cur))
    if changed:
        shown = ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")
        raise RunFailed(f"cannot undo run {record.run_id}: changed since it ran: {shown}")
    back = _moves_back(record, set(added))
    returning = set(back.values())
    moves: list[Op] = []
    puts: list[Op] = []
    removes: list[Op] = []
    for p, entry in sorted(record.touched.items()):
        if p in back:
            # Moved away by the run and still as it left it: moved back, the same file, whatever
            # its name's length, and never in neither place on the way.
            moves.append(Op("move", p, dest=back[p], expect=entry["after"]))
        elif p in returning:
            continue  # put back by the move above
        elif p in added:
            # Rewritten, not cut in place: the lines after the run's bytes stay, the run's go.
            before, lines, now = added[p]
            puts.append(Op("write", p, data=before + lines, expect=now, mode=entry.get("mode")))
        elif entry["before"] == ABSENT:
            if entry["after"] != ABSENT:
                removes.append(Op("remove", p, expect=entry["after"]))
        elif entry["after"] == entry["before"]:
            continue
        elif "append" in entry:
            # cut the append back off in place: whoever holds the file open keeps the same file
            puts.append(Op("truncate", p, expect=entry["after"], length=entry["append"]["length"]))
        else:
            try:
                blob = read_blob(run, entry["blob"], entry["before"])
            except (OSError, Refused) as exc:
                raise RunFailed(f"cannot undo run {record.run_id}: the copy of {p} is unusable ({exc})") from None
            puts.append(Op("write", p, data=blob, expect=entry["after"], mode=entry.get("mode")))
    # Removals last: a file the run created goes only once every file is back where it was, so a
    # write that fails (a full disk) never follows the removal of the only other copy in the store.
    return moves + puts + removes, {p: len(lines) for p, (_, lines, _) in sorted(added.items())}


def _moves_back(record: RunRecord, rewritten: set[str]) -> dict[str, str]:
    """Where each file the run moved goes back to (its destination -> its path before the run): a
    move the run made whose destination still holds, untouched since (not in `rewritten`), exactly
    what the source held, the source now absent as the run left it."""
    back: dict[str, str] = {}
    for op in record.ops:
        src, dest = op["path"], op.get("dest")
        if op["kind"] != "move" or dest is None or src in back.values() or dest in back:
            continue
        s, d = record.touched.get(src), record.touched.get(dest)
        if s is None or d is None or src in rewritten or dest in rewritten or "append" in s:
            continue
        if s["before"] != ABSENT and s["after"] == ABSENT and d["before"] == ABSENT and d["after"] == s["before"]:
            back[dest] = src
    return back


def undo(root: Path, run_id: str | None = None) -> RunRecord:
    committed = committed_runs(root)
    runs = [r for r in committed if "undo_of" not in r.info]
    if run_id is not None and run_id not in {r.run_id for r in runs}:
        refused = [v for v in run_views(root) if v.name == run_id and v.problem]
        if refused:
            raise RunFailed(f"cannot undo run {run_id}: {refused[0].problem}")
    if not runs:
        raise RunFailed((run_id and pruned_message(root, run_id)) or f"no applied run to undo in {root}")
    if run_id is None:
        target = runs[-1]
    else:
        matches = [r for r in runs if r.run_id == run_id]
        if not matches:
            raise RunFailed(pruned_message(root, run_id)
                            or f"no applied run {run_id} in {root} (known: {', '.join(r.run_id for r in runs[-5:])})")
        target = matches[0]
    key = store_key(state_dir(root), create=True)
    assert key is not None
    done = [r for r in committed if r.info.get("undo_of") == target.run_id]
    if done or not _state_of(root, target, "before"):
        # Already undone (an undo that crashed after its own commit, maybe keeping lines added since,
        # or a store put back by hand): its folders may still be there, then record it.
        if done:
            _finish_undone_folders(root, target, done[-1].run_id)
        else:
            _remove_created_dirs(root, target)
        target.status = "undone"
        _save_record(runs_dir(root) / target.run_id, target, key)
        return done[-1] if done else target
    later = [r for r in runs if (r.created, r.run_id) > (target.created, target.run_id)]
    ops, kept = undo_ops(root, target, later)
    info: dict[str, Any] = {"undo_of": target.run_id}
    if kept:
        info["kept_added"] = kept  # lines added since the run, left in place after the run's undone bytes
    result = execute(root, ops, info=info)
    _remove_created_dirs(root, target)
    target.status = "undone"
    _save_record(runs_dir(root) / target.run_id, target, key)
    return result


# Set on a run an undo undid once the folders it had created are dealt with after that undo's
# commit: recovery and a second `undo` then leave the folders alone (one made again since is not ours).
FOLDERS_SETTLED = "folders_settled"


def _finish_undone_folders(root: Path, undone: RunRecord, undo_id: str) -> list[str]:
    """The folders run `undone` created, which its undo (`undo_id`) emptied but a kill kept it from
    removing: removed once, and only those untouched since that undo's commit (its journal's last
    write: one made again since, an agent's mkdir before its write or the user's, is not ours);
    recorded as settled (FOLDERS_SETTLED) so no later command looks again. The ones removed."""
    if undone.info.get(FOLDERS_SETTLED):
        return []
    committed = _journal_written(root, undo_id)
    removed = _remove_created_dirs(root, undone, committed) if committed is not None else []
    key = store_key(state_dir(root))
    if key is not None:
        undone.info[FOLDERS_SETTLED] = True
        _save_record(runs_dir(root) / undone.run_id, undone, key)
    return removed


def _journal_written(root: Path, run_id: str) -> int | None:
    """When run `run_id`'s journal was last written (ns; its commit for a committed run), or None."""
    try:
        return os.stat(root / STATE_DIR / "runs" / run_id / JOURNAL, follow_symlinks=False).st_mtime_ns
    except OSError:
        return None


def _unchanged_since(root: Path, folder: str, ns: int) -> bool:
    try:
        return anchored.changed_at(root, root / folder) <= ns
    except OSError:
        return False


def _remove_created_dirs(root: Path, record: RunRecord, unchanged_since: int | None = None) -> list[str]:
    """Remove the folders the run `record` journaled creating (rolled back or undone), deepest
    first, those that are empty again (and, with `unchanged_since`, untouched since then); returns
    the ones removed. Each goes by its name in its parent opened from the root down (anchored):
    never through a symlink, nor a symlink put in its place, nor a folder something else lives in now."""
    removed = []
    folders = sorted(record.dirs_created, key=lambda d: (-d.count("/"), d))
    if unchanged_since is not None:  # judged before any goes: removing a folder changes its parent
        # The parent of another folder the run made changed when the cut-short undo removed that
        # one (its last step removes them deepest first): still ours when it is empty.
        folders = [d for d in folders if _unchanged_since(root, d, unchanged_since)
                   or any(other.startswith(d + "/") for other in record.dirs_created)]
    for d in folders:
        try:
            anchored.remove_folder(root, root / d)
        except OSError:
            continue  # not empty, gone already, or not a folder of the store any more: kept as it is
        removed.append(d)
    return removed
