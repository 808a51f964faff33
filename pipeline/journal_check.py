"""Whether a journal on disk may be acted on: it is ours, of our shape, and names only the store.

A store can arrive with a `.memconsolidate/` folder someone else wrote (cloned from a repository,
unpacked from an archive). Its journals then decide what rollback and undo delete, overwrite and
copy. So nothing read from the state folder is trusted until:

* the journal is bound to this store: an HMAC over its content, keyed by a random secret in
  `.memconsolidate/key` that records the inode it was created with. A key file copied in (or the
  whole store copied) sits on another inode and is not a key; a journal it did not sign is foreign;
* the journal has exactly our shape, and every path in it is relative, normalized, inside the store
  and outside the state folder (its reports aside); every backup name is of our own pattern, inside
  its own run folder.

Nothing here writes, except `store_key(create=True)`, which `execute` calls under the store lock.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import hmac as hmac_mod
import json
import os
import re
import secrets
import stat
from pathlib import Path
from typing import Any

from .errors import MemconsolidateError
from .config import STATE_DIR
from .storage import anchored

ABSENT = "absent"
KEY_FILE = "key"
STATUSES = ("prepared", "committed", "rolled_back", "undone")
KINDS = ("write", "move", "remove", "append", "truncate")
RUN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")
BLOB = re.compile(r"before/[0-9]{5}")
ADDED = re.compile(r"added/[0-9]{5}")
LIVE = re.compile(r"live/[0-9]{5}")
_SHA = re.compile(r"[0-9a-f]{64}")
_KEY = re.compile(rb"([0-9a-f]{64}) ([0-9]{1,20})\n")
MAX_JOURNAL_BYTES = 256 * 1024 * 1024
_RECORD_KEYS = {"run_id", "status", "created", "touched", "dirs_created", "ops", "info", "hmac"}
_ENTRY_KEYS = {"before", "after", "after_size", "states", "blob", "mode", "append", "live"}
_APPEND_KEYS = {"length", "added", "size", "sha"}
_OP_KEYS = {"kind", "path", "dest", "length"}


class Refused(MemconsolidateError):
    """A journal (or a file it names) that is not acted on; the message says why, in a few words."""


# --- reading files of the state folder --------------------------------------------------------


def read_regular(path: Path, limit: int) -> bytes:
    """The bytes of a regular file, never through a symlink, never blocking on a FIFO."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise Refused(f"{path.name} is a symlink") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Refused(f"{path.name} is not a regular file")
        if st.st_size > limit:
            raise Refused(f"{path.name} is too large ({st.st_size} bytes)")
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def run_file(run: Path, name: str, pattern: re.Pattern[str]) -> Path:
    """`run/name` for a name of `pattern` (`before/00003`), refusing a symlinked folder on the way."""
    if not isinstance(name, str) or not pattern.fullmatch(name):
        raise Refused(f"backup name {name!r} is not one of ours")
    folder = run / name.split("/")[0]
    if folder.is_symlink() or not folder.is_dir():
        raise Refused(f"{folder.name}/ of run {run.name} is not a folder of its own")
    return run / name


def read_blob(run: Path, name: str, digest: str, pattern: re.Pattern[str] = BLOB) -> bytes:
    """A backup of run `run`, checked against the digest the journal recorded for it."""
    data = read_regular(run_file(run, name, pattern), MAX_JOURNAL_BYTES * 16)
    if hashlib.sha256(data).hexdigest() != digest:
        raise Refused(f"backup {name} of run {run.name} is not the copy its journal recorded")
    return data


# --- the store's key --------------------------------------------------------------------------


def _read_key(path: Path) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > 200:
            return None
        match = _KEY.fullmatch(os.read(fd, 201))
    finally:
        os.close(fd)
    # The inode the key was created with: a copy (a clone, an archive, `cp -r`) has another one.
    if match is None or int(match.group(2)) != st.st_ino:
        return None
    return bytes.fromhex(match.group(1).decode())


def store_key(state: Path, create: bool = False) -> bytes | None:
    """The secret journals of this store are signed with; with `create`, made if there is none."""
    path = state / KEY_FILE
    key = _read_key(path)
    if key is not None or not create:
        return key
    # In the state folder opened from the store's root, never through a symlink (storage/anchored.py).
    with anchored.folder(state.parent, state.name) as folder:
        tmp = f".{KEY_FILE}.mc-tmp-{secrets.token_hex(3)}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=folder)
        try:
            secret = secrets.token_hex(32)
            os.write(fd, f"{secret} {os.fstat(fd).st_ino}\n".encode())
            os.fsync(fd)
        except BaseException:
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=folder)
            raise
        os.close(fd)
        os.replace(tmp, KEY_FILE, src_dir_fd=folder, dst_dir_fd=folder)  # a rename keeps the inode; a copied-in key is replaced
    return bytes.fromhex(secret)


def _signed_bytes(data: dict[str, Any], run_name: str) -> bytes:
    body = {k: v for k, v in data.items() if k != "hmac"}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode() + b"\n" + run_name.encode()


def sign(key: bytes, data: dict[str, Any], run_name: str) -> str:
    return hmac_mod.new(key, _signed_bytes(data, run_name), hashlib.sha256).hexdigest()


def verify(key: bytes | None, data: dict[str, Any], run_name: str) -> None:
    mac = data.get("hmac")
    if key is None or not isinstance(mac, str) or not hmac_mod.compare_digest(mac, sign(key, data, run_name)):
        raise Refused("its journal was not written by memconsolidate for this store (copied in, edited, or signed by another copy)")


# --- paths ------------------------------------------------------------------------------------


