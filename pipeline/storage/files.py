"""Safe, read-only access to the files of a store, shared by every adapter.

Every reader goes through `read_text` so the same rules hold everywhere: a symlink that leaves the
store, a binary or non-UTF-8 file, or a file over the size cap becomes a `parse_error` finding and
the run goes on. Nothing here writes.
"""

from __future__ import annotations

import datetime as dt
import errno
import hashlib
import os
import re
import stat
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, BinaryIO, Iterator

import yaml
from frontmatter.default_handlers import YAMLHandler

from ..text.yaml_load import TooDeep, check_depth
from ..config import STATE_DIR
from ..errors import MemconsolidateError
from .walk import walk_down
from ..model import Finding

_YAML = YAMLHandler()
# PyYAML raises more than YAMLError: a date like 2024-13-45 or a 5000-digit integer resolves to a
# type it then cannot build (ValueError), and deep nesting can exhaust the stack.
YAML_ERRORS = (yaml.YAMLError, ValueError, TypeError, OverflowError, RecursionError)
SKIP_DIRS = {".git", "node_modules", "__pycache__", ".venv", STATE_DIR}


class Unreadable(MemconsolidateError):
    """A file that cannot be taken as text; its message becomes the parse_error reason."""


class TooLarge(Unreadable):
    """A file over the size cap it is read with."""


def rel(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix()


def parse_error(key: str, reason: str) -> Finding:
    return Finding(kind="parse_error", targets=[key], reason=reason)


def inside(root: Path, path: Path) -> bool:
    """Whether `path`, with every symlink resolved, stays inside `root`."""
    return resolved_below(root, path) is not None


def resolved_below(root: Path, path: Path) -> Path | None:
    try:
        # A relative root names another folder once the process changes folder: resolved each time.
        return path.resolve().relative_to(_resolved_root(root) if root.is_absolute() else root.resolve())
    except (ValueError, OSError, RuntimeError):  # Python 3.11 raises RuntimeError on a symlink loop
        return None


@lru_cache(maxsize=64)
def _resolved_root(root: Path) -> Path:
    # The same store root for every file of a store (a stat per folder on its way, once, not per file).
    return root.resolve()


def symlink_loop(path: Path) -> bool:
    try:
        path.resolve(strict=True)
    except RuntimeError:
        return True
    except OSError as exc:
        return exc.errno == errno.ELOOP
    return False


def read_text(root: Path, path: Path, max_bytes: int) -> str:
    """UTF-8 text of a store file (BOM dropped), or `Unreadable` with a short reason."""
    return decode_text(read_bytes(root, path, max_bytes))


def read_text_sha(root: Path, path: Path, max_bytes: int) -> tuple[str, str]:
    """`read_text` and the sha256 of the bytes it was decoded from (what a plan judged: a writer
    compares it with the file's bytes at apply time)."""
    read = read_text_measured(root, path, max_bytes)
    return read.text, read.sha


@dataclass(frozen=True)
class TextRead:
    text: str
    sha: str  # of the bytes read
    length: int  # how many bytes were read (a BOM counts): where what was appended since begins


def read_text_measured(root: Path, path: Path, max_bytes: int) -> TextRead:
    """`read_text_sha`, with how many bytes it read."""
    data = read_bytes(root, path, max_bytes)
    return TextRead(decode_text(data), hashlib.sha256(data).hexdigest(), len(data))


def decode_text(data: bytes) -> str:
    """The readers' rules for text: UTF-8 (BOM dropped), no NUL byte; else `Unreadable`."""
    if b"\x00" in data:
        raise Unreadable("binary file (NUL byte)")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise Unreadable(f"not UTF-8 (byte {exc.start})") from None


def read_bytes(root: Path, path: Path, max_bytes: int) -> bytes:
    """The bytes of a store file within the size cap, never through a symlink leaving the store."""
    return read_capped(open_checked(root, path, max_bytes), max_bytes)


def read_capped(fh: BinaryIO, max_bytes: int) -> bytes:
    with fh:
        data = b"".join(read_chunks(fh, max_bytes + 1))  # bounded even if the file grew since the stat
    if len(data) > max_bytes:
        raise TooLarge(f"file too large (over {max_bytes} bytes)")
    return data


# What one read takes: big enough that the calls cost nothing beside what is done with the bytes.
READ_CHUNK = 1 << 20


def read_chunks(fh: BinaryIO, limit: int, chunk: int = READ_CHUNK) -> Iterator[bytes]:
    """A file's bytes from where it is, `chunk` at a time, `limit` of them at the most (`Unreadable`
    if reading fails). Never one read of `limit`: that allocates a buffer of the whole cap up front
    (a bank's cap is 64 times max_file_bytes), whatever the file's size."""
    total = 0
    while total < limit:
        try:
            data = fh.read(min(chunk, limit - total))
        except OSError as exc:
            raise Unreadable(f"cannot read: {exc.strerror or exc}") from None
        if not data:
            return
        total += len(data)
        yield data


def open_checked(root: Path, path: Path, max_bytes: int) -> BinaryIO:
    """A store file opened for reading after `read_bytes`' checks (inside the store, a regular file,
    within the size cap when opened): for a reader that streams it, bounding what it reads itself."""
    if path.is_symlink() and symlink_loop(path):
        raise Unreadable("symlink loop")
    # Every path, not only a symlinked file: a symlinked folder on the way leaves the store as well.
    below = resolved_below(root, path)  # resolved once: a stat per folder on the way
    if below is None:
        raise Unreadable("symlink points outside the store")
    if STATE_DIR in below.parts:
        # The store's state folder (or a nested store's): a memory that is a symlink to the signing
        # key would put the key into an index or a prompt, and whoever read it there could sign a
        # journal that rollback obeys.
        raise Unreadable(f"points into {STATE_DIR}/, memconsolidate's own state (journals, key): never read as a memory")
    try:
        return open_regular_file(path, max_bytes)
    except FileNotFoundError as exc:
        raise Unreadable(f"cannot stat: {exc.strerror or exc}") from None


def open_regular_file(path: Path, max_bytes: int, *, follow: bool = True, folder: int | None = None) -> BinaryIO:
    """`path` opened for reading if it is a regular file within the size cap, checked before the open
    (a FIFO blocks an open, a device may act on one) and again on the file opened (one swapped in
    meanwhile is not the one read); with `follow=False` never through a symlink of its own name;
    `folder`: a folder's descriptor `path` is relative to. FileNotFoundError when there is no such
    file; `Unreadable` with a short reason for anything else."""
    try:
        before = os.stat(path, dir_fd=folder, follow_symlinks=follow)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise Unreadable(f"cannot stat: {exc.strerror or exc}") from None
    if stat.S_ISLNK(before.st_mode):
        raise Unreadable("a symlink (never followed)")
    _check_regular(before, max_bytes)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | (0 if follow else os.O_NOFOLLOW), dir_fd=folder)
    except FileNotFoundError:
        raise
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow:
            raise Unreadable("a symlink (never followed)") from None
        raise Unreadable(f"cannot read: {exc.strerror or exc}") from None
    try:
        _check_regular(os.fstat(fd), max_bytes)
    except Unreadable:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def _check_regular(st: os.stat_result, max_bytes: int) -> None:
    if not stat.S_ISREG(st.st_mode):  # a FIFO reports size 0 and then blocks the read forever
        raise Unreadable("not a regular file")
    if st.st_size > max_bytes:
        raise TooLarge(f"file too large ({st.st_size} bytes > {max_bytes})")


