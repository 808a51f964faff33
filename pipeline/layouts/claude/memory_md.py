"""The one MEMORY.md grammar: what the reader, the drift check and the rebuild all see in an index.

Claude Code loads a memory folder's MEMORY.md (its first 200 lines, within a byte budget) into every
session and opens what it links on demand. So a topic file is *reached* when MEMORY.md links it
anywhere in a line — `- [x](x.md) — hook`, inline `See [x](x.md)`, bold `**[x](x.md)**`, numbered
or nested bullets —, names it in inline code (`` `x.md` ``), or links a *sub-index*: a sibling file
that itself links (or, as tree indexes do, numbers: `- 6. Title` for `6-*.md`) other memory files.
Sub-indexes are followed transitively, each once.

An *entry line* is a list item whose text starts with the link (after a bold marker or a number):
the lines a rebuild may remove or trim the hook of. Everything else (headings, prose, comments,
code blocks, tables) is the author's and is kept as written.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from urllib.parse import unquote

from ...text.truncate import HOOK_STRIP, shorten
from ...text.lines import is_fence, line_count, split_lines

INDEX = "MEMORY.md"
MAX_LINES = 200  # Claude Code loads the first 200 lines of MEMORY.md
DEFAULT_SEP = "—"
UNINDEXED = "Unindexed"

_HEADING_START = re.compile(r"^(#{1,6})\s+")
_ITEM = re.compile(r"^(?P<indent>\s*)(?P<marker>[-*+]|\d+[.)])\s+")
_LINK = re.compile(r"\[(?P<title>(?:[^\[\]]|\[[^\]]*\])*)\]\((?P<href>[^()\s]+)(?:\s+\"[^\"]*\")?\)")
_CODE = re.compile(r"`([^`\s]+\.md)`")
_LEAD = re.compile(r"(?:\*\*|__)?(?:\d+[.)]\s+)?(?:\*\*|__)?")
_CLOSE = re.compile(r"\s*(?:\*\*|__)?")
_SEP = re.compile(r"\s*(—|–|--|-|:)\s*")
_NUMBERED = re.compile(r"^\s*[-*+]\s+(\d+)[.)]\s+\S")  # `- 6. Title`: a bullet, then the number
_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)


def sibling(href: str) -> str | None:
    """The file name a link target names in the index's own folder, or None (elsewhere, a URL)."""
    target = unquote(href.split("#", 1)[0])
    if not target.endswith(".md") or _SCHEME.match(target) or target.startswith("/"):
        return None
    name = posixpath.normpath(target)
    return None if "/" in name or name in ("..", ".") else name


