"""The one MEMORY.md grammar: what the reader, the drift check and the rebuild all see in an index.

Claude Code loads a memory folder's MEMORY.md (its first 200 lines, within a byte budget) into every
session and opens what it links on demand. So a topic file is *reached* when MEMORY.md links it
anywhere in a line — `- [x](x.md) — hook`, inline `See [x](x.md)`, bold `**[x](x.md)**`, numbered
or nested bullets —, names it in inline code (`` `x.md` ``), or links a *sub-index*: a sibling file
that itself links (or, as tree indexes do, numbers: `- 6. Title` for `6-*.md`) other memory files.
Sub-indexes are followed transitively, each once. A reference link is a link as an inline one is: its
use (`- [x][ref] — hook`, `[ref][]`, `[ref]`) names the file its definition (`[ref]: x.md`, on a line of
its own) does, and the definition line reaches that file itself (`link_names.reference_definition`).

An *entry line* is a list item whose text starts with the link (after a bold marker or a number),
or a tree index's `- N. Title — hook`: the lines a rebuild may remove, make a consolidation's entry
(`restyler`), or trim the hook of; a repeat of an earlier entry line saying something of its own is
the author's note on the file, not a second entry (`listed_again`). Everything else (headings, prose,
comments, code blocks, tables) is the author's and is kept as written, but a heading (ATX, or setext:
a line of text over `===` or `---`) whose section the run's removals of files emptied, and the
reference definition of a file gone: pointed at the file holding its content while a line kept links
through it, else removed (`_definitions_edited`). Lines end at CRLF, LF or CR alone
(`text.lines.line_texts`). Code blocks are fenced as CommonMark pairs fences (`text.lines.fenced_blocks`);
a fence no later line closes opens none, and the index holding it is read but never edited
(`unclosed_fence`). Every pattern here is linear in a line's length (`heading`, `inline_links`): the
text is an agent's.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from urllib.parse import unquote

from ...rules.link_names import (  # sibling: the file of the index's own folder a link names
    HREF, NUMBER, href_like, label_key, numbered_name, reference_definition, reference_uses, sibling_file as sibling,
)
from ...rules.text import normalize
from ...text.truncate import HOOK_STRIP, shorten
from ...text.counts import plural
from ...text.lines import fenced_blocks, join_pieces, line_count, line_pieces, line_texts, split_lines

INDEX = "MEMORY.md"
MAX_LINES = 200  # Claude Code loads the first 200 lines of MEMORY.md
# ... and at most its first 25KB (its docs); seed 001 puts that read limit at "~24 KB": the lower of the
# two, so an index within it is loaded whole whichever is right.
MAX_BYTES = 24 * 1024
DEFAULT_SEP = "—"
UNINDEXED = "Unindexed"

_HEADING_START = re.compile(r"^(#{1,6})\s+")
_ITEM = re.compile(r"^(?P<indent>\s*)(?P<marker>[-*+]|\d+[.)])\s+")
# An inline link's part after its text: `(href)` or `(href "title")`. Its text, `[...]` holding
# plain characters and bracketed groups (`[see [x]](x.md)`), is scanned by `inline_links`.
_LINK_TARGET = re.compile(rf"\({HREF}(?:\s+\"[^\"]*\")?\)")
_CODE = re.compile(r"`([^`\s]+\.md)`")
_LEAD = re.compile(r"(?:\*\*|__)?(?:\d+[.)]\s+)?(?:\*\*|__)?")
_CLOSE = re.compile(r"\s*(?:\*\*|__)?")
_SEP = re.compile(r"\s*(—|–|--|-|:)\s*")
_NUMBERED = re.compile(rf"^\s*[-*+]\s+({NUMBER})[.)]\s+\S")  # `- 6. Title`: a bullet, then the number
# A setext heading's underline (`====` for level 1, `----` for level 2) under a line of text.
_UNDERLINE = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
# A thematic break (`---`, `***`, `___`, blanks between allowed): a block of its own.
_RULE = re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
# What a line starting a block of its own starts with besides a marker, a heading or a fence: a
# quote, an HTML block, a table row. No paragraph text, so never a lazy continuation line.
_BLOCK_OPENERS = (">", "<", "|")


def slug(heading: str) -> str:
    """GitHub-style anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return re.sub(r"\s+", "-", text).strip("-") or "section"


@dataclass
class Line:
    n: int
    text: str
    code: bool = False  # inside a fenced block (or a fence line)
    heading: tuple[int, str] | None = None  # (level, text): an ATX heading, or a setext heading's text line
    underline: bool = False  # a setext heading's underline: part of the heading on the line above
    indent: int = -1  # list-item indentation, -1 when not a list item
    links: list[tuple[int, int, str, str]] = field(default_factory=list)  # (start, end, title, sibling name)
    mentions: list[str] = field(default_factory=list)  # sibling names in inline code
    entry: str | None = None  # the sibling the line is the entry of
    hook_at: int = -1  # where the entry's hook starts (after its separator), -1 without a hook
    sep: str = ""
    number: int | None = None  # `- 6. Title` without a link: a numbered leaf reference
    number_at: int = -1  # where the number starts
    number_end: int = -1  # where the text after the number starts
    definition: str | None = None  # the sibling a reference definition line (`[label]: x.md`) names
    # a reference definition line's label (`label_key`), whatever it names (a sibling, a URL), and its
    # match (`reference_definition`: where its href is, and how it is spelled): read once per line
    # (`_read_definition`), then every reader of the index's labels takes them from here
    label: str | None = None
    reference: re.Match[str] | None = None
    # a fence line no later fence line closes (`text.lines.fenced_blocks`): where its block would end
    # cannot be told, so the index is read (the lines after it as text) but never edited
    unclosed_fence: bool = False

    @property
    def hook(self) -> str:
        return self.text[self.hook_at :].strip() if self.hook_at >= 0 else ""


def parse(text: str) -> list[Line]:
    """The index's lines, numbered as `line_texts` splits them (at CRLF, LF or CR: a CR-only file
    from an old Mac editor is lines too), each without its line ending."""
    texts = line_texts(text)
    fences = fenced_blocks(texts)
    lines = [Line(n, raw, code=code) for n, (raw, code) in enumerate(zip(texts, fences.code))]
    for n in fences.unclosed:  # a fence line, no text; the lines after it are read as they are
        lines[n].code = lines[n].unclosed_fence = True
    for line in lines:
        if not line.code:
            _read_definition(line)
    labels = _labels(lines)  # a reference link's use may come before its definition
    for line in lines:
        if not line.code:
            _parse_line(line, labels)
    _mark_setext_headings(lines)
    return lines


def unclosed_fence(lines: Iterable[Line]) -> int | None:
    """The 1-based line of the first fence line no later one closes, if any: an index holding one is
    never edited (a line removed or rebuilt there could be code, or be taken out of its code block),
    nor a MEMORY.md holding memories cut into them (one would run to the end of the file)."""
    return next((p.n + 1 for p in lines if p.unclosed_fence), None)


def unclosed_fence_said(line: int) -> str:
    """Why a file with an unclosed fence (`unclosed_fence`) is left as it is: a parse problem's reason."""
    return (f"the code fence at line {line} is never closed: where its code ends cannot be told, so the file is "
            "read but never edited")


@dataclass(frozen=True)
class InlineLink:
    start: int  # its `[`
    end: int  # one past its `)`
    title: str  # its text, as written
    target: re.Match[str]  # `_LINK_TARGET`'s match: the href (`href`, and `angle` when in angle brackets)


def inline_links(s: str) -> list[InlineLink]:
    """The inline links of a line, left to right, none inside another: what
    `\\[(?P<title>(?:[^\\[\\]]|\\[[^\\]]*\\])*)\\]` followed by `_LINK_TARGET` finds (`finditer`),
    in linear time. That pattern tries each `[` anew and scans its text to the end of the line:
    one 128 KB line of `[[x]` took 47 s. But its text is one way only: plain characters, and groups
    each from a `[` to the next `]`, up to the first `]` outside a group (backing off ends before
    a character that is no `]`, so never matches). So where the text from each position ends
    (`_text_ends`) is found once for the whole line, right to left, and the part after each `](`
    matched once."""
    ends = _text_ends(s)
    targets: dict[int, re.Match[str] | None] = {}  # each `(` after a text's `]` -> its match
    out: list[InlineLink] = []
    at = 0
    for start in (i for i, ch in enumerate(s) if ch == "["):
        if start < at:
            continue  # inside the link before
        close = ends[start + 1]
        if close < 0 or not s.startswith("(", close + 1):
            continue
        if close + 1 not in targets:
            targets[close + 1] = _LINK_TARGET.match(s, close + 1)
        target = targets[close + 1]
        if target is not None:
            out.append(InlineLink(start, target.end(), s[start + 1 : close], target))
            at = target.end()
    return out


