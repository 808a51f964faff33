"""The names a `[[...]]` wiki link reaches a memory by, one grammar for every reader of links.

Claude Code memory folders link memories to each other by `[[name]]`: the front matter's `name`, or
the file name without `.md`, or, in folders that number their files (`105-feedback_x.md`,
`105_feedback_x.md`, `105. Title.md`: `numbered_name`), the name after the number or the number
alone (`[[105]]`). A numbered reference (`[[105. Title]]` as tree indexes write them,
`[[105-title-as-a-slug]]` or `[[105_title_slug]]` spelled as a file name) reaches file 105 only by
a name it goes by (`numbered_reference`): its file name's, its `name`, or the title a tree index of
its folder gives it (`- 105. Title`), which need not be its file's name; `[[105-anything-else]]`
reaches nothing. A folder is a store of its own (one agent's memory): `[[overview]]` in one never
means another's. Names are matched casefolded, as links and some file systems match them. A
`[[...]]` inside inline code or a fenced block is text (`[[ -f x ]]`, `[[9, hash]]`), not a link.
A markdown link (`[text](file.md)`, `[text](../other/file.md)`, or a reference definition,
`[ref]: file.md`, that `[text][ref]`, `[ref][]` and `[ref]` point through) names a file by its path
from the linking file's folder (`store_file`), in any folder of the store: never one outside it. Its
href is bare (percent-encoded where it must be) or in angle brackets (`<my notes.md>`), and one
grammar reads it (`HREF`) and writes it (`href_of`, `href_like`: in the form its author used).
Used by the dangling-link finding and relinks (dangling_links.py) and by a consolidation choosing a
name no memory of its folder answers to (stages/consolidate/claude_names.py).
"""

from __future__ import annotations

import heapq
import posixpath
import re
from collections.abc import Container, Iterable, Iterator
from urllib.parse import quote, unquote

from .text import normalize
from ..model import file_of, is_entry

# `[[target]]`, `[[target|shown text]]`, `[[target#heading]]`: the target is what names a memory.
WIKILINK = re.compile(r"\[\[([^\[\]\n|#]+)(?:[|#][^\[\]\n]*)?\]\]")
# A number as file names and index lines write one: at most 18 digits. A longer run of digits is
# text, not a number: Python refuses int() of more than 4300, and a hostile index's line of 5000
# stopped the whole plan. The one cap for every reader of numbers (memory_md's tree lines too).
NUMBER = r"\d{1,18}"
_NUMBERED = re.compile(rf"({NUMBER})-(.+)")
# The number a memory's name leads with, as its folder's files, its tree index and its links write it:
# `105-title`, `105_title`, `105. Title` (`[[105. Title]]`: a numbered reference, as a tree index lists
# its leaves, `- 105. Title`). One grammar for a file's name and a link's target (`numbered_name`).
_NUMBER_LEAD = re.compile(rf"({NUMBER})(?:[-_]|\.\s+)(?=\S)")
# Code, where `[[` is text: a fenced block (to its closing fence, or the end) or an inline code span,
# a run of backticks to the next run of as many (``[x](y.md)`` as much as `[x](y.md)`), on its line.
_CODE = re.compile(r"^[ \t]*(?P<fence>`{3,}|~{3,})[^\n]*\n.*?(?:^[ \t]*(?P=fence)[^\n]*$|\Z)"
                   r"|(?<!`)(?P<ticks>`+)(?!`)[^\n]*?(?<!`)(?P=ticks)(?!`)", re.MULTILINE | re.DOTALL)
# A list item's first line (`- x`, `* x`, `1. x`): what a line indented four spaces continues, not code.
_LIST_ITEM = re.compile(r"[ \t]*(?:[-*+]|\d{1,9}[.)])(?:[ \t]|$)")


def file_parts(key: str) -> tuple[str | None, str]:
    """A file's number, if its name has one, and the rest of its name without `.md`."""
    stem = key.rsplit("/", 1)[-1].removesuffix(".md")
    numbered = _NUMBERED.fullmatch(stem)
    return (numbered.group(1), numbered.group(2)) if numbered else (None, stem)


def numbered_name(name: str) -> tuple[str | None, str]:
    """The number a name leads with (`105-title`, `105_title`, `105. Title`), if any, and the rest."""
    lead = _NUMBER_LEAD.match(name)
    return (lead.group(1), name[lead.end():].strip()) if lead else (None, name)


