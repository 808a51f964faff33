"""Small integer handles for candidates: the model sees 1, 2, 3..., never a path or an id.

    h = Handles(["memories/a.md", "memories/b.md"], stage="reorder")
    h.handle("memories/b.md")   # -> 2
    h.items()                   # -> [(1, "memories/a.md"), (2, "memories/b.md")]
    h.check([2, 1])             # -> ["memories/b.md", "memories/a.md"]
    h.check([7])                # raises UnknownHandle("reorder", "reply names handle 7, which was not offered")
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .errors import UnknownHandle


class Handles:
    """Numbers keys 1..n in the order given (give them in a deterministic order); duplicates once."""

    def __init__(self, keys: Iterable[str], *, stage: str = "llm", start: int = 1) -> None:
        self.stage = stage
        self._by_key: dict[str, int] = {}
        self._by_handle: dict[int, str] = {}
        for key in keys:
            if key in self._by_key:
                continue
            n = start + len(self._by_key)
            self._by_key[key] = n
            self._by_handle[n] = key

    def __len__(self) -> int:
        return len(self._by_key)

    def __contains__(self, handle: object) -> bool:
        return isinstance(handle, int) and not isinstance(handle, bool) and handle in self._by_handle

    @property
    def keys(self) -> list[str]:
        return list(self._by_key)

    def items(self) -> list[tuple[int, str]]:
        return list(self._by_handle.items())

    def handle(self, key: str) -> int:
        """The handle of a key that was offered (KeyError otherwise: a bug in the stage, not the model)."""
        return self._by_key[key]

    def key(self, handle: Any, *, stage: str | None = None) -> str:
        """The key behind a handle from a reply; UnknownHandle if it was not offered."""
        n = _as_int(handle)
        if n is None or n not in self._by_handle:
            raise UnknownHandle(stage or self.stage, f"reply names handle {repr(handle)[:24]}, which was not offered")
        return self._by_handle[n]

    def check(self, handles: Iterable[Any], *, stage: str | None = None) -> list[str]:
        """Keys for every handle in a reply, in reply order; UnknownHandle on the first one not offered."""
        return [self.key(h, stage=stage) for h in handles]


def _as_int(value: Any) -> int | None:
    # bool is an int subclass: `true` is not handle 1.
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None