def _text_ends(s: str) -> list[int]:
    """For each position of `s` (and its end), the `]` ending a link text that starts there: the
    first `]` outside a group (a `[` to the next `]`), or -1 when a group does not close or no `]`
    comes (then no link text starts there)."""
    ends = [-1] * (len(s) + 2)
    next_close = -1  # the first `]` at or after the position
    for i in range(len(s) - 1, -1, -1):
        ch = s[i]
        if ch == "]":
            next_close = i
            ends[i] = i
        elif ch == "[":
            # a group to the next `]` after it; the text goes on after the group
            ends[i] = ends[next_close + 1] if next_close >= 0 else -1
        else:
            ends[i] = ends[i + 1]
    return ends


def _link_at(s: str, start: int) -> InlineLink | None:
    """The inline link starting at `start` in `s`, if one does (as `inline_links` reads the line)."""
    return next((lk for lk in inline_links(s) if lk.start == start), None)


def _read_definition(line: Line) -> None:
    """A line's reference definition (`[label]: x.md`), if it is one: its `label`, its match and the
    sibling it names (`definition`; None for a URL or another folder)."""
    d = reference_definition(line.text)
    if d is not None:
        line.reference, line.label, line.definition = d, label_key(d.group("label")), sibling(d.group("href"))


def _labels(lines: Iterable[Line]) -> dict[str, str]:
    """The reference labels an index defines outside code (`[label]: x.md`, by `label_key`), each
    with the sibling its first definition names (as CommonMark, the first wins); not one naming a
    URL or another folder."""
    found: dict[str, str | None] = {}
    for line in lines:
        if not line.code and line.label is not None:
            found.setdefault(line.label, line.definition)
    return {label: name for label, name in found.items() if name is not None}


def _front_matter_end(lines: Sequence[Line]) -> int | None:
    """The line closing the file's front matter (a `---` first line to the next `---`), if it has one."""
    if lines and lines[0].text.strip() == "---":
        return next((p.n for p in lines[1:] if p.text.strip() == "---"), None)
    return None


def _mark_setext_headings(lines: list[Line]) -> None:
    """Each setext heading (a line of text, then `===` for level 1 or `---` for level 2) made a
    heading, as an ATX one is: its text line holds `heading`, its underline is `underline`. Only a
    one-line text, unindented as the ATX headings read here are, that starts a paragraph (after a
    blank line, a heading, a rule, a closing fence, or first): a line right after a paragraph line
    or a list item is that paragraph's (a lazy continuation line, `_item_extent`), and `---` under
    it a rule. Front matter's closing `---` underlines nothing."""
    front = _front_matter_end(lines)
    for p in lines[1 if front is None else front + 2 :]:
        above = lines[p.n - 1]
        if p.code or not (m := _UNDERLINE.match(p.text)) or not _plain(above) or above.indent >= 0 or above.text[:1].isspace():
            continue
        if p.n >= 2 and (_plain(before := lines[p.n - 2]) or before.indent >= 0):
            continue  # `above` continues the paragraph (or list item) before it
        above.heading = (1 if m.group(1)[0] == "=" else 2, above.text.strip())
        p.underline = True


def _plain(p: Line) -> bool:
    """Whether a line is paragraph text: not blank, code, a heading or its underline, a rule, a
    quote, HTML or a table row (a list item's text is paragraph text)."""
    text = p.text.strip()
    return (bool(text) and not p.code and p.heading is None and not p.underline and not _RULE.match(p.text)
            and not text.startswith(_BLOCK_OPENERS))


def _section_text(p: Line) -> bool:
    """Whether a line says something in its section: not blank, nor a setext heading's underline."""
    return bool(p.text.strip()) and not p.underline


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


def _parse_line(line: Line, labels: Mapping[str, str]) -> None:
    """A line's links, mentions, heading and entry; `labels`: the index's reference labels (`_labels`),
    whose uses (`[text][label]`, `[label][]`, `[label]`) link their definition's file as inline
    links do; a definition line (`_read_definition`, read first) reaches its file, and is nothing else."""
    s = line.text
    if line.label is not None:
        return
    line.heading = heading(s)
    for link in inline_links(s) if "](" in s else ():
        name = sibling(link.target.group("href"))
        if name is not None:
            line.links.append((link.start, link.end, link.title.strip(), name))
    if labels:
        inline = [(start, end) for start, end, _, _ in line.links]
        line.links += [(start, end, text, labels[label]) for start, end, text, label in reference_uses(s, labels)
                       if not any(a < end and start < b for a, b in inline)]
        line.links.sort()
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
            line.number, line.number_at, line.number_end = int(num.group(1)), num.start(1), num.end() - 1
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
    """For each number a file name starts with (`N-…md`, `N_…md`, `N. Title.md`: link_names.numbered_name,
    the grammar links read file names by), written without leading zeros (`001-setup.md` is file 1,
    as `- 001. Setup` and `- 1. Setup` are line 1), the one file a tree index's `- N. Title` line
    stands for, or None when several start with it. Made once per index read: looking it up per line
    among every name made a 4 MiB index of numbered lines in a folder of 300 files take minutes."""
    out: dict[str, str | None] = {}
    for name in names:
        written = numbered_name(name)[0]
        if written is not None:
            number = str(int(written))
            out[number] = name if number not in out else None
    return out


def numbered(number: int, numbers: dict[str, str | None]) -> str | None:
    """The one file a tree index's `- N. Title` line stands for (`N-…md`, `N_…md`, `N. Title.md`), if
    exactly one (`numbers`: `by_number` of the folder's names)."""
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


def listed(lines: list[Line], gone: Collection[str], gone_numbers: GoneLeaves) -> dict[str, tuple[str, str]]:
    """(title, hook) of the first entry line of each gone file an index (`parse`d) lists, by its link or
    its `- N. Title` (as `strike` and `rebuild` find them): what a consolidation's entry is made from."""
    out: dict[str, tuple[str, str]] = {}
    for p in lines:
        if not p.code and (name := _gone_entry(p, gone, gone_numbers)) is not None:
            out.setdefault(name, listing(p))
    return out


def linked(lines: Sequence[Line], names: Collection[str], numbers: dict[str, str | None] | None = None) -> list[str]:
    """Every existing sibling a parsed index file reaches by itself, in order of first mention.
    `numbers`: `by_number(names)`, when the caller has made it (once per index read, not per file)."""
    out: dict[str, None] = {}
    numbers = by_number(names) if numbers is None else numbers
    for line in lines:
        if line.code:
            continue
        for _, _, _, name in line.links:
            if name in names:
                out.setdefault(name)
        for name in line.mentions:
            if name in names:
                out.setdefault(name)
        if line.definition is not None and line.definition in names:
            out.setdefault(line.definition)
        leaf = numbered(line.number, numbers) if line.number is not None else None
        if leaf is not None:
            out.setdefault(leaf)
    return list(out)


def leaf_titles(lines: Sequence[Line], numbers: dict[str, str | None]) -> Iterator[tuple[str, str]]:
    """(file, title) of each `- N. Title — hook` line of a parsed index whose N stands for one file
    (`numbered`): the title a tree index gives it, which a link may spell `[[N-title-as-a-slug]]`."""
    for p in lines:
        if p.number is not None and not p.code and (leaf := numbered(p.number, numbers)) is not None:
            title = listing(p)[0]
            if title:
                yield leaf, title


def _add_titles(titles: dict[str, list[str]], found: Iterable[tuple[str, str]]) -> None:
    """Each (file, title) `found` added to the file's `titles`, once."""
    for leaf, title in found:
        given = titles.setdefault(leaf, [])
        if title not in given:
            given.append(title)


# `type: feedback` (or nested under `metadata:`): Claude Code's kinds of memory, bar `reference`,
# which an index file may call itself (webeverything's sub-indexes do).
_DECLARED_TYPE = re.compile(r"^\s*type\s*:\s*[\"']?([A-Za-z]+)[\"']?\s*$")
_MEMORY_ONLY_TYPES = frozenset({"user", "feedback", "project"})