def link_parts(key: str) -> tuple[str | None, str]:
    """`file_parts` as a link reads them: a file named `105_title.md` or `105. Title.md` is numbered
    too (`numbered_name`). (Not so for naming a new file beside it: `file_parts` is the `105-x`
    convention a consolidation follows.)"""
    return numbered_name(key.rsplit("/", 1)[-1].removesuffix(".md"))


def numbered_reference(number: str, name: str) -> str | None:
    """What a numbered reference to file `number` by `name` (`[[105. Title]]`, `[[105-title-slug]]`,
    `[[105_Title_Slug]]`) is matched by: the number and the name's words in one normal form (case,
    `-`, `_`, spaces and punctuation alike), `105#title slug`. A link's target ends at `#`, so no
    link's text is this string itself: only a numbered reference reaches it. None for a name of no word."""
    words = normalize(name)
    return f"{number}#{words}" if words else None


def file_names(key: str, titles: Iterable[str] = ()) -> set[str]:
    """The names a link reaches a file by: its name without `.md`, and without its number; for a
    numbered file, the numbered references (`numbered_reference`) by its name without the number
    and by the `titles` it goes by besides (its `name`, a tree index's title for it). None for a
    memory that is not a file of its own (a record, an entry kept inside MEMORY.md:
    `MEMORY.md#heading/3` must not answer a link `[[3]]`)."""
    if is_entry(key) or not key.endswith(".md"):
        return set()
    stem = key.rsplit("/", 1)[-1].removesuffix(".md")
    number, rest = link_parts(key)
    names = {n.casefold() for n in (stem, rest, number) if n}
    if number is not None:
        names.update(ref for name in (rest, *titles) if (ref := numbered_reference(number, name)) is not None)
    return names


def link_names(title: str, key: str, tree_titles: Iterable[str] = ()) -> set[str]:
    """The names a link reaches a memory by: `file_names` (by its `name` and the `tree_titles` its
    folder's tree indexes give it too), and its `name`."""
    name = title.strip()
    return file_names(key, (name, *tree_titles)) | ({name.casefold()} if name else set())


def link_folder(key: str) -> str:
    """The folder a memory's links are read in: its file's, or that of the MEMORY.md an entry is
    kept in (`f/MEMORY.md#api/1`)."""
    file = file_of(key)
    return file.rsplit("/", 1)[0] if "/" in file else "."


def links_in(text: str) -> Iterator[re.Match[str]]:
    """Each `[[...]]` link of a text outside code, in order (group 1: its target as written)."""
    if "[[" not in text:  # most bodies hold no link: no regex run over them
        return
    yield from _outside_code(text, WIKILINK.finditer(text))


def _outside_code(text: str, matches: Iterator[re.Match[str]]) -> Iterator[re.Match[str]]:
    """The `matches` (in order) that start outside the text's code spans, fenced and indented blocks."""
    code = [m.span() for m in _CODE.finditer(text)] if "`" in text or "~~~" in text else []
    if "    " in text or "\t" in text:
        code = sorted(code + list(_indented_blocks(text)))
    at = 0
    for match in matches:
        while at < len(code) and code[at][1] <= match.start():
            at += 1
        if at < len(code) and code[at][0] <= match.start():
            continue  # inside a code span or block
        yield match


def _indented_blocks(text: str) -> Iterator[tuple[int, int]]:
    """The spans of a text's indented code blocks: lines indented four spaces (or a tab) after a blank
    line, to the next line that is not, unless the text before is a list (whose items go on indented)."""
    at, start, blank, in_list = 0, -1, True, False
    for line in text.splitlines(keepends=True):
        indented, empty = line.startswith(("    ", "\t")), not line.strip()
        if start >= 0 and not (indented or empty):
            yield start, at
            start = -1
        if start < 0 and indented and not empty and blank and not in_list:
            start = at
        if not (indented or empty):
            in_list = _LIST_ITEM.match(line) is not None
        blank, at = empty, at + len(line)
    if start >= 0:
        yield start, at


