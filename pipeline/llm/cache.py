"""The reply cache: diskcache on SQLite, safe across processes, values are JSON text only.

Keys are sha256 hex digests of the canonical request (see `client.cache_key`); values are the
validated reply's `model_dump_json()`. diskcache unpickles whatever a row holds, so anyone able to
write the folder could run code through a pickled row: the folder is created 0700 and `safe_disk()`
refuses pickled rows outright (they are deleted, never loaded). Nothing secret is part of a key
or a value.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Any

CACHE_SUBDIR = "replies-v1"


class _PickledRow(Exception):
    pass


@lru_cache(maxsize=None)
def safe_disk() -> Any:
    """The `diskcache.Disk` that refuses pickled rows. Made on first use: diskcache brings sqlite3
    and pickle, which a run without a cache (the stub, `--no-cache`) need not import."""
    import diskcache
    from diskcache.core import MODE_PICKLE

    class SafeDisk(diskcache.Disk):
        def fetch(self, mode, filename, value, read):
            if mode == MODE_PICKLE:
                raise _PickledRow()
            return super().fetch(mode, filename, value, read)

    return SafeDisk


def default_cache_dir(configured: str | None = None) -> Path:
    """`configured` (--cache-dir), else MEMCONSOLIDATE_CACHE_DIR, else $XDG_CACHE_HOME or ~/.cache, /memconsolidate."""
    if configured:
        return Path(configured).expanduser()
    env = os.environ.get("MEMCONSOLIDATE_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg and Path(xdg).is_absolute() else Path.home() / ".cache"
    return base / "memconsolidate"


class ReplyCache:
    def __init__(self, directory: Path) -> None:
        self.directory = directory / CACHE_SUBDIR
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.directory.mkdir(mode=0o700, exist_ok=True)
        # Ours alone, whatever the umask or an older run left.
        os.chmod(self.directory, 0o700)
        import sqlite3

        import diskcache

        # What a cache that cannot be read or written raises: a miss, or an entry lost, never a failure.
        self._errors: tuple[type[BaseException], ...] = (OSError, sqlite3.Error, diskcache.Timeout)
        self._cache = diskcache.Cache(str(self.directory), disk=safe_disk(), eviction_policy="none", timeout=60)

    def get(self, key: str) -> str | None:
        """The stored text, or None: missing, pickled, not text, or the cache cannot be read."""
        try:
            value = self._cache.get(key, default=None, retry=True)
        except _PickledRow:
            self.delete(key)
            return None
        except self._errors:
            return None  # a cache that cannot be read is a miss, not a failed stage
        if value is None:
            return None
        if not isinstance(value, str):
            self.delete(key)
            return None
        return value

    def set(self, key: str, value: str) -> None:
        if not isinstance(value, str):
            raise TypeError("the reply cache stores JSON text only")
        try:
            self._cache.set(key, value, retry=True)
        except self._errors:
            pass  # a full disk loses the cache entry, not the reply

    def delete(self, key: str) -> None:
        try:
            self._cache.delete(key, retry=True)
        except self._errors:
            pass

    def close(self) -> None:
        self._cache.close()
