"""Text cut to a length, marked with an ellipsis: one place for the rules of where to cut."""

from __future__ import annotations

ELLIPSIS = "…"


def clip(text: str, limit: int) -> str:
    """At most `limit` characters, cut anywhere, the last one an ellipsis when cut."""
    return text if len(text) <= limit else text[: limit - 1] + ELLIPSIS


def clip_middle(text: str, limit: int) -> str:
    """At most `limit` characters, the middle replaced by an ellipsis when cut: both ends kept, a
    path's first folders and its file name (the end gets the odd character)."""
    if len(text) <= limit:
        return text
    if limit <= 1:
        return ELLIPSIS[:limit]
    head = (limit - 1) // 2
    return text[:head] + ELLIPSIS + text[len(text) - (limit - 1 - head):]


def shorten(text: str, limit: int, *, word_after: int | None = None, strip: str = "") -> str:
    """At most `limit` characters, cut at the last space found at index `word_after` or later
    (default: half the limit; else cut anywhere), `strip` characters dropped from the cut end, then
    an ellipsis."""
    if len(text) <= limit:
        return text
    if limit <= 1:
        return ""
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space >= (limit // 2 if word_after is None else max(word_after, 1)):
        cut = cut[:space]
    return cut.rstrip(strip) + ELLIPSIS if strip else cut + ELLIPSIS


# A hook or a summary line: cut at a word in its second half, no dangling punctuation.
HOOK_STRIP = " ,;:—-"
