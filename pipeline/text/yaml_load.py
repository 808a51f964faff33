"""One YAML loader for every reader and writer: libyaml's safe loader when PyYAML has it.

`yaml.safe_load` always takes the pure-Python SafeLoader, several times slower than libyaml's
CSafeLoader with the same safe constructors (python-frontmatter already picks the C one).
"""

from __future__ import annotations

from typing import Any

import yaml

from ..errors import MemconsolidateError

LOADER: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# Deeper than any memory file needs. The pure-Python parser recursed once per level and failed past
# the stack (a parse error); libyaml does not, so the limit is kept here: whatever walks the value
# later (JSON dumps, comparisons) recurses too.
MAX_DEPTH = 100


class TooDeep(yaml.YAMLError, MemconsolidateError):
    """YAML nested deeper than MAX_DEPTH: read as malformed (a YAML error to every reader)."""


def safe_load(text: str) -> Any:
    """`yaml.safe_load(text)`, through libyaml when available; nesting past MAX_DEPTH is an error."""
    value = yaml.load(text, Loader=LOADER)  # noqa: S506 - a safe loader
    check_depth(value)
    return value


def check_depth(value: Any, limit: int = MAX_DEPTH) -> None:
    """Raise TooDeep when lists and mappings in `value` nest deeper than `limit` (no recursion;
    a node met twice through an alias is walked once)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    seen: set[int] = set()
    while stack:
        node, depth = stack.pop()
        if not isinstance(node, (list, dict)) or id(node) in seen:
            continue
        if depth >= limit:
            raise TooDeep(f"nested deeper than {limit} levels")
        seen.add(id(node))
        children = node.values() if isinstance(node, dict) else node
        stack.extend((child, depth + 1) for child in children)
