"""Links a plan would leave dangling: `[[...]]` wiki links to a memory the plan takes away.

Claude Code memory folders link memories to each other by `[[name]]` (the front matter's `name`,
or the file name without `.md`): on the real stores 613 such links in 5 of 15 folders. A plan that
archives, prunes, merges or consolidates a linked memory leaves every such link pointing at nothing,
in the memories that stay and in the body a consolidation writes (its members often link each
other). The plan says which links dangle and, when the memory has a successor (a merge's survivor,
a consolidation's new file), what they could point at instead.

Once a consolidation is applied its new file lists its members (`consolidated_from`), so a later
plan still knows where a link to one of them should point: `relinks` proposes the edit, an
`update_ref` the user approves (the link's target text replaced, every other byte kept).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from itertools import chain, compress
from operator import attrgetter, methodcaller
from dataclasses import dataclass
from typing import Any

from ..actions import MergeDuplicateAction, UpdateRefAction, outputs_of
from ..kinds import ActionKind, FindingKind, retires
from ..model import Action, Corpus, Finding, Memory
from ..text.counts import plural
from .outcome import Outcome

# `[[target]]`, `[[target|shown text]]`, `[[target#heading]]`: the target is what names a memory.
_WIKILINK = re.compile(r"\[\[([^\[\]\n|#]+)(?:[|#][^\[\]\n]*)?\]\]")
# A numbered file name (`105-feedback_claim_ignores_git_state`): a link names the rest.
_NUMBERED = re.compile(r"\d+-(.+)")


@dataclass(frozen=True)
class Retired:
    key: str
    successor: str | None  # the memory or new file that carries it on, if any
    successor_name: str | None  # what a link to the successor would say


def _stem(path: str) -> str:
    """A memory file's name without `.md`; "" for a memory that is not a file of its own (a record,
    an entry kept inside MEMORY.md: `MEMORY.md#heading/3` must not answer a link `[[3]]`)."""
    name = path.rsplit("/", 1)[-1]
    return name[:-3] if name.endswith(".md") and "#" not in path else ""


def _link_name(title: str | None, path: str) -> str:
    """What a link to a memory says: its name when it has one, else its file name without `.md`."""
    return title.strip() if title and title.strip() else (_stem(path) or path)


def _retired(by_key: Mapping[str, Memory], actions: Iterable[Action]) -> dict[str, Retired]:
    """Each memory an action takes away, with its successor."""
    out: dict[str, Retired] = {}
    for a in actions:
        if not retires(a.kind):
            continue
        successor: str | None = None
        successor_name: str | None = None
        if a.kind == ActionKind.MERGE_DUPLICATE and a.survivor:
            successor = a.survivor
            kept = by_key.get(a.survivor)
            successor_name = _link_name(kept.title if kept else None, a.survivor)
        outputs = outputs_of(a)
        if len(outputs) == 1:  # volumes split one topic in several files: no single successor
            successor = outputs[0]["path"]
            successor_name = _link_name(str(outputs[0]["frontmatter"].get("name") or ""), successor)
        stays = {a.survivor, *(a.kept or [])} if isinstance(a, MergeDuplicateAction) else set()
        for key in a.targets:
            if key in by_key and key not in stays:  # a merge's protected members stay beside its survivor
                out.setdefault(key, Retired(key, successor, successor_name))
    return out


def _folder(path: str) -> str:
    """The folder of a memory file, or of the MEMORY.md an entry is kept in (`f/MEMORY.md#api/1`)."""
    file = path.partition("#")[0]
    return file.rsplit("/", 1)[0] if "/" in file else ""


def _names(title: str, path: str) -> Iterator[tuple[str, str]]:
    """(folder, casefolded name) for each name a link in its folder reaches a memory by: a folder
    is a store of its own (a claude agent's memory), so `[[overview]]` in one never means another's."""
    folder = _folder(path)
    for name in (title.strip(), _stem(path)):
        if name:
            yield folder, name.casefold()


def _link_targets(text: str) -> Iterator[str]:
    if "[[" in text:  # most bodies hold no link: no regex run over them
        for match in _WIKILINK.finditer(text):
            yield match.group(1).strip().casefold()


def dangling_links(corpus: Corpus, actions: list[Action]) -> list[Finding]:
    """One finding per memory the plan takes away that others (or a new file of the plan) link to."""
    if not any(map(retires, map(attrgetter("kind"), actions))):
        return []
    # Only the memories holding a link are looked at, found by C-level maps (a bank holds 50k
    # memories and no link; a plan with merges runs this on every one of them).
    linked = list(compress(corpus.memories, map(methodcaller("__contains__", "[["), map(attrgetter("body"), corpus.memories))))
    written = [(o["path"], o["body"]) for a in actions for o in outputs_of(a) if "[[" in o["body"]]
    if not (linked or written):
        return []
    by_key = corpus.by_key()
    retired = _retired(by_key, actions)
    named: dict[tuple[str, str], str] = {}  # (folder, what a link says) -> the retired memory it names
    for key in sorted(retired):
        for where_name in _names(by_key[key].title, key):
            named.setdefault(where_name, key)
    # A name a memory that stays still answers to (a merge's survivor of the same name), or a file
    # the plan writes: a link by it still reaches a memory.
    for m in corpus.memories:
        if m.key not in retired:
            for where_name in _names(m.title, m.key):
                named.pop(where_name, None)
    for a in actions:
        for o in outputs_of(a):
            for where_name in _names(str(o["frontmatter"].get("name") or ""), o["path"]):
                named.pop(where_name, None)
    linking: dict[str, set[str]] = defaultdict(set)  # retired key -> the files linking it
    staying = ((m.key, m.body) for m in linked if m.key not in retired)
    for where, text in chain(staying, written):
        for target in _link_targets(text):
            gone = named.get((_folder(where), target))
            if gone is not None and gone != where:
                linking[gone].add(where)
    return [_finding(key, by_key[key], retired[key], linking[key], by_key) for key in sorted(linking)]


def _finding(key: str, m: Memory, r: Retired, linking: set[str], by_key: Mapping[str, Memory]) -> Finding:
    others = sorted(linking - {r.successor})
    parts = [f"[[{_link_name(m.title, key)}]] ({key}) is taken away by this plan"]
    if others:
        shown = ", ".join(others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3 else "")
        parts.append(f"linked from {plural(len(others), 'file')}: {shown}")
        if r.successor and r.successor_name:
            parts.append(f"those links could point at [[{r.successor_name}]] ({r.successor})")
            if r.successor not in by_key:  # a consolidation's new file: it will list its members
                parts.append("once it is applied, the next plan proposes that edit (update_ref)")
    if r.successor in linking:  # a consolidation's members linked each other: now one file
        parts.append(f"{r.successor}, which takes in its text, links it too")
    return Finding(kind=FindingKind.DANGLING_LINK, targets=sorted(linking | {key}), reason="; ".join(parts))


def _names_of(entry: str) -> set[str]:
    """What a link to a consolidated member could say, from its file name in `consolidated_from`."""
    stem = entry.rsplit("/", 1)[-1].removesuffix(".md")
    numbered = _NUMBERED.fullmatch(stem)
    return {n for n in (stem, numbered.group(1) if numbered else "") if n.strip()}


def relinks(corpus: Corpus) -> Outcome:
    """An `update_ref` for each memory linking, by a name no memory has any more, a member of an
    applied consolidation (a memory whose `consolidated_from` lists it): the link pointed at the
    consolidated memory. For the user to approve: the link's owner may have meant the old text."""
    out = Outcome()
    holders = sorted((m for m in corpus.memories if m.key.endswith(".md") and isinstance(m.meta.get("consolidated_from"), list)),
                     key=lambda m: m.key)
    if not holders:  # most stores (every bank): no name of every memory gathered for nothing
        return out
    live: set[str] = set()
    for m in corpus.memories:
        live.update(n.casefold() for n in (m.title.strip(), _stem(m.key)) if n)
    successor: dict[str, Memory] = {}  # a member's link text, casefolded -> the memory holding it now
    for m in holders:
        for entry in m.meta["consolidated_from"]:
            for name in _names_of(entry) if isinstance(entry, str) else ():
                if name.casefold() not in live:
                    successor.setdefault(name.casefold(), m)
    if not successor:
        return out
    for m in corpus.memories:
        if "[[" not in m.body or "#" in m.key:  # an entry kept inside MEMORY.md is not edited in place
            continue
        replacements: list[dict[str, Any]] = []  # `Replacement`s, checked as the action is built
        for match in _WIKILINK.finditer(m.body):
            target = match.group(1)
            now = successor.get(target.strip().casefold())
            if now is None or now is m:  # a consolidated memory linking its own members: left as written
                continue
            replacements.append({"field": "body", "start": match.start(1), "end": match.end(1), "before": target,
                                 "after": _link_name(now.title, now.key)})
        if replacements:
            shown = sorted({f"[[{r['before']}]] -> [[{r['after']}]]" for r in replacements})
            out.actions.append(UpdateRefAction(
                targets=[m.key], needs_user=True, replacements=replacements,
                reason=f"links a memory consolidated since into another: {', '.join(shown)}",
            ))
    return out
