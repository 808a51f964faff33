"""`zylos` layout (placeholder until the reader lands)."""

from __future__ import annotations

from pathlib import Path

from ..config import Settings
from ..errors import UsageError
from ..model import Corpus

LAYOUT = "zylos"


def detect(root: Path) -> bool:
    return (root / "identity.md").is_file() and (root / "state.md").is_file()


def configure(root: Path, settings: Settings) -> Settings:
    return settings


def load(root: Path, settings: Settings) -> Corpus:
    raise UsageError("the zylos reader is not implemented yet")
