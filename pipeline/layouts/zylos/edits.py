"""In-place text edits in a zylos store (`absolutize_dates`, `update_ref`).

Two kinds of target, with one field each, `body`:

- an entry, `reference/<file>.md#<slug>`: `body` is the entry's statement as the reader built it —
  its Decision field, else its Description field (a field written twice, and continuation lines,
  joined by one space), else its `### Title`. Offsets are into that string; each replacement must
  lie within one line of the file (never across a joined line break), and is put into that line,
  every other byte of the reference file kept. The entry's own dates (Date / Started / Date
  observed, Updated) are what the rule resolved against.
- a tier file (identity.md, state.md, references.md, users/<id>/profile.md, a dated session log):
  `body` is the whole file as decoded (BOM dropped). The live log `sessions/current.md` is never
  edited: it is only appended to (an agent may hold it open). A session log archived by the same
  run is edited at its new place, after the move.

A reference file as a whole is not a target (its entries are).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...journal import Op, state
from ...model import Action, Memory
from ...storage.files import Unreadable
from ...text.lines import fenced_blocks, split_eol, split_lines
from ...storage.text_edits import EditRefused, Fields, Replacement, edit_bytes, merged, only_fields, replacements_of
from .entries import FIELD, HEADING, _strip_md
from .reader import STATEMENT_FIELDS

if TYPE_CHECKING:
    from .writer import _Writer


@dataclass(frozen=True)
class Segment:
    line: int  # 1-based line of the file
    col: int  # where the segment starts in that line
    text: str


def _field_segments(lines: list[str], start: int, end: int) -> dict[str, list[Segment]]:
    """Every field's value parts within lines start+1..end, as `parse_entries` collects them."""
    parts: dict[str, list[Segment]] = {}
    last: str | None = None
    # Fences paired within the entry alone: a block that closes never spans a heading that ends an
    # entry, and an entry of a file with a fence never closed is never read, so this is the reader's pairing.
    code = fenced_blocks([split_eol(line)[0] for line in lines[start:end]]).code
    for number in range(start + 1, end + 1):
        line = lines[number - 1]
        match = None if code[number - start - 1] else FIELD.match(line)
        if match:
            key = _strip_md(match.group("name")).rstrip(":").strip().casefold()
            raw = match.group("value")
            col = match.start("value") + len(raw) - len(raw.lstrip())
            parts.setdefault(key, []).append(Segment(number, col, raw.strip()))
            last = key
        elif line.strip():
            if last is not None and line[:1] in (" ", "\t"):
                parts[last].append(Segment(number, len(line) - len(line.lstrip()), line.strip()))
            else:
                last = None
        else:
            last = None
    return parts


def statement_segments(lines: list[str], start: int, end: int) -> list[Segment]:
    """Where the entry's statement (`entry_statement`) comes from, part by part."""
    fields = _field_segments(lines, start, end)
    for name in STATEMENT_FIELDS:
        segs = [s for s in fields.get(name, []) if s.text]
        if " ".join(s.text for s in segs).strip():
            return segs
    heading = HEADING.match(lines[start - 1])
    if heading is None:
        return []
    raw = heading.group(2)
    return [Segment(start, heading.start(2) + len(raw) - len(raw.lstrip()), raw.strip())]


def _edited_lines(lines: list[str], segs: list[Segment], reps: list[Replacement], key: str) -> dict[int, str]:
    """New text of each line the replacements touch (line endings kept)."""
    by_line: dict[int, list[tuple[int, int, str]]] = {}
    offset = 0
    spans = []
    for s in segs:
        spans.append((offset, offset + len(s.text), s))
        offset += len(s.text) + 1  # the space that joins two parts
    for r in reps:
        seg = next(((lo, s) for lo, hi, s in spans if lo <= r.start and r.end <= hi), None)
        if seg is None:
            raise EditRefused(f"{key}: “{r.before}” runs across a line break of the entry: left as written")
        lo, s = seg
        a, b = s.col + r.start - lo, s.col + r.end - lo
        if lines[s.line - 1][a:b] != r.before:
            raise EditRefused(f"{key}: “{r.before}” is no longer at {r.start}-{r.end} (changed since the plan)")
        by_line.setdefault(s.line, []).append((a, b, r.after))
    out: dict[int, str] = {}
    for number, cuts in by_line.items():
        line = lines[number - 1]
        for a, b, after in sorted(cuts, reverse=True):
            line = line[:a] + after + line[b:]
        out[number] = line
    return out


def _entry_edit(w: _Writer, key: str, new: Fields) -> None:
    got = w.entry(key)
    if isinstance(got, str):
        raise EditRefused(got)
    ref, m = got
    start = m.extra["line_start"]
    edits = merged(w.entry_edits.get(key, {}), new)
    only_fields(edits, {"body": 1}, key)
    original = split_lines(ref.text, keepends=True)
    segs = statement_segments(original, start, ref.block_end(start))
    if " ".join(s.text for s in segs) != m.body:
        raise EditRefused(f"{key}: its statement is no longer what the plan read")
    for number, line in _edited_lines(original, segs, edits["body"], key).items():
        ref.lines[number - 1] = line
    ref.edited = True
    w.entry_edits[key] = edits


def _tier_edit(w: _Writer, m: Memory, new: Fields) -> None:
    key = m.key
    if m.extra.get("tier") == "reference":
        raise EditRefused(f"{key}: a reference file is edited through its entries")
    if m.extra.get("current"):
        raise EditRefused(f"{key} is the live session log: only appended to, never edited in place")
    path = w.root / key
    if path.is_symlink() or not path.is_file():
        raise EditRefused(f"{key} is not a regular file: left untouched")
    edits = merged(w.tier_edits.get(key, {}), new)
    only_fields(edits, {"body": 1}, key)
    try:
        data = w.disk.bytes(key)
    except Unreadable as exc:
        raise EditRefused(f"{key} cannot be read: {exc}") from None
    if data is None:
        raise EditRefused(f"{key} is gone")
    edit_bytes(data, edits, False, key)  # it takes them all, or the action is skipped
    w.tier_edits[key] = edits


def text_edit(w: _Writer, a: Action) -> None:
    key = a.targets[0] if len(a.targets) == 1 else ""
    m = w.by_key.get(key)
    try:
        if m is None:
            raise EditRefused(f"{', '.join(a.targets) or 'nothing'} is not one memory of this store as read")
        new = replacements_of(a)
        if m.extra.get("entry"):
            _entry_edit(w, key, new)
        else:
            _tier_edit(w, m, new)
    except EditRefused as exc:
        return w.skip(a, str(exc))
    shown = "; ".join(f"“{r.before}” → “{r.after}”" for reps in new.values() for r in reps)
    w.applied(a, f"Edited {key} in place ({a.kind}): {shown}")


def tier_writes(w: _Writer, moves: list[Op]) -> list[Op]:
    """The tier files' writes, after the run's moves: a log archived by this run is edited where it
    went (the move carried the bytes as read, which the write then expects)."""
    dest = {op.path: op.dest for op in moves if op.kind == "move" and op.dest}
    ops = []
    for key in sorted(w.tier_edits):
        data = w.disk.bytes(key)
        assert data is not None
        ops.append(Op("write", dest.get(key) or key, data=edit_bytes(data, w.tier_edits[key], False, key), expect=state(data)))
    return ops