def index_like(lines: Sequence[Line], names: Collection[str], numbers: dict[str, str | None] | None = None) -> bool:
    """Whether a file is an index rather than a memory that links others: it points at two or more
    memory files and most of its body's lines (front matter, headings and blanks aside) are list
    items pointing at one, and its front matter does not call it a user, feedback or project memory."""
    body = lines
    end = _front_matter_end(lines)
    if end is not None:
        body = lines[end + 1 :]
        # A file that says it is a memory of a kind no index is (a rule, a project note, the user's
        # own) is a memory whatever its shape: its list of links and notes is never edited as an index.
        if any((m := _DECLARED_TYPE.match(p.text)) and m.group(1).lower() in _MEMORY_ONLY_TYPES
                                   for p in lines[1:end]):
            return False
    # a reference definition is its list's link target, no line of content of its own
    content = [p for p in body if _section_text(p) and not p.heading and not p.code and p.definition is None]
    numbers = by_number(names) if numbers is None else numbers
    pointing = [
        p for p in content
        if p.indent >= 0 and (any(n in names for *_, n in p.links) or any(n in names for n in p.mentions)
                              or (p.number is not None and numbered(p.number, numbers)))
    ]
    return len(linked(body, names, numbers)) >= 2 and 2 * len(pointing) >= len(content)


def listed_again(lines: list[Line]) -> dict[int, bool]:
    """Each entry line of a file an earlier entry line already lists, by line number: whether it says
    something of its own, its title and hook (in one normal form: case, spaces, punctuation alike,
    `rules.text.normalize`) not those of any earlier listing of the file, as an owner's `## Pinned`
    section listing a file again with its own hook does. One saying what an earlier listing says is
    a repeat, drift a rebuild removes; any other is the owner's note on the file, kept as written and
    no second entry (1:1 holds: the file is listed once, and noted). Its words are not compared one
    by one: the same words in another order (`pnpm, never npm` after `npm, never pnpm`), or fewer of
    them, say something else."""
    said: dict[str, set[str]] = {}
    out: dict[int, bool] = {}
    for p in lines:
        if p.code or p.entry is None:
            continue
        says = normalize(" ".join(listing(p)))
        if p.entry in said:
            out[p.n] = says not in said[p.entry]
            said[p.entry].add(says)
        else:
            said[p.entry] = {says}
    return out


def _words(title: str, hook: str) -> set[str]:
    """The words a listing says (its title's and its hook's): an owner's note on a retired file is
    said already when its new home's listings have every one of them (`_edited`)."""
    return set(_WORD.findall(f"{title} {hook}".casefold()))


@dataclass
class Reach:
    lines: list[Line]
    # MEMORY.md's entry lines, in order (their files existing or not): a file's first listing and its
    # repeats, not the notes listed again saying something of their own (`listed_again`)
    entry_lines: list[Line]
    inline: list[str]  # other siblings MEMORY.md links (existing or not), once each
    reached: dict[str, str]  # existing sibling -> how it is reached
    sub_indexes: list[str]
    # existing sibling -> the titles MEMORY.md and its sub-indexes give it (`leaf_titles`), in order
    titles: dict[str, list[str]] = field(default_factory=dict)
    # sub-index -> the line of a code fence it never closes (`unclosed_fence`): read, never edited, as
    # such a MEMORY.md is, and reported as one is
    unclosed: dict[str, int] = field(default_factory=dict)

    @property
    def entries(self) -> list[str]:
        """The files of the entry lines, in order, repeats kept."""
        return [p.entry for p in self.entry_lines if p.entry is not None]

    def dangling(self, names: Collection[str]) -> list[str]:
        return [n for n in dict.fromkeys(self.entries + self.inline) if n not in names]


def reach(index_text: str, names: Collection[str], read: Callable[[str], str | None], max_lines: int | None = None) -> Reach:
    """What MEMORY.md (its first `max_lines` lines, when given) reaches among the folder's files.

    `names` are the folder's files besides MEMORY.md; `read(name)` gives a sibling's text (None when
    it cannot be read), used only to look inside linked files for further links.
    """
    return reach_lines(parse(index_text), names, read, max_lines)


def reach_lines(lines: list[Line], names: Collection[str], read: Callable[[str], str | None], max_lines: int | None = None) -> Reach:
    """`reach` of a MEMORY.md already `parse`d (its lines are only read)."""
    names = set(names) - {INDEX}
    if max_lines is not None:
        lines = lines[:max_lines]
    notes = {n for n, own_words in listed_again(lines).items() if own_words}
    entry_lines = [line for line in lines if line.entry is not None and not line.code and line.n not in notes]
    entry_set = {line.entry for line in entry_lines}
    inline: dict[str, None] = {}
    for line in lines:
        if not line.code:
            for name in [*(lk[3] for lk in line.links), *([line.definition] if line.definition is not None else [])]:
                if name not in entry_set and name != INDEX:
                    inline.setdefault(name)
    reached: dict[str, str] = {}
    numbers = by_number(names)
    for name in linked(lines, names, numbers):
        reached.setdefault(name, "MEMORY.md")
    titles: dict[str, list[str]] = {}
    _add_titles(titles, leaf_titles(lines, numbers))
    sub_indexes: list[str] = []
    unclosed: dict[str, int] = {}
    queue = list(reached)
    while queue:
        name = queue.pop(0)
        text = read(name)
        if text is None:
            continue
        parsed = _sibling_lines(text)
        below = [n for n in linked(parsed, names, numbers) if n != name]
        if not below:
            continue
        if index_like(parsed, names, numbers):
            sub_indexes.append(name)
            _add_titles(titles, leaf_titles(parsed, numbers))
            if (fence := unclosed_fence(parsed)) is not None:
                unclosed[name] = fence
        for n in below:
            if n not in reached:
                reached[n] = f"sub-index {name}"
                queue.append(n)
    return Reach(lines, [line for line in entry_lines if line.entry != INDEX], list(inline), reached, sub_indexes, titles,
                 unclosed)


@lru_cache(maxsize=512)
def _sibling_lines(text: str) -> tuple[Line, ...]:
    """`parse` of a file MEMORY.md links, looked inside for further links: kept, because each dry run
    of a plan's rebuild (claude/rules.explain makes one per action set) reaches the same files, and
    parsing them again was most of a plan's CPU on a small store. Only read, never edited."""
    return tuple(parse(text))


# ---------------------------------------------------------------------------------------------
# the rebuild: an edit of the author's index


@dataclass(frozen=True)
class IndexItem:
    filename: str  # a sibling file name, as it goes in the link
    title: str
    hook: str
    # The hook made again within so many characters, when cutting its end would lose more than words
    # (a consolidation's, one part per member: each keeps its label); None: cut at a word.
    fit: Callable[[int], str] | None = field(default=None, compare=False)


@dataclass
class RebuiltIndex:
    text: str
    warnings: list[str]  # what the rebuild shortened, or could not fit: said in the plan and the run's notes
    added: list[str]
    removed: list[str]
    replaced: list[str] = field(default_factory=list)  # gone files whose entry line became a new file's
    repointed: list[str] = field(default_factory=list)  # the files an owner's note on a gone file now points at


def trim(hook: str, limit: int) -> str:
    """`hook` cut at a word boundary to at most `limit` characters, its leading clause kept."""
    return shorten(hook, limit, strip=HOOK_STRIP)


def entry_line(item: IndexItem, sep: str, hook: str, indent: str = "") -> str:
    one_line = " ".join(hook.split())
    return f"{indent}- [{item.title}]({item.filename})" + (f" {sep} {one_line}" if one_line else "")


def listing(p: Line) -> tuple[str, str]:
    """(title, hook) of an entry line: a link's title and what follows its separator, or a numbered
    reference's title and what follows its ` — `."""
    if p.entry is not None:
        title = next(t for _, _, t, name in p.links if name == p.entry)
        return title, p.hook
    if p.number is not None:
        title, *hook = _TITLE_END.split(p.text[p.number_end :], maxsplit=1)
        return title.strip(), (hook[0].strip() if hook else "")
    return "", ""


def file_number(filename: str) -> int | None:
    """The number a file name starts with (`148-feedback_x.md`, `148. Title.md`), the one a tree index's line gives it."""
    number = numbered_name(unquote(filename))[0]
    return int(number) if number is not None else None


