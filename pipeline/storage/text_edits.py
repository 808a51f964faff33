"""In-place text edits: the `replacements` of an `absolutize_dates` or `update_ref` action, applied
to the fields they name, every other byte of the file kept (front matter, line endings, a BOM).

The payload (shared by every proposer, see docs/relative-dates.md): `replacements: [{"field",
"start", "end", "before", "after"}]`, offsets being character offsets into the named field of the
Memory as its reader decoded it. Layouts map fields to what a file holds:

- `body`: the text after the front matter (the whole text for a file without front matter as the
  layout reads it, e.g. a zylos tier file); a zylos entry's `body` is its statement, a bank
  record's its `text` (their writers map those);
- `description`: the front-matter `description` (stripped, as the readers decode it), rewritten
  through `frontmatter_edit.set_keys` so the other keys and the body stay byte for byte;
- with `lenient` (claude, whose reader falls back to `key: value` lines when YAML refuses the front
  matter), both are found as that reader finds them; a description YAML cannot read is only ever
  swapped on its one line, never rendered through YAML;
- `twin_body`: a crux memory's uncompressed twin's body (the crux writer passes it as that file's
  `body`).

Nothing here trusts the payload: a replacement whose `before` is not at its offsets in the text as
it is now, that overlaps another, or whose `after` holds a line break (it could forge a heading, an
entry or a front-matter line) refuses the whole action (`EditRefused`), and the writer skips it.
The writers also check `target_hashes` first (`since_plan.changed_since_plan`): this is the second
net, on the exact characters.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Callable, Mapping

from ..errors import MemconsolidateError
from ..journal import Op, sha
from ..actions import AbsolutizeDatesAction, UpdateRefAction
from ..model import Action
from ..text.frontmatter_edit import set_keys
from ..text.lenient_frontmatter import split_frontmatter_lenient
from ..text.lines import LINE_BREAKS, UTF8_BOM
from ..text.splice import SpliceError, splice
from .files import FrontMatter, Unreadable, decode_text, split_frontmatter

TEXT_EDIT_KINDS = ("absolutize_dates", "update_ref")
# No character str.splitlines() breaks on (text/lines.LINE_BREAKS) may enter a memory through a
# replacement.
Fields = dict[str, list["Replacement"]]


class EditRefused(MemconsolidateError):
    """Why the replacements cannot be applied (one line, for the skipped list)."""


@dataclass(frozen=True)
class Replacement:
    field: str
    start: int
    end: int
    before: str
    after: str


def _int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _one(raw: object) -> Replacement:
    if not isinstance(raw, dict):
        raise EditRefused("a replacement is not an object")
    field, start, end, before, after = (raw.get(k) for k in ("field", "start", "end", "before", "after"))
    if not (isinstance(field, str) and _int(start) and _int(end) and isinstance(before, str) and isinstance(after, str)):
        raise EditRefused("a replacement lacks field, start, end, before or after")
    if end - start != len(before) or not before:  # type: ignore[operator]
        raise EditRefused(f"replacement of “{before}” at {start}-{end}: offsets do not span it")
    if any(c in LINE_BREAKS for c in after) or "\x00" in after:
        raise EditRefused(f"replacement of “{before}” holds a line break: never written")
    return Replacement(field, start, end, before, after)  # type: ignore[arg-type]


def replacements_of(action: Action) -> Fields:
    """The action's replacements by field, sorted, checked for shape and overlap."""
    # The payload's shape was checked when the action was built; what it says is checked here.
    raw = action.replacements if isinstance(action, (AbsolutizeDatesAction, UpdateRefAction)) else []
    if not raw:
        raise EditRefused(f"{action.kind} carries no replacements")
    by_field: Fields = {}
    for item in raw:
        r = _one(item)
        by_field.setdefault(r.field, []).append(r)
    return {f: _sorted_apart(f, reps) for f, reps in sorted(by_field.items())}


def _sorted_apart(field: str, reps: list[Replacement]) -> list[Replacement]:
    reps = sorted(reps, key=lambda r: (r.start, r.end))
    for a, b in zip(reps, reps[1:]):
        if b.start < a.end:
            raise EditRefused(f"{field}: replacements of “{a.before}” and “{b.before}” overlap")
    return reps


def merged(a: Fields, b: Fields) -> Fields:
    """Two actions' replacements on one memory (an `update_ref` and an `absolutize_dates`)."""
    fields = sorted(set(a) | set(b))
    return {f: _sorted_apart(f, [*a.get(f, []), *b.get(f, [])]) for f in fields}


def replace_in(text: str, reps: list[Replacement], what: str) -> str:
    """`text` with each replacement put in; `EditRefused` when one's `before` is not where it says."""
    try:
        return splice(text, ((r.start, r.end, r.before, r.after) for r in reps))
    except SpliceError as exc:
        raise EditRefused(f"{what}: “{exc.before}” is no longer at {exc.start}-{exc.end} (changed since the plan)") from None


