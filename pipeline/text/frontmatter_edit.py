"""Change a few front-matter keys without touching anything else.

python-frontmatter's `dumps` re-emits every key (quotes, order and body whitespace change), which
makes a one-key change a whole-file diff. Here only the lines of the keys being set are replaced
(or appended before the closing `---`); unknown keys, key order, comments, quoting of other keys
and the body bytes stay as they were. The result is re-parsed and checked before it is returned.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import yaml

from .yaml_load import safe_load
from ..storage.files import Unreadable, split_frontmatter
from .lines import newline_of

_PLAIN_SAFE = re.compile(r"^[A-Za-z0-9_./][A-Za-z0-9_./ +-]*$")
_YAML_WORDS = {"true", "false", "yes", "no", "on", "off", "null", "~", ""}


def _scalar(value: Any, quoted: bool) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    if value is None:
        return "null"
    text = str(value)
    plain_ok = (
        _PLAIN_SAFE.match(text) and text == text.strip() and text.lower() not in _YAML_WORDS and not _looks_numeric(text)
        and _reads_back(text)
    )
    return text if plain_ok and not quoted else _double_quoted(text)


def _reads_back(text: str) -> bool:
    # YAML 1.1 reads some innocent-looking words as numbers ("0_", "1_000"): quote those.
    try:
        return safe_load(text) == text
    except yaml.YAMLError:
        return False


def _double_quoted(text: str) -> str:
    # YAML's own emitter: it escapes what YAML cannot carry raw (control characters, U+2028...).
    return yaml.safe_dump(text, default_style='"', allow_unicode=True, width=10**9).rstrip("\n")


def _looks_numeric(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return bool(re.match(r"^\d{4}-\d{2}-\d{2}", text))


def render_value(value: Any, quoted: bool = False) -> str:
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_scalar(v, quoted) for v in value) + "]"
    if isinstance(value, dict):
        return yaml.safe_dump(value, default_flow_style=True, allow_unicode=True, width=10**9).rstrip("\n")
    return _scalar(value, quoted)


def _key_spans(lines: list[str]) -> dict[str, tuple[int, int]]:
    """Top-level key -> (first line, end line exclusive), continuation lines included."""
    spans: dict[str, tuple[int, int]] = {}
    current: str | None = None
    start = 0
    for i, line in enumerate(lines):
        m = re.match(r"^([^\s#][^:]*):(?:\s|$)", line)
        if m:
            if current is not None:
                spans[current] = (start, i)
            current, start = m.group(1).strip().strip("'\""), i
    if current is not None:
        spans[current] = (start, len(lines))
    return spans


def set_keys(text: str, updates: dict[str, Any]) -> str:
    """`text` with front-matter keys set to `updates` (a file without front matter gains one)."""
    fm = split_frontmatter(text)
    if not fm.present:
        head = "".join(f"{k}: {render_value(v)}\n" for k, v in updates.items())
        return f"---\n{head}---\n{text}"
    prefix_end = text.index(fm.raw) if fm.raw else text.index("\n") + 1
    suffix = text[prefix_end + len(fm.raw):]
    lines = fm.raw.splitlines(keepends=True)
    newline = newline_of(fm.raw)
    spans = _key_spans(lines)
    # New keys follow the file's habit: quoted strings if its title/type are quoted.
    house_quoted = any(
        lines[spans[k][0]].split(":", 1)[1].strip().startswith('"') for k in ("type", "title", "name") if k in spans
    )
    appended: list[str] = []
    replacements: dict[int, tuple[int, str]] = {}
    for key, value in updates.items():
        if key in spans:
            start, end = spans[key]
            # Trailing blank lines and comments inside a key's span belong to the layout, not the value.
            while end - 1 > start and (not lines[end - 1].strip() or lines[end - 1].startswith("#")):
                end -= 1
            old = lines[start].split(":", 1)[1].strip()
            quoted = old.startswith('"') or (old.startswith("[") and '"' in old)
            replacements[start] = (end, f"{key}: {render_value(value, quoted)}{newline}")
        else:
            appended.append(f"{key}: {render_value(value, house_quoted)}{newline}")
    out: list[str] = []
    i = 0
    while i < len(lines):
        if i in replacements:
            end, new_line = replacements[i]
            out.append(new_line)
            i = end
        else:
            out.append(lines[i])
            i += 1
    if out and not out[-1].endswith("\n"):
        out[-1] += newline
    new_raw = "".join(out + appended)
    result = text[:prefix_end] + new_raw + suffix
    _check(text, result, updates)
    return result


def _check(old_text: str, new_text: str, updates: dict[str, Any]) -> None:
    old, new = split_frontmatter(old_text), split_frontmatter(new_text)
    if new.body != old.body:
        raise Unreadable("front-matter edit would change the body")
    for key, value in old.meta.items():
        if key not in updates and new.meta.get(key) != value:
            raise Unreadable(f"front-matter edit would change {key}")
    for key, value in updates.items():
        want = safe_load(f"v: {render_value(value)}")["v"]
        if new.meta.get(key) != want:
            raise Unreadable(f"front-matter edit did not set {key}")