def restyler(p: Line, item: IndexItem) -> Callable[[str], str]:
    """Entry line `p` (of a file now gone) made the entry of `item`, in the line's own style, by its
    hook: a link stays a link (indent, marker, bold and separator kept), a `- N. Title — hook` stays
    numbered when the new file has a number (else it becomes a link under the same marker). The line
    is read once (its entry link's spelling scanned once), not again for each hook length `capped`
    and the rebuild's bisection (`_shrink`) try."""
    if p.entry is not None:
        start, end = next((s, e) for s, e, _, name in p.links if name == p.entry)
        head = p.text[:start] + f"[{item.title}]({_href_as_written(_link_at(p.text, start), item.filename)})"
        closing = _CLOSE.match(p.text, end)
        # a bold link's closing marker, not the blanks before the separator: a bare link ends the line
        bare = head + (p.text[end : closing.end()].rstrip() if closing else "")
        own_sep = head + p.text[end : p.hook_at] if p.hook_at >= 0 else None  # up to its hook, separator as written

        def linked(hook: str) -> str:
            one = " ".join(hook.split())
            if own_sep is not None and one:
                return own_sep + one
            return bare + (f" {p.sep or DEFAULT_SEP} {one}" if one else "")

        return linked
    sep = _TITLE_END.search(p.text, p.number_end)
    mark = sep.group(0).strip() if sep else DEFAULT_SEP
    number = file_number(item.filename)
    if number is None:
        lead = f"{p.text[: p.number_at]}[{item.title}]({item.filename})"
    else:
        dot = p.text[p.number_at:].lstrip("0123456789")[0]  # `.` or `)`, as the author writes them (after `001` too)
        lead = f"{p.text[: p.number_at]}{number}{dot} {item.title}"

    def numbered_line(hook: str) -> str:
        one = " ".join(hook.split())
        return lead + (f" {mark} {one}" if one else "")

    return numbered_line


def _href_as_written(link: InlineLink | None, filename: str) -> str:
    """`filename` (an href as `href_of` writes it, bare) spelled as the author spelled `link`'s
    (`href_like`: in angle brackets, `<my notes.md>`, or percent-encoded), brackets and all."""
    if link is None:
        return filename
    href = href_like(link.target, _unquoted(filename))
    return f"<{href}>" if link.target.group("angle") else href


def _unquoted(href: str) -> str:
    """The file name an href `href_of` wrote names, byte for byte (a name not UTF-8 too)."""
    return unquote(href, errors="surrogateescape")


def _tokens(name: str) -> list[str]:
    return [t for t in re.split(r"[-_.\s]+", name.removesuffix(".md").lower()) if t]


def _shared(a: str, b: str) -> int:
    n = 0
    for x, y in zip(_tokens(a), _tokens(b)):
        if x != y:
            break
        n += 1
    return n


def _block_end(parsed: list[Line], i: int) -> int:
    """The index after entry line `i` and the lines of its list item (`_item_extent`, nested entries too)."""
    extent = _item_extent(parsed, i, nested_entries=True)
    return extent[-1] + 1 if extent else i + 1


def _item_extent(parsed: list[Line], n: int, nested_entries: bool) -> list[int]:
    """The lines after list item `n` that are its, as CommonMark reads them: each line indented
    deeper than its marker; after one or more blank lines (kept in it, between), each line indented
    to its text's column or more (a loose item's next paragraph); and, right after a line of its
    paragraph text, an unindented line of text (a lazy continuation line: a hook wrapped at column
    0). A blank line, then a line indented less, ends it; so do a heading, another list item at its
    indent or less, a rule, a fence, a quote, HTML or a table row that is not indented into it.
    `nested_entries` False: an entry line nested in it ends it too (the lines under that entry are that entry's)."""
    item = parsed[n]
    column = _text_column(item)
    out: list[int] = []
    blanks: list[int] = []  # blank lines seen since its last line: its own only if it goes on
    paragraph = True  # whether its last line is paragraph text, which a lazy line may continue
    for p in parsed[n + 1 :]:
        if not p.text.strip():
            blanks.append(p.n)
            continue
        if p.heading and not p.code:
            break
        if p.definition is not None:
            # A reference definition is read wherever a line starts with one (`_labels`) and edited on
            # its own (`_definitions_edited`): never also carried along as an item's lazy or nested line.
            break
        indent = len(p.text) - len(p.text.lstrip())
        if indent > item.indent if not blanks else indent >= column:
            if not nested_entries and not p.code and (p.entry is not None or p.number is not None):
                break
        elif blanks or not paragraph or not _plain(p) or p.indent >= 0 or _UNDERLINE.match(p.text):
            break
        out += blanks + [p.n]
        blanks = []
        paragraph = _plain(p)
    return out


def _text_column(item: Line) -> int:
    """Where a list item's text starts, as CommonMark counts it: after its marker and the blanks
    after that (one, when five or more follow: the text is then indented code)."""
    m = _ITEM.match(item.text)
    if m is None:
        return item.indent + 2
    blanks = m.end() - m.end("marker")
    return m.end("marker") + (blanks if blanks <= 4 else 1)


def _emptied_sections(parsed: list[Line], keep: list[bool], still_listed: Collection[int] = ()) -> None:
    """Drop, in `keep`, each heading whose section the run emptied (with the section's blank lines):
    every line under it up to the next heading that is not blank is gone, so at least one went. A
    heading followed by a deeper one has a subsection, and stays; so does one whose section lost
    only `still_listed` lines (repeats of files listed elsewhere: the section's subject is not gone,
    and its heading is the owner's)."""
    heads = [p.n for p in parsed if p.heading and not p.code]
    for i, h in enumerate(heads):
        end = heads[i + 1] if i + 1 < len(heads) else len(parsed)
        nxt = parsed[end].heading if end < len(parsed) else None
        own = parsed[h].heading
        if nxt is not None and own is not None and nxt[0] > own[0]:
            continue
        content = [n for n in range(h + 1, end) if _section_text(parsed[n])]
        if content and not any(keep[n] or n in still_listed for n in content):
            for n in range(h, end):
                keep[n] = False


@dataclass
class _Edits:
    lines: list[str]  # each line's text, links to gone files struck out
    keep: list[bool]
    swapped: dict[int, IndexItem]  # line -> the item it is now the entry of
    removed: list[str]  # the names whose lines went (or links were struck out)
    replaced: list[str]  # the gone names whose entry line became a replacement's
    repeats: list[int]  # the lines removed as repeats (files still listed by an earlier line)
    # the owner's notes on gone files (`listed_again`) kept, each pointing at the file holding its
    # file's content now: line -> the line as it now reads
    repointed: dict[int, Line] = field(default_factory=dict)
    # the owner's notes that went with their file: line -> the file holding its content, whose
    # listings say every word of the note, or None when no file of the folder holds it
    notes_gone: dict[int, str | None] = field(default_factory=dict)
    # the lines nested under an entry line removed (`_continuation`): moved under the entry of the
    # file now holding that content, line -> that entry's line; or, without one, gone with it
    nested_moved: dict[int, int] = field(default_factory=dict)
    nested_gone: list[int] = field(default_factory=list)
    # the reference definitions of gone files (`_definitions_edited`): line -> the home it now names,
    # or None: removed
    definitions: dict[int, str | None] = field(default_factory=dict)


def _edited(
    parsed: list[Line], gone: Collection[str], gone_numbers: GoneLeaves, replace: Mapping[str, IndexItem],
    repeats: bool, homes: Mapping[str, str],
) -> _Edits:
    """An index's lines with the entry lines of gone files removed (inline links to them struck out),
    repeated entry lines saying nothing of their own (`listed_again`) dropped unless `repeats` are
    kept (a sub-index listing a file twice, by subject and by date, means it), and each entry line
    of a file in `replace` made the entry of the file replacing it (once; a repeat goes); headings
    the removals of files emptied go too.

    `homes`: each gone file's content's new home, the link target of a merge's survivor or a
    consolidation's new file (in MEMORY.md and in its sub-indexes alike). The owner's note on a gone file (a
    listing of it saying something of its own, `listed_again`) stays, pointing at its file's home, unless
    that home's listings say all it says; without a home it goes with its file (`notes_gone`: the
    plan quotes it)."""
    lines = [p.text for p in parsed]
    keep = [True] * len(lines)
    swapped: dict[int, IndexItem] = {}
    removed: list[str] = []
    replaced: list[str] = []
    dropped: list[int] = []
    again = listed_again(parsed)
    bare = set() if repeats else {n for n, own_words in again.items() if not own_words}
    notes = _notes_on(parsed, {n for n, own in again.items() if own}, gone, homes)
    # the reference labels as the edited index defines them: a gone file's pointed at its home
    labels = {label: _home_name(homes, name) for label, name in _labels(parsed).items()}
    repointed: dict[int, Line] = {}
    notes_gone: dict[int, str | None] = {}
    seen: set[str] = set()
    removed_at: dict[int, str] = {}  # each entry line removed -> its file
    for p in parsed:
        if p.code:
            continue
        gone_entry = _gone_entry(p, gone, gone_numbers)
        if p.n in notes and gone_entry is not None:
            home = homes.get(gone_entry)
            if home is not None and not _words(*listing(p)) <= _said_of(home, parsed, replace):
                repointed[p.n] = _pointed_at(p, _struck_out(p, lines[p.n], gone, removed), home, labels)
                lines[p.n] = repointed[p.n].text
                continue
            notes_gone[p.n] = home
        entry = gone_entry or (p.entry if p.n in bare else None)
        if entry is not None and entry in replace and replace[entry].filename not in seen:
            swapped[p.n] = replace[entry]
            seen.add(replace[entry].filename)
            replaced.append(entry)
            lines[p.n] = _struck_out(p, lines[p.n], gone, removed)
            continue
        if entry is not None:  # gone, or listed already
            keep[p.n] = False
            removed.append(entry)
            removed_at[p.n] = entry
            if gone_entry is None:
                dropped.append(p.n)
            continue
        if p.entry is not None:
            seen.add(p.entry)
        lines[p.n] = _struck_out(p, lines[p.n], gone, removed)
    definitions = _definitions_edited(parsed, lines, keep, swapped, gone, homes, labels)
    removed += [name for n, home in definitions.items() if home is None and (name := parsed[n].definition) is not None]
    homes_by_line = {n: homes.get(e) if e in gone else e for n, e in removed_at.items()}
    moved, nested_gone = _nested_under_removed(parsed, keep, homes_by_line, swapped, notes)
    _emptied_sections(parsed, keep, set(dropped))
    return _Edits(lines, keep, swapped, removed, replaced, dropped, repointed, notes_gone, moved, nested_gone, definitions)


