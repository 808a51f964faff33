"""Store adapters: one module per layout, each reading a store into a `Corpus` without writing.

Every adapter module provides:
    LAYOUT: the layout name
    detect(root) -> bool            does this folder look like the layout?
    configure(root, settings)       Settings with the store's own config read in (or UsageError)
    load(root, settings) -> Corpus  read every memory; unreadable files become parse_error findings
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

from ..config import Settings
from ..errors import UsageError
from ..model import Corpus

# Detection order matters: a crux store or a zylos store may also hold markdown that looks like a
# claude folder, so the most specific markers are tried first.
LAYOUTS = ("crux", "zylos", "bank", "claude")


def adapter(layout: str) -> ModuleType:
    if layout not in LAYOUTS:
        raise UsageError(f"unknown layout {layout!r} (expected auto, {', '.join(LAYOUTS)})")
    return importlib.import_module(f"pipeline.layouts.{layout}.reader")


def detect_layout(root: Path) -> str:
    for layout in LAYOUTS:
        if adapter(layout).detect(root):
            return layout
    raise UsageError(
        f"no recognisable memory store at {root} (looked for .crux/crux-memories.json, "
        "identity.md + state.md, */memories.jsonl, MEMORY.md)"
    )


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
    layout = detect_layout(root) if settings.layout == "auto" else settings.layout
    mod = adapter(layout)
    if settings.layout != "auto" and not mod.detect(root):
        raise UsageError(f"{root} does not look like a {layout} store")
    settings = mod.configure(root, settings)
    return mod.load(root, settings), settings
