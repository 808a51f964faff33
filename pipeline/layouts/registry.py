"""Which layouts exist: the built-ins, then third-party ones from an entry point group.

A package adds a layout without touching this project by naming an object that implements
`Layout` (`base.py`; `BaseLayout` supplies the defaults) under the `memconsolidate.layouts` group:

    [project.entry-points."memconsolidate.layouts"]
    mystore = "mystore_layout:LAYOUT"

The entry point's name is the layout's name. A third-party layout is imported only when it is asked
for by name or when detection reaches it, so a broken one cannot stop a run on a built-in layout.

Detection tries the layouts in order, built-ins first, except that layouts whose markers are common
(`catch_all`: a MEMORY.md, which crux, zylos and other stores may also hold) come after all others.

Built-in layout packages import their writers, which import `apply`, which imports this module: so
nothing here imports a layout package until it is first asked for.
"""

from __future__ import annotations

import functools
from importlib.metadata import EntryPoint, entry_points
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from ..errors import ConfigError, UsageError
from .base import Layout

if TYPE_CHECKING:
    from ..config import Settings
    from ..model import Corpus

ENTRY_POINT_GROUP = "memconsolidate.layouts"


@functools.cache
def builtins() -> tuple[Layout, ...]:
    from . import bank, claude, crux, zylos

    return (crux.LAYOUT, claude.LAYOUT, zylos.LAYOUT, bank.LAYOUT)


@functools.cache
def _entry_points() -> tuple[EntryPoint, ...]:
    seen: dict[str, EntryPoint] = {}
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: (e.name, e.value)):
        seen.setdefault(ep.name, ep)  # one distribution found twice on the path
    return tuple(seen.values())


def _builtin_names() -> set[str]:
    return {layout.name for layout in builtins()}


def _protocol_members() -> set[str]:
    """What the Layout protocol asks of a layout: its methods, properties and declared attributes."""
    names = {n for n in vars(Layout) if not n.startswith("_")}
    return names | set(getattr(Layout, "__annotations__", {}))


@functools.cache
def _plugin(name: str) -> Layout:
    (ep,) = (e for e in _entry_points() if e.name == name)
    try:
        layout = ep.load()
    except Exception as exc:  # any import-time failure of someone else's package: one line, exit 2
        raise ConfigError(f"layout plugin {ep.name!r} ({ep.value}) failed to load: {type(exc).__name__}: {exc}") from None
    if not isinstance(layout, Layout):
        missing = sorted(n for n in _protocol_members() if not hasattr(layout, n))
        lacks = f": it lacks {', '.join(missing)} (BaseLayout has defaults for them)" if missing else ""
        raise ConfigError(f"layout plugin {ep.name!r} ({ep.value}) is not a Layout{lacks}")
    if layout.name != ep.name:
        raise ConfigError(f"layout plugin {ep.name!r} ({ep.value}) calls itself {layout.name!r}")
    return layout


def _plugins() -> Iterator[Layout]:
    for ep in _entry_points():
        if ep.name in _builtin_names():
            # Refused loudly rather than ignored: the user installed it to be used.
            raise ConfigError(f"layout plugin {ep.name!r} ({ep.value}) has the name of a built-in layout")
        yield _plugin(ep.name)


def names() -> list[str]:
    """Every layout name, built-ins first, without importing any third-party layout."""
    taken = _builtin_names()
    return [layout.name for layout in builtins()] + [ep.name for ep in _entry_points() if ep.name not in taken]


def reset() -> None:
    """Forget what was found (tests that install a layout)."""
    for cached in (builtins, _entry_points, _plugin):
        cached.cache_clear()


def _detection_order() -> Iterator[Layout]:
    last: list[Layout] = []
    for layout in chain(builtins(), _plugins()):
        if layout.catch_all:
            last.append(layout)
        else:
            yield layout
    yield from last


def get(name: str) -> Layout:
    for layout in builtins():
        if layout.name == name:
            return layout
    if name in names():  # a plugin, imported only now
        return _plugin(name)
    raise UsageError(f"unknown layout {name!r} (expected auto, {', '.join(layout.name for layout in _detection_order())})")


def layout_of(corpus: Corpus) -> Layout:
    return get(corpus.layout)


def detect(root: Path) -> Layout:
    tried: list[Layout] = []
    for layout in _detection_order():
        if layout.detect(root):
            return layout
        tried.append(layout)
    raise UsageError(f"no recognisable memory store at {root} (looked for {', '.join(layout.markers for layout in tried)})")


def detect_layout(root: Path) -> str:
    return detect(root).name


def resolve_root(path: str | Path) -> Path:
    root = Path(path).expanduser()
    if not root.exists():
        raise UsageError(f"path not found: {path}")
    if not root.is_dir():
        raise UsageError(f"not a directory: {path}")
    return root.resolve()


def open_store(path: str | Path, settings: Settings) -> tuple[Corpus, Settings]:
    """Detect (or check) the layout, read the store's config, and load the corpus."""
    root = resolve_root(path)
    layout = detect(root) if settings.layout == "auto" else get(settings.layout)
    if settings.layout != "auto" and not layout.detect(root):
        raise UsageError(f"{root} does not look like a {layout.name} store")
    settings = layout.configure(root, settings)
    return layout.load(root, settings), settings