def _home_name(homes: Mapping[str, str], name: str) -> str:
    """The sibling a link to `name` names once the run is done: its home's, when a file takes its content."""
    home = sibling(homes[name]) if name in homes else None
    return home if home is not None else name


def _pointed_now(edits: _Edits) -> list[str]:
    """The files an owner's note, or a reference definition a kept line uses, now points at in place of a gone file."""
    return sorted({p.entry for p in edits.repointed.values() if p.entry is not None}
                  | {home for home in edits.definitions.values() if home is not None})


def _definitions_edited(parsed: list[Line], lines: list[str], keep: list[bool], swapped: Mapping[int, IndexItem],
                        gone: Collection[str], homes: Mapping[str, str], labels: Collection[str]) -> dict[int, str | None]:
    """Each reference definition of a gone file (`[label]: gone.md`), edited in `lines` and `keep`:
    pointed at its file's home (`homes`), its href spelled as the author's (`href_like`), while a line
    the index keeps still uses its label (an owner's note kept, `_pointed_at`: the uses struck out
    are no links any more, nor the entry link of a line a new file takes over, `restyler`); else
    removed, nothing left to need it. `labels`: the index's (`_labels`). Returns line -> the home it
    now names, or None: removed."""
    out: dict[int, str | None] = {}
    of_gone = {p.n: name for p in parsed if not p.code and (name := p.definition) is not None and name in gone}
    if not of_gone:
        return out
    taken_over = {(n, parsed[n].links[0][0]) for n in swapped if parsed[n].entry is not None}  # its first link: the entry's
    # a definition line (`p.label`, as parsed: never edited before this) uses no label
    used = {label for p in parsed if keep[p.n] and not p.code and p.label is None
            for start, _, _, label in reference_uses(lines[p.n], labels) if (p.n, start) not in taken_over}
    for n, name in of_gone.items():
        d = parsed[n].reference
        home = homes.get(name)
        if d is not None and home is not None and parsed[n].label in used:
            lines[n] = parsed[n].text[: d.start("href")] + href_like(d, _unquoted(home)) + parsed[n].text[d.end("href") :]
            out[n] = sibling(home)
        else:
            keep[n] = False
            out[n] = None
    return out


def _continuation(parsed: list[Line], n: int) -> list[int]:
    """The lines nested under list item `n`: the rest of its list item (`_item_extent`: its
    deeper-indented lines, a loose item's paragraphs after a blank line, its lazy continuation lines),
    up to an entry line nested there, an entry of its own (what is under it is its)."""
    return _item_extent(parsed, n, nested_entries=False)


def _nested_under_removed(
    parsed: list[Line], keep: list[bool], homes_by_line: Mapping[int, str | None], swapped: Mapping[int, IndexItem],
    notes: Collection[int],
) -> tuple[dict[int, int], list[int]]:
    """What becomes of the lines nested under each entry line removed (`homes_by_line`: its line -> the
    link target of the file now holding its file's content, the file itself for a repeat, None when
    no file holds it): left where they were, they would read as nested under the entry above, another
    file's. They move under the entry of the file holding that content, when the index keeps one
    (its own entry line, or the one a consolidation's new file took over); else they go with their
    entry (the plan quotes them). Every one is dropped from `keep` (a moved line is written again
    under its new entry). Returns (line -> the entry line it now sits under, the lines gone)."""
    moved: dict[int, int] = {}
    gone: list[int] = []
    entries: dict[str, int] | None = None  # the kept entries, found in one walk when a line first needs one
    for n, home in homes_by_line.items():
        below = _continuation(parsed, n)
        if not below:
            continue
        if entries is None:
            # Walked once, not per removed entry: the lines dropped from `keep` below never change it,
            # a nested line being no entry (`_continuation` ends at one).
            entries = _kept_entries(parsed, keep, swapped, notes)
        anchor = entries.get(name) if home is not None and (name := sibling(home)) is not None else None
        for c in below:
            keep[c] = False
            if anchor is not None:
                moved[c] = anchor
            else:
                gone.append(c)
    return moved, gone


def _kept_entries(parsed: list[Line], keep: list[bool], swapped: Mapping[int, IndexItem], notes: Collection[int]) -> dict[str, int]:
    """Each file the edited index keeps an entry of -> the line of its first such entry (not an owner's
    note on it): its own entry line, or the one a consolidation's new file took over (by its href)."""
    out: dict[str, int] = {}
    for p in parsed:
        if p.code or not keep[p.n] or p.n in notes:
            continue
        name = swapped[p.n].filename if p.n in swapped else p.entry
        if name is not None:
            out.setdefault(name, p.n)
    return out


def _moved_lines(parsed: list[Line], lines: list[str], edits: _Edits) -> dict[int, list[tuple[int, str]]]:
    """The lines `_nested_under_removed` moved, by the line they are written before (the end of their
    new entry's block, `_block_end`): each (its line, its text indented as deep under its new entry as
    it was under its old one; a blank line between its paragraphs as it was)."""
    out: dict[int, list[tuple[int, str]]] = {}
    ends: dict[int, int] = {}  # each new entry's block end, found once
    under: dict[int, int] = {}  # each moved line -> the entry line it was under: the first line above it not moved
    for c in sorted(edits.nested_moved):
        under[c] = under.get(c - 1, c - 1)
    for c, anchor in edits.nested_moved.items():
        old = under[c]
        shift = parsed[anchor].indent - parsed[old].indent
        text = lines[c]
        if text.strip():
            text = " " * shift + text if shift >= 0 else text[min(-shift, len(text) - len(text.lstrip())) :]
        if anchor not in ends:
            ends[anchor] = _block_end(parsed, anchor)
        out.setdefault(ends[anchor], []).append((c, text))
    return out


def _notes_on(parsed: list[Line], notes: set[int], gone: Collection[str], homes: Mapping[str, str]) -> set[int]:
    """`notes` (`listed_again`'s) with, for each gone file whose content a file takes (`homes`) and
    that the owner noted, its entry taken to be its first listing in a section that lists that file
    (its first listing, when none does), every other listing saying something of its own a note: an
    owner's `## Pinned` line listed above the file's own entry (under `## Topics`, beside its twin's)
    is not taken for that entry, to be removed with its heading, while the entry is kept as the note."""
    section = _sections(parsed)
    listings: dict[str, list[int]] = {}
    for p in parsed:
        if not p.code and p.entry is not None and p.entry in gone and p.entry in homes:
            if p.n in notes or p.entry not in listings:  # its first listing, then its notes
                listings.setdefault(p.entry, []).append(p.n)
    out = set(notes)
    if not listings:
        return out
    # the sections listing each file, found in one walk, not one per gone file (None: the lines listing none)
    sections_of: dict[str | None, set[int]] = {}
    for p in parsed:
        if not p.code and p.n not in notes:
            sections_of.setdefault(p.entry, set()).add(section[p.n])
    for name, ns in listings.items():
        beside = sections_of.get(sibling(homes[name]), set())
        out |= set(ns)
        out.discard(next((n for n in ns if section[n] in beside), ns[0]))
    return out


