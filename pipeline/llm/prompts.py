"""Stage prompts: `prompts/<stage>.md`, a `version:` in the front matter, the body is the system message.

The files ship inside the wheel as the package `pipeline.prompts` (pyproject maps it onto the
top-level `prompts/` folder), so an installed tool finds them with importlib.resources. An editable
install maps that package onto a folder without `__init__.py`, which its import hook cannot load;
there the source tree's `prompts/` is used instead.
"""

from __future__ import annotations

import importlib.resources
import re
from dataclasses import dataclass
from importlib.resources.abc import Traversable
from pathlib import Path

from ..storage.files import Unreadable, split_frontmatter
from .canonical import sha256_hex
from .errors import StageCallError

STAGE_NAME = re.compile(r"^[a-z][a-z0-9_\-]{0,63}$")
# Read the version from the raw front matter, not from YAML: YAML 1.1 turns `1.10` into 1.1.
_VERSION = re.compile(r"^version\s*:\s*(?P<v>.*?)\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Prompt:
    stage: str
    version: str
    text: str  # the system message: the body, stripped
    sha256: str  # of `text`
    source: str  # where it was read from, for messages


def prompts_root(override: str | Path | None = None) -> Traversable:
    """The folder of prompt files: `override`, else the installed package's, else the source tree's
    (of the tree this code is imported from: a checkout on the path beside an editable install of
    another one would otherwise run its code with the other's prompts)."""
    if override is not None:
        return Path(override)
    package = Path(__file__).resolve().parent.parent
    try:
        root = importlib.resources.files("pipeline.prompts")
        if root.is_dir() and (not isinstance(root, Path) or root.resolve().is_relative_to(package)):
            return root
    except (ModuleNotFoundError, TypeError):
        pass
    return package.parent / "prompts"


def parse_prompt(stage: str, raw: str, source: str) -> Prompt:
    try:
        fm = split_frontmatter(raw.lstrip("\ufeff"))
    except Unreadable as exc:
        raise StageCallError(stage, f"prompt {source}: {exc}") from None
    match = _VERSION.search(fm.raw) if fm.present else None
    version = match.group("v").strip().strip("'\"") if match else ""
    if not version:
        raise StageCallError(stage, f"prompt {source} has no version in its front matter")
    text = fm.body.strip()
    if not text:
        raise StageCallError(stage, f"prompt {source} is empty")
    return Prompt(stage=stage, version=version, text=text, sha256=sha256_hex(text), source=source)


def load_prompt(stage: str, root: str | Path | None = None, variant: str | None = None) -> Prompt:
    """The prompt of `stage`, or StageCallError naming the stage (missing, unreadable, no version).

    `variant` ("local": worked examples and a checklist for small local models) reads
    `prompts/<stage>.<variant>.md` where that file exists, else the stage's own prompt.
    """
    if not STAGE_NAME.match(stage):
        raise StageCallError(stage or "?", "invalid stage name")
    folder = prompts_root(root)
    if variant and STAGE_NAME.match(variant) and (folder / f"{stage}.{variant}.md").is_file():
        entry, source = folder / f"{stage}.{variant}.md", f"prompts/{stage}.{variant}.md"
    else:
        entry, source = folder / f"{stage}.md", f"prompts/{stage}.md"
    try:
        raw = entry.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        raise StageCallError(stage, f"prompt file {source} is missing") from None
    except OSError as exc:
        raise StageCallError(stage, f"prompt file {source} cannot be read: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise StageCallError(stage, f"prompt file {source} is not UTF-8") from None
    return parse_prompt(stage, text, source)
