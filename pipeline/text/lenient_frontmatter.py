"""Front matter that strict YAML rejects but the agents that write it read line by line.

Claude Code writes (and reads) `key: value` lines. People and agents write values YAML cannot take
as plain scalars: `description: lifecycle: snapshot timing, ratification` (a second `: `), or
`name: "Quoted" then more words` (text after a closing quote). Claude Code shows the obvious
string; so does this parser. It is the fallback after the YAML parser, never a replacement: a
front matter YAML reads is read by YAML.

The grammar: a top-level line `key: value` (the key an identifier, the value everything after the
first `: `); a key with no value followed by indented `sub: value` lines is a mapping (one level,
`metadata: {type: ...}` as Claude Code's own files nest it), or by indented `- item` lines a list;
other indented lines continue the previous value (a folded description). A value wholly inside
one pair of quotes loses them; any other value is kept as written. A value opening a flow list
or mapping (`[`, `{`) that YAML could not close is malformed, not merely unquoted: refused.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from .yaml_load import safe_load
from ..storage.files import _CLOSE, _OPEN, FrontMatter, Unreadable, split_frontmatter

_KEY_LINE = re.compile(r"^(?P<key>[A-Za-z_][\w.-]*)[ \t]*:(?:[ \t]+(?P<value>.*?))?[ \t]*$")
_SUB_LINE = re.compile(r"^[ \t]+(?P<key>[A-Za-z_][\w.-]*)[ \t]*:(?:[ \t]+(?P<value>.*?))?[ \t]*$")
_BLOCK_INDICATORS = {">", ">-", ">+", "|", "|-", "|+"}
_ITEM_LINE = re.compile(r"^[ \t]+-[ \t]+(?P<value>.*?)[ \t]*$")


def _scalar(written: str | None) -> str:
    value = (written or "").strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        inner = value[1:-1]
        # Wholly quoted: one pair of quotes around the value, none left unescaped inside.
        if value[0] == '"' and not re.search(r'(?<!\\)"', inner):
            return inner.replace('\\"', '"').replace("\\\\", "\\")
        if value[0] == "'" and "'" not in inner.replace("''", ""):
            return inner.replace("''", "'")
    return value


def parse_lines(text: str) -> dict[str, Any] | None:
    """The mapping a line reader takes from `text`, or None when no line is a `key: value` line."""
    meta: dict[str, Any] = {}
    last: str | None = None  # the top-level key the next indented line belongs to
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        top = _KEY_LINE.match(line)
        if top and (top.group("value") or "").startswith(("[", "{")):
            return None  # a flow list or mapping YAML could not close: malformed, not merely unquoted
        if top and top.group("value") in _BLOCK_INDICATORS:
            last = top.group("key")
            meta[last] = None  # `>` or `|`: the indented lines below are its text
            continue
        if top:
            last = top.group("key")
            meta[last] = _scalar(top.group("value")) if top.group("value") else None
            continue
        if last is None or not line[:1].isspace():
            return None  # a line that is neither a key nor belongs to one: not front matter we read
        current = meta[last]
        sub, item = _SUB_LINE.match(line), _ITEM_LINE.match(line)
        if sub and (current is None or isinstance(current, dict)):
            meta[last] = {**(current or {}), sub.group("key"): _scalar(sub.group("value")) if sub.group("value") else None}
        elif item and (current is None or isinstance(current, list)):
            meta[last] = [*(current or []), _scalar(item.group("value"))]
        elif isinstance(current, str) or current is None:
            meta[last] = " ".join(p for p in ((current or ""), line.strip()) if p)  # a folded continuation
        else:
            return None
    return meta or None


def _syntax_error(raw: str) -> bool:
    try:
        safe_load(raw)
    except yaml.YAMLError:
        return True
    except Exception:  # noqa: BLE001 - any other failure is the constructor's, not the syntax's
        return False
    return False


def split_frontmatter_lenient(text: str) -> tuple[FrontMatter, bool]:
    """`split_frontmatter`, falling back to `parse_lines` when the YAML is malformed.

    Returns the front matter and whether the fallback read it. Anything else `split_frontmatter`
    refuses (an alias bomb, a list instead of a mapping) stays refused.
    """
    try:
        return split_frontmatter(text), False
    except Unreadable as exc:
        if not str(exc).startswith("malformed YAML front matter") or "alias" in str(exc):
            raise
        refused = exc
    # The same delimiters split_frontmatter found (it got as far as parsing between them).
    opening = _OPEN.match(text)
    closing = _CLOSE.search(text, opening.end()) if opening else None
    if opening is None or closing is None:
        raise refused
    raw = text[opening.end() : closing.start()]
    if not _syntax_error(raw):
        raise refused  # YAML read it but Python could not build a value (a 13th month): not a line-reader matter
    meta = parse_lines(raw)
    if meta is None:
        raise refused
    return FrontMatter(meta=meta, present=True, body=text[closing.end() :], raw=raw), True