Split = Callable[[str], FrontMatter]


def _lenient(text: str) -> FrontMatter:
    return split_frontmatter_lenient(text)[0]


def edit_text(text: str, edits: Fields, frontmatter: bool, what: str, lenient: bool = False) -> str:
    """A file's decoded text with `body` and `description` edits; `frontmatter` False: the whole
    text is the body and there is no description. `lenient`: the front matter is read as its
    layout's reader reads it, YAML else `key: value` lines (claude: `description: a: b`), so an
    edit proposed on such a file applies to the very body and description the plan saw."""
    unknown = sorted(set(edits) - {"body", "description"})
    if unknown or (not frontmatter and "description" in edits):
        raise EditRefused(f"{what}: no field {', '.join(unknown) or 'description'} to edit")
    split: Split = _lenient if lenient else split_frontmatter
    if "body" in edits:
        # Only where the front matter ends matters here: its lines stay as they are, read or not.
        body = split(text).body if frontmatter else text
        head = text[: len(text) - len(body)]
        text = head + replace_in(body, edits["body"], f"{what} body")
    if "description" in edits:
        value = split(text).meta.get("description")
        if not isinstance(value, str):
            raise EditRefused(f"{what}: its front matter has no description text")
        new = replace_in(value.strip(), edits["description"], f"{what} description")
        swapped = _description_in_place(text, value.strip(), new, split)
        if swapped is None and lenient and _line_read(text):
            # set_keys renders through YAML, which this front matter is not: only the one line may change.
            raise EditRefused(f"{what}: its front matter is not YAML and its description is not one line to swap in place")
        text = swapped or set_keys(text, {"description": new})
    return text


def _line_read(text: str) -> bool:
    """Whether only the line reader takes this front matter (YAML refuses it)."""
    try:
        split_frontmatter(text)
    except Unreadable:
        return True
    return False


_DESCRIPTION_LINE = re.compile(r"^description:[ \t]*(?P<raw>\S(?:.*\S)?)[ \t]*(?P<eol>\r?\n|$)", re.MULTILINE)


def _description_in_place(text: str, old: str, new: str, split: Split = split_frontmatter) -> str | None:
    """The description's one line with its value swapped, its quoting kept (plain, 'single' or
    "double" without escapes), or None when that cannot be done and shown to read back through
    `split` (then `set_keys` renders the value). Every other key, line and the body are checked
    unchanged."""
    fm = split(text)
    found = [m for m in _DESCRIPTION_LINE.finditer(fm.raw)]
    if len(found) != 1:
        return None
    m = found[0]
    raw, rest = m.group("raw"), fm.raw[m.end():]
    if rest[:1] in (" ", "\t"):  # a continuation line: more than one line to the value
        return None
    quote = raw[0] if raw[0] in "'\"" and raw[-1] == raw[0] and len(raw) > 1 else ""
    inner = raw[1:-1] if quote else raw
    if inner != old or (quote == "'" and "'" in inner + new) or (quote == '"' and ("\\" in inner + new or '"' in new)):
        return None
    start = text.index(fm.raw) + m.start("raw")
    candidate = text[:start] + quote + new + quote + text[start + len(raw):]
    try:
        after = split(candidate)
    except Unreadable:
        return None
    if after.body != fm.body or after.meta != {**fm.meta, "description": new}:
        return None
    return candidate


def edit_bytes(data: bytes, edits: Fields, frontmatter: bool, what: str, lenient: bool = False) -> bytes:
    """`edit_text` on a file's bytes: the BOM, if any, is kept."""
    try:
        text = decode_text(data)
        bom = UTF8_BOM if data.startswith(UTF8_BOM) else b""
        return bom + edit_text(text, edits, frontmatter, what, lenient).encode("utf-8")
    except Unreadable as exc:
        raise EditRefused(f"{what}: {exc}") from None
    except ValueError as exc:  # set_keys' own checks
        raise EditRefused(f"{what}: front matter cannot be edited safely ({exc})") from None


def fold_write(ops: list[Op], key: str, original: bytes, edit: Callable[[bytes], bytes]) -> None:
    """Put an edit of `key` into the run's writes: on top of a write this run already makes to it
    (one op per file, built on the bytes as read), else a new write expecting `original`."""
    for n, op in enumerate(ops):
        if op.kind == "write" and op.path == key and op.data is not None:
            ops[n] = dataclasses.replace(op, data=edit(op.data))
            return
    ops.append(Op("write", key, data=edit(original), expect=sha(original)))


def only_fields(edits: Fields, allowed: Mapping[str, object], what: str) -> None:
    """Refuse fields this memory does not have (a `twin_body` on a memory without a twin)."""
    extra = sorted(set(edits) - set(allowed))
    if extra:
        raise EditRefused(f"{what} has no field {', '.join(extra)}")