def read_own(path: Path, max_bytes: int, *, folder_too: bool = False) -> bytes:
    """The bytes of a file memconsolidate keeps for itself (a state file, never a memory): a regular
    file within the cap, never read through a symlink, of its own name or, with `folder_too`, of
    the folder holding it. FileNotFoundError when there is none; `Unreadable` with a short reason
    for anything else (the file is data: whoever reads it goes on without it)."""
    if not folder_too:
        return read_capped(open_regular_file(path, max_bytes, follow=False), max_bytes)
    try:
        if stat.S_ISLNK(os.lstat(path.parent).st_mode):
            raise Unreadable(f"its folder {path.parent.name}/ is a symlink (never followed)")
        # O_NOFOLLOW on the folder too: one swapped for a symlink since the lstat is not opened
        folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise Unreadable(f"its folder {path.parent.name}/ cannot be opened: {exc.strerror or exc}") from None
    try:
        return read_capped(open_regular_file(Path(path.name), max_bytes, follow=False, folder=folder), max_bytes)
    finally:
        os.close(folder)


@dataclass
class FrontMatter:
    meta: dict[str, Any]
    present: bool
    body: str  # everything after the closing delimiter line, byte for byte
    raw: str  # the YAML text between the delimiters, as written
    sha: str = ""  # sha256 of the file's bytes, when read from a file


_OPEN = re.compile(r"\A---[ \t]*\r?\n")
_CLOSE = re.compile(r"^---[ \t]*(?:\r?\n|\Z)", re.MULTILINE)


