"""Links a plan would leave dangling: `[[...]]` wiki links to a memory the plan takes away, and
markdown links (`[x](file.md)`, `[x](../other/file.md)`, a reference definition `[x]: file.md`) to its
file, from any folder of the store.

Claude Code memory folders link memories to each other by `[[name]]` (the front matter's `name`,
or the file name without `.md`): on the real stores 613 such links in 5 of 15 folders. A plan that
archives, prunes, merges or consolidates a linked memory leaves every such link pointing at nothing,
in the memories that stay and in the body a consolidation writes (its members often link each
other). The plan says which links dangle and, when the memory has a successor (a merge's survivor,
a consolidation's new file), what they could point at instead.

Once a consolidation is applied its new file lists its members (`consolidated_from`), so a later
plan still knows where a link to one of them should point: `relinks` proposes the edit, an
`update_ref` the user approves (the link's target text replaced, a reference definition's href for
all its uses, spelled as its author spelled it: angle brackets or percent-encoding kept; every other
byte kept). Links that reach nothing before any plan, `[[wiki]]` or markdown (`[x](file.md)`,
`[x]: file.md`), are `relinks`'s too.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Iterator, Set as AbstractSet
from dataclasses import dataclass
from itertools import chain, compress
from operator import attrgetter
from typing import Any
from urllib.parse import unquote

from ..actions import MergeDuplicateAction, UpdateRefAction, outputs_of
from ..kinds import FindingKind, retires
from ..model import Action, Corpus, Finding, Memory, is_entry
from ..text.counts import plural
from .link_names import (
    file_names, href_like, link_folder, link_names, link_parts, link_target_forms, link_targets, link_text, linked_files, links_in,
    markdown_links_in, may_link, store_file, undecodable,
)
from .outcome import Outcome
from .text import normalize


@dataclass(frozen=True)
class Retired:
    successor: str | None  # the memory or new file that carries it on, if any
    successor_name: str | None  # what a link to the successor would say
    new_file: bool = False  # the successor is a file the plan writes (a consolidation's)


def _link_name(title: str | None, path: str) -> str:
    """What a link to a memory says: its name when it has one a link can hold (no `#`, `|`, `[` or
    `]`, which end a link's target), else its file name without `.md`."""
    name = title.strip() if title else ""
    return name if name and not any(c in name for c in "#|[]") else path.rsplit("/", 1)[-1].removesuffix(".md")


def _retired(by_key: dict[str, Memory], actions: Iterable[Action]) -> dict[str, Retired]:
    """Each memory an action takes away, with its successor."""
    out: dict[str, Retired] = {}
    for a in actions:
        if not retires(a.kind):
            continue
        successor = Retired(None, None)
        stays: set[str | None] = set()
        if isinstance(a, MergeDuplicateAction):
            stays = {a.survivor, *(a.kept or [])}  # a merge's protected members stay beside its survivor
            if a.survivor:
                kept = by_key.get(a.survivor)
                successor = Retired(a.survivor, _link_name(kept.title if kept else None, a.survivor))
        outputs = outputs_of(a)
        if len(outputs) == 1:  # volumes split one topic in several files: no single successor
            path = outputs[0]["path"]
            successor = Retired(path, _link_name(str(outputs[0]["frontmatter"].get("name") or ""), path), new_file=True)
        for key in a.targets:
            if key in by_key and key not in stays:
                out.setdefault(key, successor)
    return out


def dangling_links(corpus: Corpus, actions: list[Action]) -> list[Finding]:
    """One finding per memory the plan takes away that others (or a new file of the plan) link to."""
    if not any(map(retires, map(attrgetter("kind"), actions))):
        return []
    # Only the memories holding a link are looked at, found by C-level maps.
    linked = list(compress(corpus.memories, map(may_link, map(attrgetter("body"), corpus.memories))))
    written = [(o["path"], o["body"]) for a in actions for o in outputs_of(a) if may_link(o["body"])]
    if not (linked or written):
        return []
    by_key = corpus.by_key()
    retired = _retired(by_key, actions)
    titles = tree_titles(corpus)
    named: dict[tuple[str, str], str] = {}  # (folder, what a link says) -> the retired memory it names
    for key in sorted(retired):
        for n in link_names(by_key[key].title, key, titles.get(key, ())):
            named.setdefault((link_folder(key), n), key)
    # A name a memory that stays still answers to (a merge's survivor of the same name), or a file
    # the plan writes: a link by it still reaches a memory.
    answered = chain(((m.title, m.key, titles.get(m.key, ())) for m in corpus.memories if m.key not in retired),
                     ((str(o["frontmatter"].get("name") or ""), o["path"], ()) for a in actions for o in outputs_of(a)))
    for title, key, given in answered:
        for n in link_names(title, key, given):
            named.pop((link_folder(key), n), None)
    files = _retired_files(retired, actions)
    linking: dict[str, set[str]] = defaultdict(set)  # retired key -> the files linking it
    staying = ((m.key, m.body) for m in linked if m.key not in retired)
    for where, text in chain(staying, written):
        folder = link_folder(where)
        by_name = (named.get((folder, target)) for target in link_targets(text))
        by_path = (files.get(_file_place(path)) for path in linked_files(folder, text))
        for gone in chain(by_name, by_path):
            if gone is not None and gone != where:
                linking[gone].add(where)
    return [_finding(key, by_key[key], retired[key], linking[key]) for key in sorted(linking)]


def _retired_files(retired: dict[str, Retired], actions: list[Action]) -> dict[tuple[str, str], str]:
    """The files the plan takes away, by `_file_place`: what a markdown link, from any folder of the
    store, names by its path. Not a path the plan writes a file at again, which the link still reaches."""
    files = {_file_place(key): key for key in sorted(retired) if file_names(key)}  # a memory that is a file of its own
    for a in actions:
        for o in outputs_of(a):
            files.pop(_file_place(o["path"]), None)
    return files


def _file_place(path: str) -> tuple[str, str]:
    """A file's folder and its name casefolded: how a markdown link's path is matched to a file (as
    `[[links]]` match names; the folder as written, which a case-sensitive store tells apart)."""
    return link_folder(path), path.rsplit("/", 1)[-1].casefold()


def _finding(key: str, m: Memory, r: Retired, linking: set[str]) -> Finding:
    others = sorted(linking - {r.successor})
    parts = [f"[[{_link_name(m.title, key)}]] ({key}) is taken away by this plan"]
    if others:
        shown = ", ".join(others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3 else "")
        parts.append(f"linked from {plural(len(others), 'file')}: {shown}")
        if r.successor and r.successor_name:
            parts.append(f"those links could point at [[{r.successor_name}]] ({r.successor})")
            if r.new_file:  # a consolidation's new file: it will list its members
                parts.append("once it is applied, the next plan proposes that edit (update_ref)")
    if r.successor in linking:  # a consolidation's members linked each other: now one file
        parts.append(f"{r.successor}, which takes in its text, links it too")
    return Finding(kind=FindingKind.DANGLING_LINK, targets=sorted(linking | {key}), reason="; ".join(parts))


def tree_titles(corpus: Corpus) -> dict[str, list[str]]:
    """The titles the folders' tree indexes give their numbered files (`- 104. Edit-Work Runs In A
    Lane Clone` for `104-feedback_x.md`), by file (claude reader): names a numbered reference
    (`[[104-edit-work-runs-in-a-lane-clone]]`) reaches the file by besides its own."""
    titles: dict[str, list[str]] = corpus.extra.get("tree_titles", {})
    return titles


def names_by_folder(corpus: Corpus) -> dict[str, set[str]]:
    """Every name a link may reach a file of each folder by: its memories' (`link_names`), and those
    of its files that are no memory but still answer a link (one the reader could not read, an
    index, a sub-index)."""
    names: dict[str, set[str]] = defaultdict(set)
    titles = tree_titles(corpus)
    for m in corpus.memories:
        names[link_folder(m.key)].update(link_names(m.title, m.key, titles.get(m.key, ())))
    for key in other_files(corpus):
        names[link_folder(key)].update(file_names(key, titles.get(key, ())))
    for index, headings in corpus.extra.get("index_headings", {}).items():  # a section of MEMORY.md
        names[link_folder(index)].update(h.strip().casefold() for h in headings)
    return names


def other_files(corpus: Corpus) -> list[str]:
    """The files of the memory folders that are no memory but still hold their name (and number):
    one the reader could not read, an index (a `memory.md` beside MEMORY.md is the same file where
    case does not count), a sub-index."""
    unread = [t for f in corpus.findings if f.kind == FindingKind.PARSE_ERROR for t in f.targets]
    sub_indexes = [k for keys in corpus.extra.get("sub_indexes", {}).values() for k in keys]
    return unread + list(corpus.indexes) + sub_indexes


# The type word a folder's file names may start with (`feedback_x`, `project-x`), and the little
# words a title keeps or drops ("backlog-is-the-tracker", `backlog_is_tracker`). Nothing else is
# dropped: "not", "before", numbers and the like tell two memories apart ("phase-1" and "phase-2").
_TYPE_WORDS = frozenset({"user", "feedback", "project", "reference"})
_FILLER = frozenset({"a", "an", "the", "is", "are"})
_WORD = re.compile(r"[^\W_]+")


@dataclass(frozen=True)
class Spelling:
    """A name as a link may spell it otherwise: its words (casefolded; `-`, `_` and spaces alike;
    no filler word), and the type word it starts with, if any."""

    words: tuple[str, ...]
    type_word: str | None

    @classmethod
    def of(cls, name: str) -> Spelling:
        words = _WORD.findall(name.casefold())
        type_word = words[0] if len(words) > 1 and words[0] in _TYPE_WORDS else None
        return cls(tuple(w for w in words[1 if type_word else 0:] if w not in _FILLER), type_word)

    def may_mean(self, other: Spelling) -> bool:
        """Whether a link spelled so may mean a file named `other`: the same words, and the same
        type word when both have one (`project-deploy` never means `feedback_deploy`)."""
        return self.words == other.words and (None in (self.type_word, other.type_word) or self.type_word == other.type_word)


@dataclass(frozen=True)
class _Named:
    memory: Memory | None  # None: a file that is no memory to link (unreadable, an index, archived)
    name: str  # what a link to it says
    spelled: Spelling


def _spellings(corpus: Corpus, names: dict[str, set[str]], archived: dict[str, set[str]]) -> dict[tuple[str, tuple[str, ...]], list[_Named]]:
    """(folder, words) -> every name of the folder's files spelled with those words: its memories'
    (`name`, then file name without its number: the first is what a link gets), and the files that
    answer a link without being a memory to point one at (unreadable, indexes, archived by an earlier
    run), which make a respelling ambiguous."""
    out: dict[tuple[str, tuple[str, ...]], list[_Named]] = defaultdict(list)
    memory_names: dict[str, set[str]] = defaultdict(set)
    titles = tree_titles(corpus)
    for m in corpus.memories:
        if is_entry(m.key) or not m.key.endswith(".md"):  # an entry inside MEMORY.md, a record: no file to link
            continue
        folder = link_folder(m.key)
        stem = link_parts(m.key)[1]
        for name in dict.fromkeys((m.title.strip(), stem)):
            spelled = Spelling.of(name)
            if spelled.words:  # linked by that name, or by its file name when a link cannot hold it
                out[(folder, spelled.words)].append(_Named(m, name if _link_name(name, m.key) == name else stem, spelled))
        reaching = link_names(m.title, m.key, titles.get(m.key, ()))
        for named in _by_tree_titles(m, titles.get(m.key, ()), reaching):
            out[(folder, named.spelled.words)].append(named)
        memory_names[folder] |= reaching
    for folder in sorted(set(names) | set(archived)):
        for name in sorted((names.get(folder, set()) | archived.get(folder, set())) - memory_names[folder]):
            spelled = Spelling.of(name)
            if spelled.words:
                out[(folder, spelled.words)].append(_Named(None, name, spelled))
    return out


def _by_tree_titles(m: Memory, titles: Iterable[str], reaching: AbstractSet[str]) -> Iterator[_Named]:
    """The titles a tree index gives numbered file N (`- 104. Edit-Work Runs In A Lane Clone`) as
    names a link may spell without the number (`[[edit-work-runs-in-a-lane-clone]]`): a title is a
    name of file N only in a numbered reference, so such a link reaches nothing, and is mended to
    one, the title as a slug after the number (`[[104-edit-work-runs-in-a-lane-clone]]`). The file's
    own type word (`104-feedback_x.md`) stands for the title's: a link typed otherwise
    (`[[project-...]]`) never means it. `reaching`: the link names that reach the file (`link_names`)."""
    number, stem = link_parts(m.key)
    if number is None:
        return
    for title in titles:
        slug = "-".join(normalize(title).split())
        reference = link_target_forms(f"{number}-{slug}")[-1]
        if not slug or reference not in reaching:  # the numbered reference must reach this very file
            continue
        spelled = Spelling.of(title)
        if not spelled.words:  # "A", "The": every link of no other word would spell it
            continue
        yield _Named(m, f"{number}-{slug}", Spelling(spelled.words, spelled.type_word or Spelling.of(stem).type_word))


def _respelled(spellings: dict[tuple[str, tuple[str, ...]], list[_Named]], folder: str, target: str) -> _Named | None:
    """The one memory of the folder a link to `target` may mean, spelled otherwise; None when no
    file or more than one may be meant."""
    spelled = Spelling.of(target)
    meant = [n for n in spellings.get((folder, spelled.words), []) if spelled.may_mean(n.spelled)]
    memories = {id(n.memory) for n in meant}
    return meant[0] if len(memories) == 1 and meant[0].memory is not None else None


@dataclass(frozen=True)
class _Dangling:
    """A link of a memory that reaches no file today, as `relinks` mends or reports it."""

    shown: str  # as a finding shows it: `[[name]]`, `[text](file.md)`, `[label]: file.md`
    folder: str  # the folder whose files it names
    target: str  # what it names there, casefolded: a wiki link's target, a markdown link's file name without `.md`
    start: int  # the span of the text a mend replaces: a wiki link's target, a markdown link's file name
    end: int
    written: str  # that text, as written
    link: re.Match[str] | None = None  # a markdown link as read (None: a wiki link): a mend spells its href alike (`href_like`)

    @property
    def markdown(self) -> bool:
        return self.link is not None


def _dangling_wiki_links(m: Memory, names: dict[str, set[str]]) -> Iterator[_Dangling]:
    """The `[[links]]` of a memory no name of its folder answers."""
    folder = link_folder(m.key)
    for match in links_in(m.body):
        written = match.group(1)
        forms = link_target_forms(written)
        if not any(f in names[folder] for f in forms):
            yield _Dangling(f"[[{written}]]", folder, forms[0], match.start(1), match.end(1), written)


def _dangling_markdown_links(m: Memory, files: dict[str, set[str]]) -> Iterator[_Dangling]:
    """The markdown links of a memory file to a `.md` file of a memory folder that has no such file.
    Not judged: a link to a URL or outside the store (`store_file`), to a folder the reader did not
    list (a repository's docs: not the store's files, which staleness checks against the repository),
    nor a link of an entry kept inside MEMORY.md, an index entry whose file index drift checks."""
    if is_entry(m.key):
        return
    for match in markdown_links_in(m.body):
        path = store_file(link_folder(m.key), match.group("href"))
        if path is None:
            continue
        folder, name = link_folder(path), path.rsplit("/", 1)[-1]
        href = match.group("href").split("#", 1)[0]
        written = href.rsplit("/", 1)[-1]  # the file name as the href spells it (percent-encoded or not)
        if folder not in files or name.casefold() in files[folder] or unquote(written) != name:
            continue
        start = match.start("href") + len(href) - len(written)
        yield _Dangling(link_text(match), folder, name.removesuffix(".md").casefold(), start, start + len(written), written, match)


def _folder_files(corpus: Corpus) -> dict[str, set[str]]:
    """The `.md` file names (casefolded, as `[[links]]` match them) of each folder the reader listed:
    its topic files, and its index when there is one."""
    files: dict[str, set[str]] = {}
    for index, listed in corpus.indexes.items():
        present = [index] if corpus.extra.get("index_present", {}).get(index, True) else []
        files[link_folder(index)] = {key.rsplit("/", 1)[-1].casefold() for key in [*listed, *present]}
    return files


def _mended(link: _Dangling, to: Memory, name: str) -> str | None:
    """What the link's mended text says: the name a wiki link gets, the file name a markdown link does,
    its href spelled as the author spelled it (`href_like`: in angle brackets, `<my notes.md>`, or
    percent-encoded, `my%20notes.md`). None for a name that is not UTF-8 (os keeps its bytes as lone surrogates): no text a memory holds
    can spell it, and a link reader could not map a percent-encoded byte back to it."""
    if undecodable(name if not link.markdown else to.key):
        return None
    return href_like(link.link, to.key.rsplit("/", 1)[-1]) if link.link is not None else name


def _successors(corpus: Corpus, names: dict[str, set[str]]) -> dict[tuple[str, str], Memory]:
    """(folder, a member's link text) -> the memory holding it now: each applied consolidation's
    members (its `consolidated_from`) no memory of the folder answers to any more."""
    successor: dict[tuple[str, str], Memory] = {}
    holders = sorted((m for m in corpus.memories if m.key.endswith(".md") and isinstance(m.meta.get("consolidated_from"), list)),
                     key=lambda m: m.key)
    for m in holders:
        folder = link_folder(m.key)
        for entry in m.meta["consolidated_from"]:
            for name in file_names(entry) if isinstance(entry, str) else ():  # a file name in the holder's folder
                if name not in names[folder]:
                    successor.setdefault((folder, name), m)
    return successor


def relinks(corpus: Corpus) -> Outcome:
    """What to do about links that reach no file today: `[[links]]` no name of their folder answers,
    markdown links (`[x](file.md)`, `[x](../other/file.md)`) to a file a memory folder lacks.

    An `update_ref` for each memory holding such links that can be mended: a link to a member of an
    applied consolidation (a memory whose `consolidated_from` lists it) points at the consolidated
    memory; a link spelled otherwise than the one memory of its folder whose name has the same words
    (`Spelling`) points at that name (a markdown link: at its file). For the user to approve: the
    link's owner may have meant the old text. The others are reported, one `dangling_link` finding
    per memory holding them (with what a link inside MEMORY.md, which is not edited in place, could
    point at)."""
    out = Outcome()
    linking = [m for m in corpus.memories if may_link(m.body)]
    if not linking:  # most stores: no name of every memory gathered for nothing
        return out
    names = names_by_folder(corpus)
    files = _folder_files(corpus)
    successor = _successors(corpus, names)
    # The names of the files earlier runs archived, by folder (claude reader: `archived_names`).
    archived = {folder: {n for f in gone for n in file_names(f)} for folder, gone in corpus.extra.get("archived_names", {}).items()}
    spellings = _spellings(corpus, names, archived)
    unmended: dict[str, list[str]] = defaultdict(list)  # memory -> its links that reach nothing, as written
    for m in sorted(linking, key=lambda m: m.key):
        replacements: list[dict[str, Any]] = []  # `Replacement`s, checked as the action is built
        why: set[str] = set()
        dangling = sorted(chain(_dangling_wiki_links(m, names), _dangling_markdown_links(m, files)), key=attrgetter("start"))
        for link in dangling:
            now = successor.get((link.folder, link.target))
            if now is m:  # a consolidated memory linking its own members: its text is here, left as written
                continue
            if now is not None:
                after, how = _mended(link, now, _link_name(now.title, now.key)), "consolidated into it"
            elif link.target in archived.get(link.folder, ()):  # gone, not misspelled: never sent to a namesake
                unmended[m.key].append(f"{link.shown} (archived by an earlier run)")
                continue
            elif (same := _respelled(spellings, link.folder, link.target)) is not None and same.memory is not None:
                after, how = _mended(link, same.memory, same.name), "the same words"
            else:
                after = None
            if after is None:  # nothing to point it at, or nothing a link could spell it by
                unmended[m.key].append(link.shown)
                continue
            shown_after = after if link.markdown else f"[[{after}]]"
            if is_entry(m.key):  # an entry kept inside MEMORY.md is not edited in place: said, for the user
                unmended[m.key].append(f"{link.shown} (could point at {shown_after}: {how})")
                continue
            why.add(f"{link.shown} -> {shown_after} ({how})")
            replacements.append({"field": "body", "start": link.start, "end": link.end, "before": link.written, "after": after})
        if replacements:
            out.actions.append(UpdateRefAction(
                targets=[m.key], needs_user=True, replacements=replacements,
                reason=f"links a name no memory of its folder has: {', '.join(sorted(why))}",
            ))
    for key, written in sorted(unmended.items()):
        links = list(dict.fromkeys(written))  # a link written twice is one link to mend
        verb = "reaches" if len(links) == 1 else "reach"
        out.findings.append(Finding(
            kind=FindingKind.DANGLING_LINK, targets=[key],
            reason=f"{plural(len(links), 'link')} {verb} no file of its folder: {'; '.join(links)}",
        ))
    return out