def slug(heading: str) -> str:
    """GitHub-style anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return re.sub(r"\s+", "-", text).strip("-") or "section"


@dataclass
class Line:
    n: int
    text: str
    code: bool = False  # inside a fenced block (or a fence line)
    heading: tuple[int, str] | None = None  # (level, text)
    indent: int = -1  # list-item indentation, -1 when not a list item
    links: list[tuple[int, int, str, str]] = field(default_factory=list)  # (start, end, title, sibling name)
    mentions: list[str] = field(default_factory=list)  # sibling names in inline code
    entry: str | None = None  # the sibling the line is the entry of
    hook_at: int = -1  # where the entry's hook starts (after its separator), -1 without a hook
    sep: str = ""
    number: int | None = None  # `- 6. Title` without a link: a numbered leaf reference
    number_end: int = -1  # where the text after the number starts

    @property
    def hook(self) -> str:
        return self.text[self.hook_at :].strip() if self.hook_at >= 0 else ""


def parse(text: str) -> list[Line]:
    lines: list[Line] = []
    in_fence = False
    for n, raw in enumerate(text.split("\n")):
        line = Line(n, raw.rstrip("\r"))
        if is_fence(raw):
            in_fence = not in_fence
            line.code = True
        elif in_fence:
            line.code = True
        else:
            _parse_line(line)
        lines.append(line)
    return lines


def heading(s: str) -> tuple[int, str] | None:
    """(level, text) of an ATX heading line, or None: `#`s (1-6), whitespace, the text, and an
    optional closing sequence (whitespace, `#`s, whitespace) that is not part of the text.

    What `^(#{1,6})\\s+(.*?)\\s*#*\\s*$` matches, in linear time: that pattern's lazy text and the two
    whitespace runs around the `#`s backtrack against each other, and one line of 2,000 spaces
    before a final character took 20 s (a hostile or careless MEMORY.md stopped a run for minutes).
    """
    start = _HEADING_START.match(s)
    if start is None:
        return None
    rest = s[start.end() :]
    # the longest closing sequence: whitespace, then `#`s, then whitespace, from the end
    text = rest.rstrip().rstrip("#").rstrip()
    return len(start.group(1)), text


def _parse_line(line: Line) -> None:
    s = line.text
    line.heading = heading(s)
    for m in _LINK.finditer(s):
        name = sibling(m.group("href"))
        if name is not None:
            line.links.append((m.start(), m.end(), m.group("title").strip(), name))
    line.mentions = [name for c in _CODE.findall(s) if (name := sibling(c)) is not None]
    item = _ITEM.match(s)
    if not item:
        return
    line.indent = len(item.group("indent"))
    rest = item.end()
    lead = _LEAD.match(s, rest)
    start = lead.end() if lead else rest
    first = next((lk for lk in line.links if lk[0] == start), None)
    if first is None:
        num = _NUMBERED.match(s)
        if num and not line.links:
            line.number, line.number_end = int(num.group(1)), num.end() - 1
        return
    line.entry = first[3]
    closing = _CLOSE.match(s, first[1])  # always matches (everything in it is optional)
    after = closing.end() if closing else first[1]
    sep = _SEP.match(s, after)
    if sep and sep.end() < len(s):
        line.sep, line.hook_at = sep.group(1), sep.end()
    elif after < len(s) and s[after:].strip():
        line.hook_at = after


def by_number(names: Collection[str]) -> dict[str, str | None]:
    """For each number a file name starts with (`N-…md` or `N_…md`, N as written), the one file a
    tree index's `- N. Title` line stands for, or None when several start with it. Made once per
    index read: looking it up per line among every name made a 4 MiB index of numbered lines in a
    folder of 300 files take minutes."""
    out: dict[str, str | None] = {}
    for name in names:
        m = _NUMBERED_NAME.match(name)
        if m:
            out[m.group(1)] = name if m.group(1) not in out else None
    return out


_NUMBERED_NAME = re.compile(r"(\d+)[-_]")


def numbered(number: int, numbers: dict[str, str | None]) -> str | None:
    """The one file a tree index's `- N. Title` line stands for (`N-…md` or `N_…md`), if exactly one
    (`numbers`: `by_number` of the folder's names)."""
    return numbers.get(str(number))


# A file gone from a folder, by the number a tree index gave it: (its name, its name and title).
GoneLeaves = Mapping[int, tuple[str, str]]
_TITLE_END = re.compile(r"\s+(?:—|–|--|-)\s+")
_WORD = re.compile(r"[^\W_]+")


def numbered_entry_of(line: Line, gone: GoneLeaves) -> str | None:
    """The gone file a `- N. Title` line is the entry of, if any: N stood for it and the title is its
    own (at least half of the title's words of three letters or more are words of the file's name or
    title, or run together in them: `Close-out` in `closeout`). So an author's own numbered list
    (`- 2. Never force-push to main` beside a `2-notes.md`) is never taken for entries."""
    if line.number is None or line.code or line.number not in gone:
        return None
    name, own_text = gone[line.number]
    title = _TITLE_END.split(line.text[line.number_end :], maxsplit=1)[0]
    words = {w for w in _WORD.findall(title.casefold()) if len(w) > 2}
    own = _WORD.findall(own_text.casefold())
    squashed = "".join(own)
    return name if words and 2 * sum(1 for w in words if w in own or w in squashed) >= len(words) else None


def _gone_entry(p: Line, gone: Collection[str], gone_numbers: GoneLeaves) -> str | None:
    """The gone file a line is the entry of (its link's, or its `- N. Title`'s), if any."""
    return p.entry if p.entry is not None and p.entry in gone else numbered_entry_of(p, gone_numbers)


def _struck_out(p: Line, text: str, gone: Collection[str], removed: list[str]) -> str:
    """`text` (the line `p`, maybe with its line ending) with its links to `gone` files struck out,
    each one's name added to `removed`."""
    for start, end, title, name in sorted((lk for lk in p.links if lk[3] in gone and lk[3] != p.entry), reverse=True):
        text = text[:start] + f"~~{title}~~" + text[end:]
        removed.append(name)
    return text


def strike(text: str, gone: Collection[str], gone_numbers: GoneLeaves) -> tuple[str, list[str]]:
    """An index file (a sub-index) without the entry lines of `gone` files and of gone numbered
    leaves, inline links to them struck out; every other byte as it was (line endings, repeats,
    trailing lines), and the names whose lines went, once per line."""
    removed: list[str] = []
    kept: list[str] = []
    for p, piece in zip(parse(text), text.split("\n")):
        if not p.code:
            if (entry := _gone_entry(p, gone, gone_numbers)) is not None:
                removed.append(entry)
                continue
            piece = _struck_out(p, piece, gone, removed)
        kept.append(piece)
    return "\n".join(kept), removed


def linked(lines: list[Line], names: Collection[str]) -> list[str]:
    """Every existing sibling a parsed index file reaches by itself, in order of first mention."""
    out: dict[str, None] = {}
    numbers = by_number(names)
    for line in lines:
        if line.code:
            continue
        for _, _, _, name in line.links:
            if name in names:
                out.setdefault(name)
        for name in line.mentions:
            if name in names:
                out.setdefault(name)
        leaf = numbered(line.number, numbers) if line.number is not None else None
        if leaf is not None:
            out.setdefault(leaf)
    return list(out)


def index_like(lines: list[Line], names: Collection[str]) -> bool:
    """Whether a file is an index rather than a memory that links others: it points at two or more
    memory files and most of its body's lines (front matter, headings and blanks aside) are list
    items pointing at one."""
    body = lines
    if lines and lines[0].text.strip() == "---":
        end = next((p.n for p in lines[1:] if p.text.strip() == "---"), None)
        body = lines[end + 1 :] if end is not None else lines
    content = [p for p in body if p.text.strip() and not p.heading and not p.code]
    numbers = by_number(names)
    pointing = [
        p for p in content
        if p.indent >= 0 and (any(n in names for *_, n in p.links) or any(n in names for n in p.mentions)
                              or (p.number is not None and numbered(p.number, numbers)))
    ]
    return len(linked(body, names)) >= 2 and 2 * len(pointing) >= len(content)


@dataclass
class Reach:
    lines: list[Line]
    entries: list[str]  # entry-line targets of MEMORY.md, in order, repeats kept (existing or not)
    inline: list[str]  # other siblings MEMORY.md links (existing or not), once each
    reached: dict[str, str]  # existing sibling -> how it is reached
    sub_indexes: list[str]

    def dangling(self, names: Collection[str]) -> list[str]:
        return [n for n in dict.fromkeys(self.entries + self.inline) if n not in names]


def reach(index_text: str, names: Collection[str], read: Callable[[str], str | None], max_lines: int | None = None) -> Reach:
    """What MEMORY.md (its first `max_lines` lines, when given) reaches among the folder's files.

    `names` are the folder's files besides MEMORY.md; `read(name)` gives a sibling's text (None when
    it cannot be read), used only to look inside linked files for further links.
    """
    names = set(names) - {INDEX}
    lines = parse(index_text)
    if max_lines is not None:
        lines = lines[:max_lines]
    entries = [line.entry for line in lines if line.entry is not None and not line.code]
    entry_set = set(entries)
    inline: dict[str, None] = {}
    for line in lines:
        if not line.code:
            for _, _, _, name in line.links:
                if name not in entry_set and name != INDEX:
                    inline.setdefault(name)
    reached: dict[str, str] = {}
    for name in linked(lines, names):
        reached.setdefault(name, "MEMORY.md")
    sub_indexes: list[str] = []
    queue = list(reached)
    while queue:
        name = queue.pop(0)
        text = read(name)
        if text is None:
            continue
        parsed = parse(text)
        below = [n for n in linked(parsed, names) if n != name]
        if not below:
            continue
        if index_like(parsed, names):
            sub_indexes.append(name)
        for n in below:
            if n not in reached:
                reached[n] = f"sub-index {name}"
                queue.append(n)
    return Reach(lines, [e for e in entries if e != INDEX], list(inline), reached, sub_indexes)


# ---------------------------------------------------------------------------------------------
# the rebuild: an edit of the author's index


@dataclass(frozen=True)
class IndexItem:
    filename: str  # a sibling file name, as it goes in the link
    title: str
    hook: str


@dataclass
class RebuiltIndex:
    text: str
    warnings: list[str]
    added: list[str]
    removed: list[str]


def trim(hook: str, limit: int) -> str:
    """`hook` cut at a word boundary to at most `limit` characters, its leading clause kept."""
    return shorten(hook, limit, strip=HOOK_STRIP)


def entry_line(item: IndexItem, sep: str, hook: str, indent: str = "") -> str:
    one_line = " ".join(hook.split())
    return f"{indent}- [{item.title}]({item.filename})" + (f" {sep} {one_line}" if one_line else "")


def _tokens(name: str) -> list[str]:
    return [t for t in re.split(r"[-_.\s]+", name.removesuffix(".md").lower()) if t]


def _shared(a: str, b: str) -> int:
    n = 0
    for x, y in zip(_tokens(a), _tokens(b)):
        if x != y:
            break
        n += 1
    return n


def _block_end(lines: list[str], parsed: list[Line], i: int) -> int:
    """The index after entry line `i` and the lines nested under it."""
    indent = parsed[i].indent
    j = i + 1
    while j < len(lines) and lines[j].strip() and (len(lines[j]) - len(lines[j].lstrip())) > indent:
        j += 1
    return j


def rebuild(
    existing: str | None, heading: str, add: list[IndexItem], gone: Collection[str], budget: int, min_hook: int,
    max_lines: int = MAX_LINES, gone_numbers: GoneLeaves | None = None,
) -> RebuiltIndex:
    """MEMORY.md with entries added for `add`, entries for `gone` removed (inline links to them
    struck out), and repeated entry lines dropped; everything else stays where the author put it.

    `gone_numbers`: the files now gone that a tree index's `- 6. Title` lines stood for
    (`numbered_entry_of`): those lines are their entries, removed like the others."""
    gone_numbers = gone_numbers or {}
    if existing is None or not existing.strip():
        return _fresh(heading, add, budget, min_hook, max_lines)
    parsed = parse(existing.replace("\r\n", "\n"))
    lines = [p.text for p in parsed]
    gone = set(gone)
    removed: list[str] = []
    keep: list[bool] = [True] * len(lines)
    seen: set[str] = set()
    for p in parsed:
        if p.code:
            continue
        entry = _gone_entry(p, gone, gone_numbers) or (p.entry if p.entry in seen else None)
        if entry is not None:  # gone, or listed already
            keep[p.n] = False
            removed.append(entry)
            continue
        if p.entry is not None:
            seen.add(p.entry)
        lines[p.n] = _struck_out(p, lines[p.n], gone, removed)
    sep = next((p.sep for p in parsed if p.entry and p.sep and keep[p.n]), DEFAULT_SEP)
    sections = sum(1 for p in parsed if p.heading and not p.code)
    anchors = [p for p in parsed if p.entry is not None and keep[p.n] and not p.code]
    after: dict[int, list[IndexItem]] = {}  # line index -> new entries placed after its block
    at_end: list[IndexItem] = []
    for item in sorted(add, key=lambda i: i.filename):
        best = max(anchors, key=lambda p: (_shared(p.entry or "", item.filename), p.n), default=None)
        if best is not None and _shared(best.entry or "", item.filename) >= 1:
            after.setdefault(_block_end(lines, parsed, best.n), []).append(item)
        else:
            at_end.append(item)
    if sections <= 1 and anchors and at_end:
        # A flat list (a title at most): new entries go after its last entry, not into a new section.
        after.setdefault(_block_end(lines, parsed, anchors[-1].n), []).extend(at_end)
        at_end = []
    kept_count = sum(keep)
    if kept_count + len(add) + (2 if at_end else 0) > max_lines and after:
        # Inserting in place would push the author's lines past what Claude Code loads: append instead.
        at_end = sorted([i for items in after.values() for i in items] + at_end, key=lambda i: i.filename)
        after = {}
    hooks = {i.filename: " ".join(i.hook.split()) for i in add}

    def render(limit: int | None) -> str:
        out: list[str] = []
        for idx, text in enumerate(lines):
            for item in after.get(idx, []):
                out.append(entry_line(item, sep, _cut(hooks[item.filename], limit), _indent_of(parsed, idx)))
            if keep[idx]:
                out.append(_trimmed(parsed[idx], text, limit) if limit is not None else text)
        for item in after.get(len(lines), []):
            out.append(entry_line(item, sep, _cut(hooks[item.filename], limit)))
        if at_end:
            while out and not out[-1].strip():
                out.pop()
            has_section = any(p.heading and p.heading[1].strip() == UNINDEXED for p in parsed if not p.code)
            if not has_section:
                out += ["", f"## {UNINDEXED}", ""]
            out += [entry_line(i, sep, _cut(hooks[i.filename], limit)) for i in at_end]
        return "\n".join(out).rstrip("\n") + "\n"

    text, warnings = _fit(render, budget, min_hook, max_lines)
    return RebuiltIndex(text, warnings, sorted(i.filename for i in add), removed)


def _indent_of(parsed: list[Line], idx: int) -> str:
    # The indentation of the entry whose block ends at `idx` (its siblings are at that depth).
    for j in range(idx - 1, -1, -1):
        if parsed[j].entry is not None:
            return " " * max(parsed[j].indent, 0)
    return ""


def _cut(hook: str, limit: int | None) -> str:
    return hook if limit is None else trim(hook, limit)


def _trimmed(p: Line, text: str, limit: int) -> str:
    """An entry line with its hook cut to `limit`; any other line as it is."""
    if p.entry is None or p.hook_at < 0 or len(text) - p.hook_at <= limit:
        return text
    return text[: p.hook_at] + trim(text[p.hook_at :].strip(), limit)


def _fit(render: Callable[[int | None], str], budget: int, min_hook: int, max_lines: int) -> tuple[str, list[str]]:
    """The rendered index, hooks cut shorter (4 characters a step) until it fits `budget` bytes, and
    what to tell the user: no entry is ever dropped, so it may still be over either limit."""
    text = render(None)
    warnings: list[str] = []
    if len(text.encode()) > budget:
        limit = max(len(line) for line in split_lines(text)) if text else 0
        while len(text.encode()) > budget and limit > 0:
            limit -= 4
            text = render(max(limit, 0))
        if limit < min_hook:
            warnings.append(
                f"index needs hooks under {min_hook} characters to fit {budget} bytes; every entry kept, review it by hand"
            )
        if len(text.encode()) > budget:
            warnings.append(f"index is {len(text.encode())} bytes, over its {budget}-byte budget, with every hook trimmed")
    count = line_count(text)  # as Claude Code counts them: at line breaks only
    if count > max_lines:
        warnings.append(
            f"index is {count} lines: Claude Code loads the first {max_lines}; every entry kept — move a section into a sub-index file"
        )
    return text, warnings


def _fresh(heading: str, add: list[IndexItem], budget: int, min_hook: int, max_lines: int) -> RebuiltIndex:
    items = sorted(add, key=lambda i: i.filename)
    hooks = [" ".join(i.hook.split()) for i in items]

    def render(limit: int | None) -> str:
        body = [f"# {heading}", ""] + [entry_line(i, DEFAULT_SEP, _cut(h, limit)) for i, h in zip(items, hooks)]
        return "\n".join(body) + "\n"

    text, warnings = _fit(render, budget, min_hook, max_lines)
    return RebuiltIndex(text, warnings, [i.filename for i in items], [])


# ---------------------------------------------------------------------------------------------
# a MEMORY.md that holds the memories itself


@dataclass(frozen=True)
class Chunk:
    heading: str  # the section's heading text ("" before the first heading)
    slug: str  # the section's anchor, made unique as GitHub does (`-1`, `-2`)
    n: int  # 1-based position in its section
    start: int  # first line (0-based)
    end: int  # one past the last line
    text: str
    title: str


def _title_of(text: str) -> str:
    first = text.strip().splitlines()[0] if text.strip() else ""
    first = _ITEM.sub("", first, count=1).strip().strip("*_").strip()
    return first[:79] + "…" if len(first) > 80 else first


def chunks(text: str) -> list[Chunk]:
    """Each top-level bullet (with what is nested under it) or paragraph of each section, as a
    memory: a blank line, a heading or a new top-level bullet ends one. Code blocks belong to the
    chunk they are in; HTML comments and horizontal rules are no memory."""
    parsed = parse(text.replace("\r\n", "\n"))
    out: list[Chunk] = []
    slugs: dict[str, int] = {}
    heading, anchor, n = "", "preamble", 0
    start: int | None = None

    def close(end: int) -> None:
        nonlocal start, n
        if start is None:
            return
        body = "\n".join(p.text for p in parsed[start:end]).strip("\n")
        if body.strip():
            n += 1
            out.append(Chunk(heading, anchor, n, start, end, body, _title_of(body)))
        start = None

    for p in parsed:
        s = p.text.strip()
        if p.heading and not p.code:
            close(p.n)
            heading = p.heading[1]
            base = slug(heading)
            count = slugs.get(base, 0)
            slugs[base] = count + 1
            anchor, n = (base if count == 0 else f"{base}-{count}"), 0
            continue
        if p.code:
            if start is None:
                start = p.n
            continue
        if not s or (s.startswith("<!--") and s.endswith("-->")) or re.fullmatch(r"(?:-{3,}|\*{3,}|_{3,})", s):
            close(p.n)
            continue
        if p.indent == 0 or (p.indent > 0 and start is None):
            close(p.n)
        if start is None:
            start = p.n
    close(len(parsed))
    return out