def split_frontmatter(text: str) -> FrontMatter:
    """Split `---` front matter from the body without touching the body.

    The delimiters are found here (python-frontmatter's boundary regex can swallow a blank line that
    belongs to the body); the YAML between them is parsed by python-frontmatter's handler. Raises
    `Unreadable` for malformed YAML or front matter that is not a mapping.
    """
    opening = _OPEN.match(text)
    if not opening:
        return FrontMatter(meta={}, present=False, body=text, raw="")
    closing = _CLOSE.search(text, opening.end())
    if not closing:
        return FrontMatter(meta={}, present=False, body=text, raw="")
    fm_text = text[opening.end() : closing.start()]
    try:
        meta = _YAML.load(fm_text) if fm_text.strip() else {}
    except YAML_ERRORS as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 2}" if mark is not None else ""
        raise Unreadable(f"malformed YAML front matter{where}") from None
    try:
        check_depth(meta)
    except TooDeep:
        raise Unreadable("malformed YAML front matter: nested too deep") from None
    if not expands_within(meta, len(fm_text)):
        raise Unreadable("malformed YAML front matter: aliases expand too far (alias bomb or self-reference)")
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        raise Unreadable(f"front matter is a {type(meta).__name__}, not a mapping")
    return FrontMatter(
        meta={str(k): v for k, v in meta.items()}, present=True, body=text[closing.end() :], raw=fm_text
    )


def expands_within(value: Any, text_chars: int) -> bool:
    """Whether `value`, walked as a tree with every YAML alias expanded, stays near the size of its text.

    Without aliases every node costs at least a character of text; aliases can make a few hundred
    bytes expand to billions of nodes (or loop forever) for whoever walks or prints the value later.
    """
    budget = text_chars + 1000
    stack = [value]
    while stack:
        budget -= 1
        if budget < 0:
            return False
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple, set, frozenset)):
            stack.extend(item)
    return True


def read_memory_file(root: Path, path: Path, max_bytes: int, findings: list[Finding]) -> FrontMatter | None:
    """A memory file's front matter and body, or None with a parse_error added to `findings`."""
    try:
        data = read_bytes(root, path, max_bytes)
    except Unreadable as exc:
        findings.append(parse_error(rel(root, path), str(exc)))
        return None
    return memory_from_bytes(rel(root, path), data, max_bytes, findings)


def memory_from_bytes(key: str, data: bytes, max_bytes: int, findings: list[Finding]) -> FrontMatter | None:
    """`read_memory_file` for bytes already read (a writer's view of the store after its run)."""
    try:
        if len(data) > max_bytes:
            raise Unreadable(f"file too large ({len(data)} bytes > {max_bytes})")
        fm = split_frontmatter(decode_text(data))
    except Unreadable as exc:
        findings.append(parse_error(key, str(exc)))
        return None
    fm.sha = hashlib.sha256(data).hexdigest()
    return fm


def walk_files(root: Path, start: Path, pattern_suffixes: tuple[str, ...], not_followed: list[Path] | None = None) -> Iterator[Path]:
    """Files under `start` whose names end with one of the suffixes, in sorted order.

    Symlinked directories are not followed (they could loop or leave the store), and are added to
    `not_followed` when given, for the reader to say so; symlinked files are yielded so `read_text`
    can report the ones that point outside.
    """
    if not start.is_dir():
        return
    for dirpath, dirnames, filenames in walk_down(start):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        if not_followed is not None:
            not_followed.extend(Path(dirpath) / d for d in dirnames if (Path(dirpath) / d).is_symlink())
        for name in sorted(filenames):
            if name.endswith(pattern_suffixes):
                yield Path(dirpath) / name


def as_date(value: Any) -> dt.date | None:
    """A front-matter date in any of the shapes YAML gives it (date, datetime, ISO string)."""
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str):
        s = value.strip().strip('"').strip("'")
        try:
            return dt.date.fromisoformat(s[:10])
        except ValueError:
            return None
    return None


def as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return None
    return None


def as_tags(value: Any) -> list[str]:
    if isinstance(value, list):
        return [str(t).strip() for t in value if str(t).strip()]
    if isinstance(value, str):
        return [t.strip() for t in value.strip("[]").split(",") if t.strip()]
    return []


def mtime_date(mtime: float) -> dt.date:
    """The UTC day of a modification time."""
    return dt.datetime.fromtimestamp(mtime, tz=dt.timezone.utc).date()


def mtime_of(path: Path) -> float | None:
    try:
        return path.stat().st_mtime
    except OSError:
        return None