def _sections(parsed: list[Line]) -> list[int]:
    """The line of the heading each line is under (-1 above the first heading)."""
    out, at = [], -1
    for p in parsed:
        if p.heading and not p.code:
            at = p.n
        out.append(at)
    return out


def _said_of(target: str, parsed: list[Line], replace: Mapping[str, IndexItem]) -> set[str]:
    """Every word the index's listings of the file linked as `target` say once it is edited: its own
    entry lines, or the entry a consolidation's new file takes over (`replace`)."""
    name = sibling(target)
    words: set[str] = set()
    for p in parsed:
        if not p.code and p.entry is not None and p.entry == name:
            words |= _words(*listing(p))
    for item in replace.values():
        if item.filename == target:
            words |= _words(item.title, item.hook)
    return words


def _pointed_at(p: Line, text: str, target: str, labels: Mapping[str, str]) -> Line:
    """Entry line `p` (`text`: as edited so far; its entry link, the line's first, where it was) with
    that link's target made `target`: the owner's title and words as written. A reference link's
    (`[title][label]`) is its definition's, pointed there with it (`_definitions_edited`; `labels`:
    the labels as the edited index defines them)."""
    start = next(s for s, _, _, name in p.links if name == p.entry)
    link = _link_at(text, start)
    if link is not None:
        href = link.target
        text = text[: href.start("href")] + href_like(href, _unquoted(target)) + text[href.end("href") :]
    line = Line(p.n, text)
    # No `_read_definition`: an entry line starts with its list marker, never a definition's `[`
    _parse_line(line, labels)
    return line


@dataclass
class Struck:
    """A sub-index as `strike` leaves it."""
    text: str
    removed: list[str]  # the names whose lines went (or links were struck out)
    replaced: list[str]  # the gone names whose entry line became a replacement's
    said: list[str]  # what became of the owner's notes on gone files (`_notes_said`): the plan quotes them
    repointed: list[str]  # the files an owner's note on a gone file now points at


def strike(
    text: str, gone: Collection[str], gone_numbers: GoneLeaves, replace: Mapping[str, IndexItem] | None = None,
    homes: Mapping[str, str] | None = None, parsed: list[Line] | None = None,
) -> Struck:
    """An index file (a sub-index) without the entry lines of `gone` files and of gone numbered
    leaves, inline links to them struck out, the entry line of each file in `replace` made its
    replacement's (`restyler`), headings left empty by the removals gone; every other byte as it was
    (line endings, repeats, trailing lines). The owner's note on a gone file is treated as in
    MEMORY.md (`rebuild`): pointed at its content's new home (`homes`), else gone with its file and
    quoted (`Struck.said`). `parsed`: `parse(text)`, when the caller has it (only read here)."""
    parsed = parse(text) if parsed is None else parsed
    edits = _edited(parsed, gone, gone_numbers, replace or {}, repeats=True, homes=homes or {})
    out: list[tuple[str, str]] = []
    pieces = line_pieces(text)
    moved = _moved_lines(parsed, edits.lines, edits)
    for p, line, (_, eol) in zip(parsed, edits.lines, pieces):  # each line keeps its own ending
        _put_moved(out, moved.get(p.n, []), pieces)
        if not edits.keep[p.n]:
            continue
        if p.n in edits.swapped:
            item = edits.swapped[p.n]
            line_of = restyler(p, item)
            line = line_of(capped(line_of, item.hook, house_width(parsed), item.fit))
        out.append((line, eol))
    _put_moved(out, moved.get(len(parsed), []), pieces)
    return Struck(join_pieces(out), edits.removed, edits.replaced, _notes_said(parsed, edits), _pointed_now(edits))


def _put_moved(out: list[tuple[str, str]], moved: list[tuple[int, str]], pieces: list[tuple[str, str]]) -> None:
    """The moved lines (`_moved_lines`) added to `out`, each with its own line ending; a line before
    them that had none (the file's last) takes the first one's, so no two lines run together."""
    for c, text in moved:
        if out and not out[-1][1]:
            out[-1] = (out[-1][0], pieces[c][1] or "\n")
        out.append((text, pieces[c][1]))


# A hook cut shorter than this says nothing true of the file: the entry is left a bare link.
MIN_HOUSE_HOOK = 20


def house_width(parsed: list[Line]) -> int | None:
    """The longest entry line an index already has (linked or `- N. Title`): its own house style,
    which a line the run writes keeps to (an owner who keeps every line under 200 characters must not
    find a 254-character one). None without entry lines."""
    return max((len(p.text) for p in parsed if not p.code and (p.entry is not None or p.number is not None)), default=None)


def _new_line(item: IndexItem, sep: str) -> Callable[[str], str]:
    """The entry line a new file gets, by its hook."""
    return lambda hook: entry_line(item, sep, hook)


def capped(line: Callable[[str], str], hook: str, longest: int | None, fit: Callable[[int], str] | None = None) -> str:
    """`hook` made to fit (`fit`, else cut at a word) so that `line(hook)`, the entry line it makes,
    is no longer than `longest`; no hook at all when fewer than MIN_HOUSE_HOOK characters of it would fit."""
    one = " ".join(hook.split())
    if longest is None or not one or len(line(one)) <= longest:
        return one
    room = len(one) - (len(line(one)) - longest)
    short = " ".join((fit(room) if fit else trim(one, room)).split()) if room >= MIN_HOUSE_HOOK else ""
    return short if short and len(line(short)) <= longest else ""


def rebuild(
    existing: str | None, heading: str, add: list[IndexItem], gone: Collection[str], budget: int, min_hook: int,
    max_lines: int = MAX_LINES, gone_numbers: GoneLeaves | None = None, load_bytes: int = MAX_BYTES,
    replace: Mapping[str, IndexItem] | None = None, fix_drift: bool = True, eol_extra: int = 0, fixed_bytes: int = 0,
    homes: Mapping[str, str] | None = None, parsed: list[Line] | None = None,
) -> RebuiltIndex:
    """MEMORY.md with entries added for `add`, entries for `gone` removed (inline links to them
    struck out), repeated entry lines saying nothing of their own dropped (`listed_again`: one
    saying something of its own is the owner's note, kept), and the entry line of each gone file in `replace`
    made the entry of the file that replaces it (a consolidation's new file takes its first member's
    place); everything else stays where the author put it, but a heading the removals of files left
    empty. Each repeat dropped is named, by line and section, in the warnings (the plan says it).
    The owner's note on a gone file stays, pointing at its content's new home (`homes`: gone file ->
    the link target of the merge's survivor or consolidation's new file holding it), its words as
    written; one that goes with its file is quoted in the warnings (`_notes_said`).

    `gone_numbers`: the files now gone that a tree index's `- 6. Title` lines stood for
    (`numbered_entry_of`): those lines are their entries, removed (or replaced) like the others.
    Hooks: `_fit` (the author's are cut only to fit what Claude Code loads). A line the rebuild
    writes is no longer than the index's longest entry line (`house_width`).

    `fix_drift` False: only the run's own edits (a run that did not ask for a rebuild); repeated
    entry lines, the author's hooks and a missing final line break stay as they are. `eol_extra`,
    `fixed_bytes`: what the file on disk adds to the LF text measured (`Limits`). `parsed`:
    `parse(existing)`, when the caller has it (only read here)."""
    gone_numbers = gone_numbers or {}
    replace = replace or {}
    if existing is None or not existing.strip():
        return _fresh(heading, add, budget, min_hook, max_lines, load_bytes)
    parsed = parse(existing) if parsed is None else parsed
    edits = _edited(parsed, set(gone), gone_numbers, replace, repeats=not fix_drift, homes=homes or {})
    lines, keep, swapped = edits.lines, edits.keep, edits.swapped
    current = [edits.repointed.get(p.n, p) for p in parsed]  # the owner's notes as they now point
    add = [i for i in add if i not in swapped.values()]
    sep = next((p.sep for p in parsed if p.entry and p.sep and keep[p.n]), DEFAULT_SEP)
    after, at_end = _place(add, current, lines, keep, max_lines)
    longest = house_width(parsed)
    new_hooks = {i.filename: capped(_new_line(i, sep), i.hook, longest, i.fit) for i in add}
    restyle = {idx: restyler(parsed[idx], item) for idx, item in swapped.items()}  # each line read once
    for idx, item in swapped.items():
        new_hooks[item.filename] = capped(restyle[idx], item.hook, longest, item.fit)
    has_section = any(p.heading and p.heading[1].strip() == UNINDEXED for p in parsed if not p.code)
    moved = _moved_lines(parsed, lines, edits)

    def render(new: int | None, old: int | None) -> Rendered:
        out: list[str] = []
        cut: dict[str, int] = {}
        for idx, text in enumerate(lines):
            out.extend(line for _, line in moved.get(idx, []))  # under the entry above, before any new one
            for item in after.get(idx, []):
                out.append(entry_line(item, sep, _cut(new_hooks[item.filename], new), _indent_of(parsed, idx)))
            if idx in swapped:  # made of the author's hooks, in place of longer lines: cut as theirs are
                item = swapped[idx]
                out.append(restyle[idx](_cut(new_hooks[item.filename], old)))
            elif keep[idx]:
                out.append(_trimmed(current[idx], text, old, cut))
        out.extend(line for _, line in moved.get(len(lines), []))
        for item in after.get(len(lines), []):
            out.append(entry_line(item, sep, _cut(new_hooks[item.filename], new)))
        if at_end:
            while out and not out[-1].strip():
                out.pop()
            if not has_section:
                out += ["", f"## {UNINDEXED}", ""]
            out += [entry_line(i, sep, _cut(new_hooks[i.filename], new)) for i in at_end]
        if not fix_drift and not at_end:
            # Only the run's own edits: the owner's trailing blank lines (and a missing final line
            # break) stay as written, every line kept joined back as it was.
            return Rendered("\n".join(out), cut)
        # A missing final line break is drift too: only a rebuild asked for adds it.
        end = "\n" if fix_drift or existing.endswith(("\n", "\r")) else ""
        return Rendered("\n".join(out).rstrip("\n") + end, cut)

    added = sorted(i.filename for i in add + list(swapped.values()))
    text, warnings = _fit(render, Limits(budget, load_bytes, min_hook, max_lines, trim_authors=fix_drift,
                                         eol_extra=eol_extra, fixed_bytes=fixed_bytes), added)
    said = _repeats_said(parsed, edits.repeats, keep) + _notes_said(parsed, edits)
    return RebuiltIndex(text, said + warnings, added, edits.removed, edits.replaced, _pointed_now(edits))


