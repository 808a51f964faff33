"""`crux` layout (placeholder until the reader lands)."""

from __future__ import annotations

from pathlib import Path

from ..config import Settings
from ..errors import UsageError
from ..model import Corpus

LAYOUT = "crux"
CONFIG_FILE = ".crux/crux-memories.json"


def detect(root: Path) -> bool:
    return (root / CONFIG_FILE).is_file()


def configure(root: Path, settings: Settings) -> Settings:
    return settings


def load(root: Path, settings: Settings) -> Corpus:
    raise UsageError("the crux reader is not implemented yet")
