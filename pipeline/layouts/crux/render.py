"""Text the crux writer produces: new memory files in the store's own style, compressed twins that
keep the original's front matter lines, one-line tracker edits, and appended notes.

Every rendering is parsed back and compared with what was meant before it is used.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import yaml

from ...text.yaml_load import safe_load
from ...storage.files import Unreadable, split_frontmatter
from ...text.frontmatter_edit import render_value, set_keys
from ...text.lines import append_paragraphs, newline_of

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
# Keys the real CRUX twins write unquoted (`reducedBy: 66%`, `sourceArchive: .ai-ignored/...`).
BARE_KEYS = frozenset({"reducedBy", "sourceArchive"})
_BARE_OK = re.compile(r"^[A-Za-z0-9_./%+-][A-Za-z0-9_./%+ -]*$")
# Ids can look like numbers (`0123456`): always quoted, like the store writes them.
QUOTED_LIST_KEYS = frozenset({"consolidated_from"})


def native(value: Any) -> Any:
    """A plan JSON value as the front matter should hold it: "YYYY-MM-DD" strings become dates."""
    if isinstance(value, str) and _DATE.match(value):
        try:
            return dt.date.fromisoformat(value)
        except ValueError:
            return value
    if isinstance(value, list):
        return [native(v) for v in value]
    return value


def _render(key: str, value: Any) -> str:
    value = native(value)
    if isinstance(value, str):
        if key in BARE_KEYS and _BARE_OK.match(value) and value == value.strip():
            return value
        return render_value(value, quoted=True)
    if isinstance(value, list):
        return render_value(value, quoted=key in QUOTED_LIST_KEYS)
    return render_value(value)


def render_frontmatter(fm: dict[str, Any]) -> str:
    """YAML lines for `fm` (no delimiters), one `key: value` line per key, in the given order."""
    lines = []
    for key, value in fm.items():
        line = f"{key}: {_render(key, value)}"
        try:
            ok = safe_load(line) == {key: native(value)}
        except yaml.YAMLError:
            ok = False
        if not ok:
            line = yaml.safe_dump({key: native(value)}, default_flow_style=True, allow_unicode=True, width=10**9)
            line = line.strip().removeprefix("{").removesuffix("}")
        lines.append(line + "\n")
    text = "".join(lines)
    if (safe_load(text) or {}) != {k: native(v) for k, v in fm.items()}:
        raise Unreadable("front matter did not render faithfully")
    return text


def _join(head: str, body: str) -> str:
    # The store's files leave one blank line between the front matter and the body.
    return head + ("" if body.startswith(("\n", "\r\n")) else "\n") + body


def new_memory_text(fm: dict[str, Any], body: str) -> str:
    return _join(f"---\n{render_frontmatter(fm)}---\n", body)


def twin_text(original: str, fm: dict[str, Any], body: str) -> str:
    """A compressed twin: the original's front matter lines kept, keys whose value changes or that
    are new set by `set_keys`, and the compressed body."""
    old = split_frontmatter(original)
    changed = {k: native(v) for k, v in fm.items() if k in old.meta and old.meta[k] != native(v)}
    added = {k: v for k, v in fm.items() if k not in old.meta}
    edited = set_keys(original, changed) if changed else original
    head = edited[: len(edited) - len(old.body)] if old.body else edited
    if not old.present:
        head = "---\n---\n"
    if added:
        # New keys in the style real twins use (`reducedBy: 66%`, unquoted archive path).
        closing = head.rstrip("\r\n").rfind("\n") + 1
        newline = newline_of(head)
        head = head[:closing] + render_frontmatter(added).replace("\n", newline) + head[closing:]
    result = _join(head, body)
    meta = split_frontmatter(result).meta
    if meta != {**old.meta, **{k: native(v) for k, v in fm.items()}}:
        raise Unreadable("compressed twin front matter did not come out as planned")
    return result


def append_note(text: str, line: str) -> str:
    """`text` with `line` as its own paragraph at the end of the body."""
    return append_paragraphs(text, [line])


_STRENGTH = re.compile(r"^strength:[ \t]*[^\r\n]*", re.MULTILINE)
_AFTER = (re.compile(r"^last_referenced:[^\r\n]*\r?\n", re.MULTILINE), re.compile(r"^references:[^\r\n]*\r?\n", re.MULTILINE))


def set_tracker_strength(text: str, strength: int) -> str | None:
    """The tracker with its `strength:` line set (added after `last_referenced`/`references` when
    missing); header comment, other keys and their formatting kept. None if that cannot be done
    without changing anything else."""
    if _STRENGTH.search(text):
        out = _STRENGTH.sub(f"strength: {strength}", text, count=1)
    else:
        newline = newline_of(text)
        for pattern in _AFTER:
            m = pattern.search(text)
            if m:
                out = text[: m.end()] + f"strength: {strength}{newline}" + text[m.end() :]
                break
        else:
            out = text + ("" if not text or text.endswith(("\n", "\r")) else newline) + f"strength: {strength}{newline}"
    try:
        old, new = safe_load(text), safe_load(out)
    except yaml.YAMLError:
        return None
    if not isinstance(old, dict) or not isinstance(new, dict):
        return None
    if new.get("strength") != strength or {k: v for k, v in new.items() if k != "strength"} != {
        k: v for k, v in old.items() if k != "strength"
    }:
        return None
    return out