def check_rel(p: Any, folder: bool = False) -> str:
    """`p` if it is a relative, normalized POSIX path of the store outside its state folder (its
    reports aside; a `folder` may be the state folder or its reports folder themselves)."""
    problem = path_problem(p, folder)
    if problem is not None:
        raise Refused(f"path {p!r} {problem}")
    return p


def path_problem(p: Any, folder: bool = False) -> str | None:
    """Why a journal may not name `p` (see check_rel), in a few words after "path 'p'"; None if it may.

    Apply asks before it runs a change set naming one (a file called `zz\\notes.md`, legal on
    POSIX): the action that leads to it is skipped, not the whole run refused."""
    if not isinstance(p, str) or not p or len(p) > 4096:
        return "is not a path"
    if "\\" in p:
        return "holds a backslash (a folder separator on Windows)"
    if "\x00" in p or p.startswith("/"):
        return "is not a relative POSIX path"
    parts = p.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return "is not normalized (empty, . or .. segment)"
    if folder and parts in ([STATE_DIR], [STATE_DIR, "reports"]):
        return None
    if parts[0].casefold() == STATE_DIR and (len(parts) < 3 or parts[1] != "reports"):
        return "is inside the state folder"
    return None


def check_inside(root: Path, p: str) -> None:
    """Refuse a path whose existing folders leave the store through a symlink."""
    folder = root
    real_root = root.resolve()
    for part in p.split("/")[:-1]:
        folder = folder / part
        try:
            st = folder.lstat()
        except FileNotFoundError:
            return  # the rest does not exist: nothing there to leave by
        if stat.S_ISLNK(st.st_mode):
            try:
                folder.resolve(strict=True).relative_to(real_root)
            except (OSError, RuntimeError, ValueError):
                raise Refused(f"path {p!r} leads outside the store through the symlink {part}") from None


def check_paths(root: Path, record: Any) -> None:
    for p in [*record.touched, *record.dirs_created]:
        check_inside(root, p)


# --- the journal's shape ----------------------------------------------------------------------


def _state(v: Any, what: str) -> str:
    if not isinstance(v, str) or not (v == ABSENT or _SHA.fullmatch(v)):
        raise Refused(f"{what} is not a content hash")
    return v


def _count(v: Any, what: str) -> int:
    if not isinstance(v, int) or isinstance(v, bool) or v < 0:
        raise Refused(f"{what} is not a count")
    return v


def _entry(p: str, e: Any) -> None:
    if not isinstance(e, dict) or not set(e) <= _ENTRY_KEYS:
        raise Refused(f"the entry of {p!r} is not of our shape")
    before = _state(e.get("before"), f"before of {p!r}")
    _state(e.get("after"), f"after of {p!r}")
    states = e.get("states", [])
    if not isinstance(states, list):
        raise Refused(f"states of {p!r} is not a list")
    for s in states:
        _state(s, f"a state of {p!r}")
    if "after_size" in e:
        _count(e["after_size"], f"size after the run of {p!r}")
    if "mode" in e and (_count(e["mode"], f"mode of {p!r}") > 0o7777):
        raise Refused(f"mode of {p!r} is out of range")
    if "live" in e and not (isinstance(e["live"], str) and LIVE.fullmatch(e["live"])):
        raise Refused(f"live copy name of {p!r} is not one of ours")
    if "append" in e:
        a = e["append"]
        if not isinstance(a, dict) or set(a) != _APPEND_KEYS or before == ABSENT:
            raise Refused(f"the append of {p!r} is not of our shape")
        _count(a["length"], "an append length")
        _count(a["size"], "an append size")
        _state(a["sha"], "an append hash")
        if not (isinstance(a["added"], str) and ADDED.fullmatch(a["added"])):
            raise Refused(f"backup name {a['added']!r} is not one of ours")
    elif before != ABSENT and not (isinstance(e.get("blob"), str) and BLOB.fullmatch(e["blob"])):
        raise Refused(f"backup name {e.get('blob')!r} of {p!r} is not one of ours")


def _op(o: Any) -> None:
    if not isinstance(o, dict) or not set(o) <= _OP_KEYS or o.get("kind") not in KINDS:
        raise Refused("an op is not of our shape")
    check_rel(o.get("path"))
    if o.get("dest") is not None:
        check_rel(o["dest"])
    if o.get("length") is not None:
        _count(o["length"], "a truncate length")


def check_shape(data: Any, run_name: str) -> None:
    """Refuse anything but a journal of exactly our shape, for run folder `run_name`."""
    if not isinstance(data, dict) or not set(data) <= _RECORD_KEYS or not {"run_id", "status", "touched"} <= set(data):
        raise Refused("its journal is not of our shape")
    if data["run_id"] != run_name:
        raise Refused(f"its journal names another run ({str(data['run_id'])[:40]!r})")
    if data["status"] not in STATUSES:
        raise Refused("its journal has an unknown status")
    if not isinstance(data.get("created", ""), str) or not isinstance(data.get("info", {}), dict):
        raise Refused("its journal is not of our shape")
    touched, dirs, ops = data["touched"], data.get("dirs_created", []), data.get("ops", [])
    if not isinstance(touched, dict) or not isinstance(dirs, list) or not isinstance(ops, list):
        raise Refused("its journal is not of our shape")
    for p, e in touched.items():
        _entry(check_rel(p), e)
    for d in dirs:
        check_rel(d, folder=True)
    for o in ops:
        _op(o)
    undo_of = data.get("info", {}).get("undo_of")
    if undo_of is not None and not (isinstance(undo_of, str) and RUN_NAME.fullmatch(undo_of)):
        raise Refused("its journal names an odd run it undid")