def _repeats_said(parsed: list[Line], repeats: list[int], keep: list[bool]) -> list[str]:
    """The repeated entry lines a rebuild removes, each by file, line and section (the owner's lines:
    the plan names them), and the headings of the sections they leave empty, which stay."""
    if not repeats:
        return []
    at = _where(parsed, keep)
    where = [f"{parsed[n].entry} at {at(n)}" for n in repeats]
    return [f"{plural(len(repeats), 'repeated entry line')} removed, saying nothing its file's earlier listings do not: "
            + ", ".join(where)]


QUOTED_CHARS = 100  # an owner's line quoted in the plan: enough to know it by
_NOTE_LINE = "owner's note line"


def _notes_said(parsed: list[Line], edits: _Edits) -> list[str]:
    """What becomes of the owner's notes on gone files (`_edited`), each quoted with its line and
    section: the words are the owner's, and the user reads what happens to them before applying."""
    at = _where(parsed, edits.keep)

    def quoted(n: int) -> str:
        return f"`{trim(parsed[n].text.strip(), QUOTED_CHARS)}` at {at(n)}"

    out = []
    if edits.repointed:
        out.append(f"{plural(len(edits.repointed), _NOTE_LINE)} on a file this run retires kept, pointing at the "
                   "file now holding its content: " + ", ".join(f"{quoted(n)}, now to {p.entry}" for n, p in edits.repointed.items()))
    homeless = [n for n, home in edits.notes_gone.items() if home is None]
    if homeless:
        out.append(f"{plural(len(homeless), _NOTE_LINE)} removed with the file it notes, no file of the folder "
                   "taking that file's content: " + ", ".join(quoted(n) for n in homeless))
    said_by_home = {n: home for n, home in edits.notes_gone.items() if home is not None}
    if said_by_home:
        out.append(f"{plural(len(said_by_home), _NOTE_LINE)} removed with the file it notes, every word of it "
                   "in the entry of the file now holding that file's content: "
                   + ", ".join(f"{quoted(n)} ({sibling(home)})" for n, home in said_by_home.items()))
    return out + _nested_said(parsed, edits, quoted) + _definitions_said(edits, quoted)


_DEFINITION = "reference definition"


def _definitions_said(edits: _Edits, quoted: Callable[[int], str]) -> list[str]:
    """What becomes of the reference definitions of gone files (`_definitions_edited`), each quoted
    as the owner's notes are: pointed at the file now holding that file's content, or removed."""
    out = []
    pointed = {n: home for n, home in edits.definitions.items() if home is not None}
    if pointed:
        out.append(f"{plural(len(pointed), _DEFINITION)} of a file the index no longer lists pointed at the file now holding "
                   "its content, a kept line linking through it: " + ", ".join(f"{quoted(n)}, now to {h}" for n, h in pointed.items()))
    removed = [n for n, home in edits.definitions.items() if home is None]
    if removed:
        out.append(f"{plural(len(removed), _DEFINITION)} of a file the index no longer lists removed, no kept line linking "
                   "through it: " + ", ".join(quoted(n) for n in removed))
    return out


_NESTED = "nested under an entry line this run removes"


def _nested_said(parsed: list[Line], edits: _Edits, quoted: Callable[[int], str]) -> list[str]:
    """What becomes of the lines nested under an entry line removed (`_nested_under_removed`), each
    quoted as the owner's notes are: moved under another entry, or gone with theirs."""
    out = []
    moved = {n: a for n, a in edits.nested_moved.items() if parsed[n].text.strip()}  # the blank lines between go unsaid
    gone = [n for n in edits.nested_gone if parsed[n].text.strip()]
    if moved:
        out.append(f"{plural(len(moved), 'line')} {_NESTED} kept, moved under the entry of the file now holding "
                   "that file's content: " + ", ".join(f"{quoted(n)}, now under {_entry_name(parsed, edits, a)}"
                                                      for n, a in moved.items()))
    if gone:
        out.append(f"{plural(len(gone), 'line')} {_NESTED} removed with it, the index keeping no entry of a file "
                   "holding that file's content: " + ", ".join(quoted(n) for n in gone))
    return out


def _entry_name(parsed: list[Line], edits: _Edits, n: int) -> str:
    """The file entry line `n` is the entry of once edited (a consolidation's new file, where it took a line over)."""
    return edits.swapped[n].filename if n in edits.swapped else parsed[n].entry or ""


def _where(parsed: list[Line], keep: list[bool]) -> Callable[[int], str]:
    """Where a line of the index is, for the plan: its number, its section's heading, and, when the
    run leaves that section empty, whether the heading stays. The sections are read once: quoting
    each of 20,000 lines under one removed entry took minutes when each quote read them again."""
    heads = [p.n for p in parsed if p.heading and not p.code]
    ends = heads[1:] + [len(parsed)]
    said = {h for h, end in zip(heads, ends) if any(keep[i] and _section_text(parsed[i]) for i in range(h + 1, end))}

    def where(n: int) -> str:
        k = bisect_left(heads, n) - 1  # the last heading above it
        if k < 0:
            return f"line {n + 1}"
        start = heads[k]
        text = f"line {n + 1} under '{_heading_text(parsed[start])}'"
        if start in said:
            return text
        return text + (" (the heading stays, its section now empty)" if keep[start] else " (the heading goes too, its section now empty)")

    return where


def _heading_text(p: Line) -> str:
    return p.heading[1] if p.heading else ""


