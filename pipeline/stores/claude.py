"""`claude` layout (placeholder until the reader lands)."""

from __future__ import annotations

from pathlib import Path

from ..config import Settings
from ..errors import UsageError
from ..model import Corpus

LAYOUT = "claude"


def detect(root: Path) -> bool:
    return (root / "MEMORY.md").is_file() or any(root.glob("**/MEMORY.md"))


def configure(root: Path, settings: Settings) -> Settings:
    return settings


def load(root: Path, settings: Settings) -> Corpus:
    raise UsageError("the claude reader is not implemented yet")