def link_target_forms(written: str) -> tuple[str, ...]:
    """The names a link's target text may reach a memory by, in the order they are tried: the text
    casefolded (a memory may be named "3. Setup" itself, a file `105-title-slug.md`), then for
    `105. Title`, `105-title-slug` or `105_title_slug` the numbered reference (`numbered_reference`):
    file 105, when that is a name it goes by. So `[[2024-06-01-standup]]` reaches no file 2024
    unless that file is named so."""
    target = written.strip().casefold()
    number, rest = numbered_name(target)
    reference = numbered_reference(number, rest) if number is not None else None
    return (target,) if reference is None else (target, reference)


def link_targets(text: str) -> Iterator[str]:
    """What each `[[link]]` of a text says: each of its `link_target_forms`."""
    for match in links_in(text):
        yield from link_target_forms(match.group(1))


def linked_files(folder: str, text: str) -> Iterator[str]:
    """The store path of the `.md` file each markdown link of a text written in `folder` names
    (`store_file`), in this folder or another of the store (`[runbook](../ops/runbook.md)`)."""
    for match in markdown_links_in(text):
        path = store_file(folder, match.group("href"))
        if path is not None:
            yield path


# A markdown link's href (group `href`): bare (`file.md`, `my%20notes.md`) or, as CommonMark lets a
# file name with spaces be written, in angle brackets (`<my notes.md>`, group `href` inside them).
HREF = r"(?P<angle><)?(?P<href>(?(angle)[^<>\n]+|[^()\s]+))(?(angle)>)"
# `[text](href)` (with an optional "title"): where a markdown link points.
_MARKDOWN_LINK = re.compile(rf"\[[^\[\]\n]*\]\({HREF}(?:\s+\"[^\"]*\")?\)")
# A reference definition, `[label]: href "title"` on a line of its own (the title `"…"`, `'…'` or
# `(…)`, optional): the href every `[text][label]`, `[label][]` and `[label]` of the text points at,
# so the definition is the link a reader follows and a relink rewrites (each use goes with it). Not a
# footnote (`[^1]: …`). Read wherever a line starts one, after a paragraph's line too (CommonMark
# reads that line as the paragraph's text): a file named so is the author's link either way.
_REFERENCE_DEFINITION = re.compile(
    rf"(?:^|(?<=\r))[ \t]*\[(?!\^)(?P<label>[^\[\]\r\n]+)\]:[ \t]*{HREF}"
    rf"(?:[ \t]+(?:\"[^\"\r\n]*\"|'[^'\r\n]*'|\([^()\r\n]*\)))?[ \t]*(?=[\r\n]|\Z)",
    re.MULTILINE)
# A reference link's use: `[text][label]`, `[label][]` or `[label]`, not an image's, nor followed by
# an inline link's `(`. A link only when its label is defined (`reference_uses`): `[x]`, `[WIP]` are
# text otherwise. Its text holds no bracket: a line is read in linear time (a text one level of
# brackets deep, as `[a [b]](x.md)` may be, took 3 s on a line of 32,000 `[a`, growing with its square).
_REFERENCE_USE = re.compile(r"(?<![!\]])\[(?P<text>[^\[\]]*)\](?:\[(?P<label>[^\[\]]*)\])?(?![(\[])")
_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)


def may_link(text: str) -> bool:
    """Whether a text may hold a link (a `[[wiki]]`, a markdown `[x](file.md)` or a reference
    definition `[x]: file.md`): most hold none, and are not read further."""
    return "[[" in text or "](" in text or "]:" in text


def markdown_links_in(text: str) -> Iterator[re.Match[str]]:
    """Each markdown link of a text outside code, in order: inline (`[x](file.md)`) and reference
    definitions (`[x]: file.md`), group `href` its href as written, group `angle` set when written
    in angle brackets; an image (`![alt](src)`) is no link to a memory."""
    inline = _MARKDOWN_LINK.finditer(text) if "](" in text else iter(())
    defined = _REFERENCE_DEFINITION.finditer(text) if "]:" in text else iter(())
    for match in _outside_code(text, heapq.merge(inline, defined, key=_start)):
        if text[match.start() - 1:match.start()] != "!":
            yield match


def reference_definition(line: str) -> re.Match[str] | None:
    """A line's reference definition (`[label]: file.md "title"`; groups `label`, `href`, `angle`), if
    the line is one: what the index grammar (claude/memory_md.py) reads a line by, as the text's
    readers here do (`markdown_links_in`)."""
    return _REFERENCE_DEFINITION.match(line) if "]:" in line else None