def _place(
    add: list[IndexItem], parsed: list[Line], lines: list[str], keep: list[bool], max_lines: int,
) -> tuple[dict[int, list[IndexItem]], list[IndexItem]]:
    """Where each new entry goes: (line index -> entries placed after that line's block, entries for
    the end). Beside the entry whose file name it shares the most leading words with; without one,
    after the last entry of a flat list, else in one "Unindexed" section at the end when that fits in
    the lines Claude Code loads, or after the last entry of the section listing the most.

    No entry goes in place where it would push a line Claude Code loaded below its last line: only as
    many as fit within `max_lines` do (in file-name order); the rest go to the end."""
    anchors = [p for p in parsed if p.entry is not None and keep[p.n] and not p.code]
    sections = sum(1 for p in parsed if p.heading and not p.code and keep[p.n])
    kept = sum(keep) - (1 if keep and keep[-1] and not lines[-1] else 0)  # the "" after the final line break is no line
    home = (anchors[-1] if anchors else None) if sections <= 1 else _home(parsed, anchors)
    own_section_fits = kept + len(add) + 3 <= max_lines  # a blank line, the heading, a blank line
    spots: list[tuple[IndexItem, int]] = []
    at_end: list[IndexItem] = []
    ends: dict[int, int] = {}  # each anchor's block end, found once (a long item is walked once, not per entry)

    def block_end(n: int) -> int:
        if n not in ends:
            ends[n] = _block_end(parsed, n)
        return ends[n]

    for item in sorted(add, key=lambda i: i.filename):
        best = max(anchors, key=lambda p: (_shared(p.entry or "", item.filename), p.n), default=None)
        if best is not None and _shared(best.entry or "", item.filename) >= 1:
            spots.append((item, block_end(best.n)))
        elif home is not None and (sections <= 1 or not own_section_fits):
            spots.append((item, block_end(home.n)))
        else:
            at_end.append(item)
    room = max(max_lines - kept, 0)
    if len(spots) > room:
        at_end = sorted(at_end + [item for item, _ in spots[room:]], key=lambda i: i.filename)
        spots = spots[:room]
    after: dict[int, list[IndexItem]] = {}
    for item, idx in spots:
        after.setdefault(idx, []).append(item)
    return after, at_end


def _home(parsed: list[Line], anchors: list[Line]) -> Line | None:
    """The last entry of the section listing the most entries (the first such section): where an
    entry with no sibling goes when a section of its own would not be loaded."""
    under = _sections(parsed)
    count: dict[int, list[Line]] = {}
    for anchor in anchors:  # in the order of their lines
        count.setdefault(under[anchor.n], []).append(anchor)
    best = max(count.values(), key=len, default=[])  # max keeps the first of equals
    return best[-1] if best else None


def _indent_of(parsed: list[Line], idx: int) -> str:
    # The indentation of the entry whose block ends at `idx` (its siblings are at that depth).
    for j in range(idx - 1, -1, -1):
        if parsed[j].entry is not None:
            return " " * max(parsed[j].indent, 0)
    return ""


def _cut(hook: str, limit: int | None) -> str:
    return hook if limit is None else trim(hook, limit)


def _trimmed(p: Line, text: str, limit: int | None, cut: dict[str, int]) -> str:
    """An entry line with its hook cut to `limit` (what was cut counted in `cut`); any other line as it is."""
    if limit is None or p.entry is None or p.hook_at < 0 or len(text) - p.hook_at <= limit:
        return text
    hook = text[p.hook_at :].strip()
    short = trim(hook, limit)
    if short != hook:
        cut[p.entry] = cut.get(p.entry, 0) + len(hook) - len(short)
    return text[: p.hook_at] + short


@dataclass(frozen=True)
class Rendered:
    text: str
    cut: dict[str, int]  # hand-written hooks shortened: entry -> characters cut


@dataclass(frozen=True)
class Limits:
    budget: int  # bytes: the target a rebuild keeps new hooks within (seed 001: 17 KB)
    load_bytes: int  # bytes Claude Code loads: only past them is an author's hook ever cut
    min_hook: int  # below this, trimming is a problem for the user
    max_lines: int  # lines Claude Code loads
    trim_authors: bool = True  # False: the author's hooks are never cut (only a rebuild asked for cuts them)
    # What the file on disk adds to the LF text measured: a byte per line break when it ends its lines
    # with CRLF (its line endings are put back as it is written), a BOM's three bytes.
    eol_extra: int = 0
    fixed_bytes: int = 0


def _fit(render: Callable[[int | None, int | None], Rendered], limits: Limits, added: list[str]) -> tuple[str, list[str]]:
    """The rendered index and what to tell the user. The hooks the rebuild writes are cut (not under
    `min_hook`) to keep within the byte target. The author's are cut
    only when the index would otherwise pass what Claude Code loads, and then only as far as loading
    it whole takes: every hook is loaded either way, and what the author wrote is worth more than
    headroom. No entry is ever dropped, so it may still be over either limit."""
    untouched = r = render(None, None)
    new: int | None = None
    old: int | None = None
    if _size(r, limits) > limits.budget:
        new, r = _shrink(lambda n: render(n, None), r, limits.budget, limits.min_hook, limits)
    if _size(r, limits) > limits.load_bytes and limits.trim_authors:
        old, r = _shrink(lambda n: render(n, n), untouched, limits.load_bytes, 0, limits)
        new = old
    return r.text, _warnings(r, untouched, limits, new, old, added)


def _size(r: Rendered, limits: Limits) -> int:
    # bytes as the writer encodes them (a file name that is not UTF-8 must not stop the run here),
    # with the file's own line endings and BOM: what the reader and Claude Code count
    return len(r.text.encode("utf-8", "backslashreplace")) + limits.eol_extra * r.text.count("\n") + limits.fixed_bytes


def _shrink(render: Callable[[int], Rendered], r: Rendered, target: int, floor: int, limits: Limits) -> tuple[int, Rendered]:
    """(the longest hook limit, not under `floor`, at which the index fits `target` bytes — `floor`
    when none does —, the index rendered with it). Found by bisection: a shorter limit never makes
    the index longer, and stepping down a character at a time made one 200,000-character line take
    minutes to plan."""
    lo, hi = floor, _longest(r.text)
    best = render(lo)
    if _size(best, limits) > target:
        return lo, best
    while lo < hi:  # invariant: the index fits at `lo`
        mid = (lo + hi + 1) // 2
        at = render(mid)
        if _size(at, limits) <= target:
            lo, best = mid, at
        else:
            hi = mid - 1
    return lo, best


def _longest(text: str) -> int:
    return max((len(line) for line in split_lines(text)), default=0)


def _warnings(r: Rendered, untouched: Rendered, limits: Limits, new: int | None, old: int | None, added: list[str]) -> list[str]:
    """What the rebuild shortened or could not fit, for the plan's reason and the run's notes."""
    out: list[str] = []
    size = _size(r, limits)
    count = line_count(r.text)  # as Claude Code counts them: at line breaks only
    lines = parse(r.text) if r.cut or count > limits.max_lines else []
    if r.cut:
        longest = max(len(listing(p)[1]) for p in lines if p.entry in r.cut)
        out.append(
            f"{plural(len(r.cut), 'hand-written hook')} shortened, by {sum(r.cut.values())} characters in all (each now at most "
            f"{longest}): untrimmed, the index would be {_size(untouched, limits)} bytes, past the {limits.load_bytes} Claude Code loads")
    if old is not None and old < limits.min_hook:
        out.append(f"index needs hooks under {limits.min_hook} characters to fit the {limits.load_bytes} bytes Claude Code loads; "
                   "every entry kept, review it by hand")
    if size > limits.load_bytes:
        how = "with every hook trimmed" if limits.trim_authors else "hand-written hooks left as written (rebuild_index or trim_budget trims them)"
        out.append(f"index is {size} bytes, over the {limits.load_bytes} Claude Code loads, {how}")
    if old is None and new is not None and r.text != untouched.text:
        out.append(f"new entries' hooks cut to {new} characters or fewer for the index's {limits.budget}-byte target")
    if old is None and limits.budget < size <= limits.load_bytes:
        out.append(f"index is {size} bytes, over its {limits.budget}-byte target but within the {limits.load_bytes} Claude Code loads: "
                   "hand-written hooks kept as written")
    if count > limits.max_lines:
        late = [p.entry or "" for p in lines[limits.max_lines :] if p.entry in added and not p.code]
        past = f"; {plural(len(late), 'new entry', 'new entries')} past them ({', '.join(late)})" if late else ""
        out.append(f"index is {count} lines: Claude Code loads the first {limits.max_lines}{past}; every entry kept — "
                   "move a section into a sub-index file")
    return out


def _fresh(heading: str, add: list[IndexItem], budget: int, min_hook: int, max_lines: int, load_bytes: int) -> RebuiltIndex:
    items = sorted(add, key=lambda i: i.filename)
    hooks = [" ".join(i.hook.split()) for i in items]

    def render(new: int | None, old: int | None) -> Rendered:
        body = [f"# {heading}", ""] + [entry_line(i, DEFAULT_SEP, _cut(h, new)) for i, h in zip(items, hooks)]
        return Rendered("\n".join(body) + "\n", {})

    names = [i.filename for i in items]
    text, warnings = _fit(render, Limits(budget, load_bytes, min_hook, max_lines), names)
    return RebuiltIndex(text, warnings, names, [])


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
    parsed = parse(text)
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
        if p.underline:
            continue  # its heading's, above
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
