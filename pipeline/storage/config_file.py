"""Finding and reading a settings file: `--config`, a store's own `.memconsolidate.toml`, the user's.

A settings file is read as every other file memconsolidate opens is (files.py): a regular file within
a cap, checked before the open and on what was opened. A store's own config is the store's to write,
so it is trusted as little as a memory: it may not be a symlink out of the store or into its state
folder, and it may not choose what is read or written outside the store (STORE_CONFIG_FORBIDS).
"""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path
from typing import Any

from ..config import PROJECT_CONFIG, STATE_DIR, STORE_CONFIG_FORBIDS, Settings, sets, unknown_key
from ..errors import ConfigError
from .files import Unreadable, open_regular_file, read_capped, resolved_below

MAX_CONFIG_BYTES = 1 << 20  # a settings file is a few lines; a store's own is the store's to make


def user_config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "memconsolidate" / "config.toml"


def find_config(explicit: str | Path | None, store: str | Path | None) -> Path | None:
    """The settings file to read: `--config`, else `<store>/.memconsolidate.toml`, else
    `$XDG_CONFIG_HOME/memconsolidate/config.toml` (~/.config when unset), else none."""
    if explicit is not None:
        return Path(explicit)
    candidates = [Path(store) / PROJECT_CONFIG] if store is not None else []
    candidates.append(user_config_path())
    return next((c for c in candidates if c.is_file()), None)


def load_user_config(path: str | Path | None, store: str | Path | None = None) -> dict[str, Any]:
    """Read a settings file (TOML or JSON) into a nested dict of Settings sections; every key is
    checked against Settings, so a misspelt one is an error rather than silently ignored."""
    if path is None:
        return {}
    p = Path(path)
    own = store is not None and p.name == PROJECT_CONFIG and p.parent.resolve() == Path(store).resolve()
    if own:
        _refuse_leaving_the_store(p)
    raw = _config_bytes(p)
    try:
        if p.suffix == ".json":
            data = json.loads(raw.decode("utf-8"))
        else:
            data = tomllib.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ConfigError(f"config {p} is not valid {'JSON' if p.suffix == '.json' else 'TOML'}: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"config {p} must be a table of sections")
    unknown = unknown_key(Settings, data, "")
    if unknown:
        raise ConfigError(f"unknown setting {unknown} in config {p}")
    if own:
        inside = _paths_in_the_store(data, p)
        for dotted, (what, option) in STORE_CONFIG_FORBIDS.items():
            if sets(data, dotted) and dotted not in inside:
                instead = f"--config or {option}" if option else "--config"
                raise ConfigError(f"config {p} is inside the store and may not set {dotted} ({what}): set it with {instead}")
    return data


def _of_the_store(store: Path, path: Path) -> Path | None:
    """`path` resolved, relative to `store`, when it stays inside it and out of a state folder."""
    below = resolved_below(store, path)
    return below if below is not None and STATE_DIR not in below.parts else None


def _paths_in_the_store(data: dict[str, Any], p: Path) -> set[str]:
    """The path settings of a store's own config that stay in the store, which it may then make: its
    `repo` a folder of the store (`repo = "."`: a claude project store its own repository), made
    absolute here, so it is read from the store's root whatever folder the command runs in;
    `claude.consult_log` a relative path without `..` (joined to the project folder, as the default
    is). Any other value of theirs is refused (STORE_CONFIG_FORBIDS)."""
    store = p.parent
    kept: set[str] = set()
    repo = data.get("repo")
    if isinstance(repo, str) and repo and not os.path.isabs(repo):
        below = _of_the_store(store, store / repo)
        if below is not None:
            data["repo"] = str(store.resolve() / below)
            kept.add("repo")
    claude = data.get("claude")
    log = claude.get("consult_log") if isinstance(claude, dict) else None
    if isinstance(log, str) and log and not os.path.isabs(log) and ".." not in Path(log).parts:
        kept.add("claude.consult_log")
    return kept


def _refuse_leaving_the_store(p: Path) -> None:
    """A store's own config that is a symlink out of the store (or into its state folder) is not
    read: the store would choose a file of the user's to be read as settings."""
    if _of_the_store(p.parent, p) is None:
        raise ConfigError(f"config {p} is a symlink to {Path(os.path.realpath(p))}, not a file of the store's own: not read")


def _config_bytes(p: Path) -> bytes:
    """The bytes of a settings file: a regular file (opening a FIFO waits for a writer forever, a
    device may act on being opened), within the cap."""
    if os.path.realpath(p) == os.devnull:  # `--config /dev/null`: the usual way to say "no settings"
        return b""
    try:
        return read_capped(open_regular_file(p, MAX_CONFIG_BYTES), MAX_CONFIG_BYTES)
    except Unreadable as exc:
        reason = str(exc)
        if reason.startswith("cannot "):  # "cannot stat: <why>", "cannot read: <why>"
            raise ConfigError(f"cannot read config {p}: {reason.partition(': ')[2]}") from None
        raise ConfigError(f"config {p} is {reason.removeprefix('file ')}") from None  # "not a regular file"
    except OSError as exc:
        raise ConfigError(f"cannot read config {p}: {exc.strerror or exc}") from None