def label_key(label: str) -> str:
    """A reference label as uses and definitions are matched by: case and runs of spaces alike."""
    return " ".join(label.split()).casefold()


def reference_uses(line: str, labels: Container[str]) -> Iterator[tuple[int, int, str, str]]:
    """Each use of a defined reference label (in `labels`, by `label_key`) in a line, in order:
    (start, end, its text, its label's key). A line that is a definition itself has none: not
    asked of one (the index grammar, claude/memory_md.py, reads each line's definition once,
    `Line.label`, and asks this only of the others)."""
    if "[" not in line:
        return
    for match in _REFERENCE_USE.finditer(line):
        key = label_key(match.group("label") or match.group("text"))
        if key in labels:
            yield match.start(), match.end(), match.group("text").strip(), key


def _start(match: re.Match[str]) -> int:
    return match.start()


def link_text(match: re.Match[str]) -> str:
    """A markdown link as a finding shows it: as written, without a definition's indent."""
    return match.group(0).strip()


def _md_target(href: str) -> str | None:
    """The `.md` path a markdown href names, decoded and without its `#anchor`; None for a URL
    (`https:`, `mailto:`), an absolute path or another kind of file."""
    target = unquote(href.split("#", 1)[0])
    return None if not target.endswith(".md") or _SCHEME.match(target) or target.startswith("/") else target


def sibling_file(href: str) -> str | None:
    """The `.md` file of the link's own folder a markdown href names, or None (a URL, another folder):
    what a MEMORY.md entry points at, and a memory's markdown link."""
    target = _md_target(href)
    if target is None:
        return None
    name = posixpath.normpath(target)
    return None if "/" in name or name in ("..", ".") else name


def store_file(folder: str, href: str) -> str | None:
    """The store path (`folder/x.md`, as memory keys are) of the `.md` file a markdown link written
    in `folder` names, or None: a URL, an absolute or Windows path, a path that leaves the store
    (`../` past its root): nothing a link says is trusted to name a file outside it."""
    target = _md_target(href)
    if target is None or "\\" in target:
        return None
    path = posixpath.normpath(posixpath.join(folder, target))
    return None if path == ".." or path.startswith("../") else path


# What a bare href cannot hold, or its reader (`_md_target`) would read otherwise: a space or a line
# break, a parenthesis or bracket, `<`, `>`, `#` (an anchor's start), `%` (an escape's), `\\`.
_BARE_UNSAFE = re.compile(r"[\s()\[\]<>#%\\]")
# ... and what an href in angle brackets cannot: `<`, `>`, a line break, `#`, `%`.
_ANGLE_UNSAFE = frozenset("<>\r\n#%")


def href_of(name: str, angle: bool = False, encoded: bool = False) -> str:
    """A file name as a markdown link's href holds it, read back as that name by `sibling_file` and
    `store_file` (the one grammar links are read and written by): in angle brackets (`angle`, the
    brackets not included) as written, only the characters that would end or change it there
    percent-encoded; bare, percent-encoded whole (`my%20notes.md`) when it has a character a bare href
    cannot hold, or always when the author `encoded` theirs (`caf%C3%A9.md`). A name that is not
    UTF-8 (os keeps its bytes as lone surrogates) is encoded byte for byte; no reader maps that
    back, so the 1:1 checks leave such a link alone."""
    if angle:
        return "".join(quote(c, errors="surrogateescape") if c in _ANGLE_UNSAFE or undecodable(c) else c for c in name)
    needs = encoded or _BARE_UNSAFE.search(name) is not None or undecodable(name)
    return quote(name, errors="surrogateescape") if needs else name


def href_like(link: re.Match[str], name: str) -> str:
    """`name` as an href spelled the way `link` (a `markdown_links_in` or `HREF` match) spells its
    own: in angle brackets when it is, percent-encoded when it is, else bare (`href_of`). A relink
    keeps the author's form."""
    return href_of(name, angle=link.group("angle") is not None, encoded="%" in link.group("href"))


def undecodable(name: str) -> bool:
    """Whether a file name holds bytes that were not UTF-8 (os keeps them as lone surrogates): no
    link text can name it as written, and quoting it needs `errors="surrogateescape"`."""
    return any("\udc80" <= ch <= "\udcff" for ch in name)
