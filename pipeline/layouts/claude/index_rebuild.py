"""The MEMORY.md rebuild, and the cut of memories kept inside MEMORY.md.

For every `rebuild_index` / `trim_budget` on a MEMORY.md the run applies, the MEMORY.md is edited,
not rewritten (`memory_md.rebuild`): headings, prose, order, sub-indexes and hooks stay; entry
lines of files that are gone are removed (inline links to them struck out), a repeated entry line
saying what an earlier listing of the file says goes (named in the plan; a file listed again saying
something of its own is the owner's note and stays: `memory_md.listed_again`; on a file the run archives,
it points at the merge's survivor or consolidation's new file holding that file's content, or, with
none, goes with it, quoted in the plan), a heading whose section
the run emptied of files goes with it, and each file MEMORY.md no longer
reaches gets an entry beside its siblings (else in one "Unindexed" section at the end, when that is
within the 200 lines Claude Code loads, or after the entries of the section listing the most).
Hooks the rebuild writes are trimmed at word boundaries towards `index_budget_bytes` (the 17 KB
target), not under `index_min_hook_chars`; the author's are trimmed only when the index would pass
`index_load_bytes`, what Claude Code loads, and only as far as it takes; never an entry dropped;
over 200 lines the user is told. What it shortens or cannot fit is said in the plan
(`consequences`, the same decisions and rebuild on the files as they are) and in the run's notes.
Every other folder in which anything changed gets only the edits its actions need (`fix_drift` off:
its archived files' lines, a consolidation's entry; the rest as it was). A line written is no
longer than the index's longest entry line (`memory_md.house_width`). Titles and hooks of new
entries come from the front matter (`name`, `description`), else the file stem and the body's first
paragraph (`first_prose`). The old MEMORY.md is copied to `.archive/<run-id>/MEMORY.md` first. A
MEMORY.md the reader could not read, one (or a sub-index) with a code fence no later fence line
closes (`memory_md.unclosed_fence`: a line edited there could be code), a symlink or no regular file
is never rewritten (`uneditable.index_left`, which the plan asks too), and an edited one is written
only if the same grammar, reading it back, reaches every surviving file and no entry is left dangling.

A consolidation's new file takes the place, in each index listing any of its members (MEMORY.md and
every sub-index), of the first member (in the plan's order) that index lists (`_replacements`):
that member's entry line becomes the new file's, in the line's own style (`memory_md.restyler`: a
link stays a link, `- N. Title — hook` stays numbered); the other members' lines go. Its hook is
made of the members' own index hooks (`_joined_hooks`), else of its description.

A file archived is gone from the whole tree index: its tree-index lines (`- 6. Title` for `6-…md`)
go like its entry lines, in MEMORY.md and in the sub-indexes MEMORY.md reaches (`_edit_sub_indexes`:
entry and numbered lines removed or made a consolidation's, inline links struck out, headings left
empty dropped, an owner's note pointed at its file's successor or else quoted, as in MEMORY.md,
nothing else added or trimmed; each old copy archived first, each write built on the
bytes read), so a resolver given the number finds no ghost.

A memory kept inside MEMORY.md itself (`MEMORY.md#<section>/<n>`) that is archived, pruned or merged
away is cut out of MEMORY.md in place (`_cut_index_memories`), its lines checked against what was
read; the old MEMORY.md is archived first, as above.

Both return journal ops built on the bytes they read; the writer (`changes`) decides when they run.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import re
from pathlib import Path
from typing import Callable, Mapping

from ...changes import ChangeSet
from ...config import Settings
from ...journal import ABSENT, Op, sha
from ...kinds import ActionKind
from ...model import Action, Corpus, Memory
from ...rules.link_names import href_of
from ...storage.files import Unreadable, decode_text, read_text
from ...storage.since_plan import DiskReads
from ...text.lenient_frontmatter import split_frontmatter_lenient
from ...text.lines import UTF8_BOM, decode_utf8, encode_utf8, join_pieces, line_pieces, newline_of, split_bom, with_old_line_endings
from ...text.counts import plural
from ...text.truncate import HOOK_STRIP
from ...text.truncate import shorten as shorten_text
from . import memory_md
from .memory_md import IndexItem, rebuild
from .decisions import Created, StaleInfo, decide
from .paths import _in_folder, _name, archive_path, folder_of
from .reader import INDEX
from .uneditable import Left, fenced, index_left, memory_left, reported_by_reader

def _decode(data: bytes) -> tuple[str, bool]:
    return decode_utf8(data)


def _encode(text: str, bom: bool) -> bytes:
    # backslashreplace: a note naming a file whose name is not UTF-8 must not crash the run
    return encode_utf8(text, bom, "backslashreplace")


_LIST_MARKER = re.compile(r"^(?:[-*+]|\d+[.)])\s+")


@dataclass(frozen=True)
class NotWritten:
    """Why a MEMORY.md is not written: a problem the user is told of (in the run's notes and its
    folder's REPORT.md), or none, `up_to_date`: what the run's edits make of it is what it is."""
    reason: str
    up_to_date: bool = False
    left: Left | None = None  # one apply leaves as it is (`uneditable.index_left`): what the user does about it


UP_TO_DATE = NotWritten("index already up to date", up_to_date=True)


def not_following(index_key: str, not_written: NotWritten) -> str:
    """What a run whose files moved (or were written) says of a MEMORY.md that could not follow:
    in its notes (where an apply's reader looks, not only the folder's REPORT.md), and in the plan
    of the actions that run would be (`consequences`)."""
    then = not_written.left.then(ActionKind.REBUILD_INDEX) if not_written.left else f"the next plan proposes {ActionKind.REBUILD_INDEX}"
    return (f"{index_key}: not edited for this run's changes ({not_written.reason}); it may still list what was "
            f"archived or miss what was written: {then}")


HOOK_CHARS = 150  # a derived hook is a pointer, not a summary
# A consolidation's entry stands for several files: its hook, made of theirs, may be up to twice a
# derived one (six review rounds' verdicts in 300 characters still read as verdicts).
CONSOLIDATED_HOOK_CHARS = 2 * HOOK_CHARS


def _structural(line: str) -> bool:
    return line.startswith(("#", "```", "~~~", "<!--", "|")) or set(line) <= set("-=*_ ")


def shorten(text: str, limit: int = HOOK_CHARS) -> str:
    return shorten_text(text, limit, strip=HOOK_STRIP)


def first_prose(body: str) -> str:
    """The body's first paragraph (or list item) of prose, as one line.

    When a table or code block comes first, the opening heading describes the file better than a
    cell or a line of code would; with no heading either, prose further down is used.
    """
    para: list[str] = []
    heading = ""
    for line in body.splitlines():
        s = line.strip()
        if para and (not s or _structural(s)):
            break
        if not s:
            continue
        if s.startswith("#"):
            heading = heading or s.lstrip("#").strip()
            continue
        if _structural(s):
            if heading:
                break
            continue
        item = _LIST_MARKER.match(s)
        if item and para:
            break
        para.append(s[item.end() :] if item else s)
        if item:
            break
    return shorten(" ".join(" ".join(para).split()) or heading)


def raw_scalar(raw_frontmatter: str, key: str, parsed: str) -> str:
    """The whole written value of a plain top-level `key:` line when YAML cut it short.

    Real memory files write `description: review of #2041 ...` unquoted; YAML reads ` #2041 ...` as
    a comment and keeps "review of". Claude Code shows the whole line, so the index hook does too.
    """
    m = re.search(rf"^{re.escape(key)}:[ \t]*(.*?)[ \t]*$", raw_frontmatter, re.MULTILINE)
    if not m:
        return parsed
    written = m.group(1)
    if not written or written[0] in "'\"[{|>&*!" or not written.startswith(parsed) or " #" not in written:
        return parsed
    return written


def _title(text: str) -> str:
    # Square brackets would end the link text early.
    return " ".join(text.replace("[", "(").replace("]", ")").split())


def index_heading(folder: str) -> str:
    parts = [p for p in folder.split("/") if p not in ("", ".")]
    if not parts:
        return "Memory"
    name = parts[-1]
    if name == "memory" and len(parts) > 1:
        name = parts[-2]
    return f"{name} Memory"


def _description(root: Path, key: str, m: Memory, settings: Settings) -> str:
    if not m.description or not m.has_frontmatter:
        return m.description
    try:
        raw = split_frontmatter_lenient(read_text(root, root / key, settings.max_file_bytes))[0].raw
    except Unreadable:
        return m.description
    return raw_scalar(raw, "description", m.description)


def _rebuild_index(
    root: Path, corpus: Corpus, settings: Settings, run_id: str, index_key: str, archived: set[str], out: ChangeSet,
    created: dict[str, Created] | None = None,
    disk: DiskReads | None = None,
    fix_drift: bool = True,
    successors: Mapping[str, str] | None = None,
) -> tuple[list[Op], str, NotWritten | None]:
    """(the writes, archived copies first, of the new MEMORY.md and of the sub-indexes that pointed at
    archived files; summary; why not, None when there are writes) for one folder.

    `fix_drift`: a rebuild the run applies (`rebuild_index`, `trim_budget`) also indexes the files no
    entry reaches, removes entries without a file and repeats, and trims hooks to fit. Without it only
    the run's own edits are made (archived files' lines removed, a consolidation's in its members'
    place, a new file's entry added): an action the user selected changes nothing else of the index.

    `successors` (`Decisions.successor`): each archived memory's content's new home, where an owner's
    note on it in MEMORY.md or a sub-index points once it is gone (`_homes`)."""
    left = index_left(corpus, index_key)
    if left is not None:
        return [], "", NotWritten(f"MEMORY.md left untouched: {left.why}", left=left)
    path = root / index_key
    if not fix_drift and not path.exists():
        # An index missing is drift: the rebuild the plan proposes creates it, listing every file.
        return [], "", NotWritten("no MEMORY.md: none created (rebuild_index creates it)")
    old: bytes | None = None
    existing: str | None = None
    bom = False
    if path.exists():
        try:
            # One read: the text rebuilt from and the bytes the write expects are the same bytes.
            old = (disk or DiskReads(root, settings.max_file_bytes)).bytes(index_key)
            if old is None:
                raise Unreadable("it is gone")
            existing = decode_text(old)
        except Unreadable as exc:
            return [], "", NotWritten(f"MEMORY.md could not be read again ({exc}): not rebuilt")
        read_as = corpus.index_shas.get(index_key)
        if read_as is not None and sha(old) != read_as:
            # Rebuilt from the files this run read: a line an agent added since (a new memory, a
            # rename) would read as an entry without a file, and go. An action the plan proposed is
            # skipped before this by its `target_hashes` (a rebuild's, and an archive's or
            # consolidation's, carry the hash of the indexes they edit: index_reads.py); this keeps an
            # action that came without them (one a caller built) off it too.
            return [], "", NotWritten("MEMORY.md changed since this run read it (written meanwhile): not rebuilt, the next run will")
        bom = split_bom(old)[0]
    by_key = corpus.by_key()
    folder = folder_of(index_key)
    surviving = [k for k in corpus.indexes[index_key] if k not in archived] + sorted(created or {})
    names = {_name(k) for k in surviving}
    # Each archived file of the folder by name, with what its title is matched against.
    archived_here = {_name(k): f"{_name(k)} {by_key[k].title if k in by_key else ''}"
                     for k in corpus.indexes[index_key] if k in archived}
    # A tree index's `- 6. Title` stood for the one file named `6-…md`: gone with it, if archived
    # (and if the line's title is the file's own: memory_md.numbered_entry_of).
    gone_numbers = {int(n): (name, archived_here[name]) for n, name in memory_md.by_number(names | set(archived_here)).items()
                    if name in archived_here}
    disk = disk or DiskReads(root, settings.max_file_bytes)
    on_disk = _sibling_reader(root, folder, settings, disk)
    parsed = memory_md.parse(existing or "")  # MEMORY.md as read: its listings, and what it reached
    if (left := fenced(parsed)) is not None:  # the reader's parse_error, on bytes not checked against its hash
        return [], "", NotWritten(f"MEMORY.md left untouched: {left.why}", left=left)
    listings = [memory_md.listed(lines, set(archived_here), gone_numbers)
                for lines in [parsed] + [memory_md.parse(t) for t in _sub_index_texts(corpus, index_key, on_disk)]]
    made, groups = _consolidated(created or {}, listings)
    replace = _replacements(listings[0], groups)
    homes = _homes(successors or {}, set(archived_here), names, folder)
    subs = _edit_sub_indexes(root, corpus, run_id, index_key, archived, set(archived_here), gone_numbers, disk, groups, homes)
    sub_ops, sub_texts, sub_summary = subs.ops, subs.texts, subs.summary

    def read(name: str) -> str | None:  # the sub-indexes as this run leaves them
        return sub_texts[name] if name in sub_texts else on_disk(name)

    before = memory_md.reach_lines(parsed, names, read)
    linked_names = set(before.entries) | set(before.inline)
    # Without a rebuild asked for, an entry without a file stays (it is drift, not the run's doing).
    gone = sorted(n for n in linked_names if n not in names and (fix_drift or n in archived_here))

    def item_of(key: str) -> IndexItem:
        if key in made:
            return made[key]
        m = by_key.get(key)
        stem = _name(key)[: -len(".md")] if key.endswith(".md") else _name(key)
        title = (_title(m.title) if m else "") or stem
        hook = (_description(root, key, m, settings) if m else "") or (first_prose(m.body) if m else "")
        return IndexItem(filename=href_of(_name(key)), title=title, hook=hook)

    def rebuilt_with(items: list[IndexItem]) -> memory_md.RebuiltIndex:
        return rebuild(
            existing,  # read at any line ending, rebuilt with LF ones: the file's own are put back below
            index_heading(folder),
            items,
            gone,
            settings.claude.index_budget_bytes,
            settings.claude.index_min_hook_chars,
            gone_numbers=gone_numbers,
            load_bytes=settings.claude.index_load_bytes,
            replace=replace,
            fix_drift=fix_drift,
            homes=homes,
            parsed=parsed,  # MEMORY.md as read, parsed once
            # measured as it will be written: its CRLFs put back, its BOM kept
            eol_extra=1 if existing is not None and newline_of(existing) == "\r\n" else 0,
            fixed_bytes=len(UTF8_BOM) if bom else 0,
        )

    items = [item_of(key) for key in surviving if _name(key) not in before.reached and (fix_drift or key in made)]
    rebuilt = rebuilt_with(items)
    # The reader decides what the next plan sees: every surviving file reached, no entry left dangling.
    after = memory_md.reach(rebuilt.text, names, read)
    unreached = [key for key in surviving if _name(key) in before.reached and _name(key) not in after.reached]
    if fix_drift and unreached:
        # Reached before only by a line the rebuild removed (the hook of an entry without a file:
        # `replaced by [the new one](runbook.md)`): each gets an entry of its own.
        items += [item_of(key) for key in unreached]
        rebuilt = rebuilt_with(items)
        after = memory_md.reach(rebuilt.text, names, read)
        rebuilt.warnings.insert(0, f"{plural(len(unreached), 'file')} reached only by a line it removes given an entry of its own: "
                                   + ", ".join(_name(k) for k in unreached))
    text = rebuilt.text
    # the sub-indexes as they are, for the check of the run's own edits (a rebuild's check needs none)
    was = None if fix_drift else memory_md.reach_lines(parsed, names, on_disk)
    # a new file's entry; a survivor an owner's note (in MEMORY.md or a sub-index) now links
    reached_anew = {_name(k) for k in made} | set(rebuilt.repointed) | subs.repointed
    if (not _sound(before, after, was, names, reached_anew, set(archived_here))
            or any(memory_md.numbered_entry_of(p, gone_numbers) for p in after.lines)):
        return [], "", NotWritten("the rebuilt index would not reach every file exactly once: left untouched")
    out.notes.extend(f"{index_key}: {w}" for w in rebuilt.warnings)
    out.notes.extend(subs.notes)
    text = text if existing is None else with_old_line_endings(text, existing)
    data = _encode(text, bom)
    if old is not None and data == old:
        return sub_ops, sub_summary, None if sub_ops else UP_TO_DATE
    removed = len(rebuilt.removed)
    summary = f"{removed} entr{'y' if removed == 1 else 'ies'} removed, {len(rebuilt.added)} added, {len(after.reached)} reached"
    if rebuilt.replaced:
        summary += f" ({plural(len(rebuilt.replaced), 'entry', 'entries')} now a consolidation's)"
    if not fix_drift:
        summary = f"edited for this run's changes only: {summary}" + _drift_left(after, names)
    if old is None:
        summary = f"created with {len(items)} entries"
    summary = "; ".join(filter(None, (summary, sub_summary)))
    copy = [Op("write", archive_path(folder, run_id, INDEX), data=old, expect=ABSENT)] if old is not None else []
    # built on `old`: a MEMORY.md edited since this read is not replaced
    return copy + [Op("write", index_key, data=data, expect=ABSENT if old is None else sha(old))] + sub_ops, summary, None


def _sound(before: memory_md.Reach, after: memory_md.Reach, was: memory_md.Reach | None, names: set[str], anew: set[str],
           archived: set[str]) -> bool:
    """Whether the edited index reaches what it must: every surviving file, each by one entry line and
    nothing dangling, after a rebuild (`was` None); after the run's own edits, what it reached before
    (`was`, on the files as they are) and the files the run's edits link (`anew`), no archived file,
    and no entry without a file or repeat it did not have."""
    if was is None:
        return set(after.reached) == names and not after.dangling(names) and len(after.entries) == len(set(after.entries))
    had = Counter(was.entries)
    return (set(after.reached) == (set(was.reached) | anew) & names
            and set(after.dangling(names)) <= set(before.dangling(names)) - archived
            and not any(n > max(had[e], 1) for e, n in Counter(after.entries).items()))


def _homes(successors: Mapping[str, str], archived_here: set[str], names: set[str], folder: str) -> dict[str, str]:
    """Each file of the folder this run archives -> the link target of the file of the folder now
    holding its content (`successors`: a merge's survivor, a consolidation's new file), when that
    file stays: where an owner's note on the archived file points instead."""
    homes = {}
    for key, home in successors.items():
        if folder_of(key) == folder and folder_of(home) == folder and _name(key) in archived_here and _name(home) in names:
            homes[_name(key)] = href_of(_name(home))
    return homes


def _drift_left(after: memory_md.Reach, names: set[str]) -> str:
    """What a run that did not rebuild the index left of its drift, for its summary."""
    left = [plural(n, what, whats) for n, what, whats in (
        (len(names - set(after.reached)), "file not indexed", "files not indexed"),
        (len(after.dangling(names)), "entry without a file", "entries without a file"),
    ) if n]
    return f"; left as they were, for rebuild_index: {', '.join(left)}" if left else ""


def _sub_index_texts(corpus: Corpus, index_key: str, read: Callable[[str], str | None]) -> list[str]:
    """The texts of the folder's sub-indexes as they are on disk, in the reader's order."""
    folder = folder_of(index_key)
    keys = [k for k in corpus.extra.get("sub_indexes", {}).get(index_key, []) if folder_of(k) == folder]
    return [text for k in keys if (text := read(_name(k))) is not None]


Group = tuple[list[str], IndexItem]  # a consolidation's members' names, in the plan's order, and its entry
Listing = dict[str, tuple[str, str]]  # `memory_md.listed`: each gone file an index lists -> (title, hook)


def _consolidated(created: dict[str, Created], listings: list[Listing]) -> tuple[dict[str, IndexItem], list[Group]]:
    """(each new file's entry by key; each consolidation's members and entry, for `_replacements`).
    Its hook is made of the members' own hooks (`listings`: what MEMORY.md and its sub-indexes list
    of the gone files, read before any edit), else of its description."""
    made: dict[str, IndexItem] = {}
    groups: list[Group] = []
    for key, c in sorted(created.items()):
        members = [_name(m) for m in c.members]
        found = {m: next(lst[m] for lst in listings if m in lst) for m in members if any(m in lst for lst in listings)}
        parts = [found[m] for m in members if m in found]
        title = _common_title([t for t, _ in parts]) or _display_title(c) or _name(key)[:-3]
        hook = _joined_hooks(parts, members) if parts else shorten(" ".join(c.hook.split()))
        # An index whose lines are shorter shares its room out again, so each member keeps its label.
        fit = (lambda n, parts=parts, members=members: _joined_hooks(parts, members, n)) if parts else None
        made[key] = IndexItem(filename=href_of(_name(key)), title=title, hook=hook, fit=fit)
        groups.append((members, made[key]))
    return made, groups


def _replacements(listed: Listing, groups: list[Group]) -> dict[str, IndexItem]:
    """The member whose entry line becomes the new file's in one index (what it `listed` of the gone
    files) -> that entry: in every index listing a member (MEMORY.md or a sub-index), the first
    member (in the plan's order) it lists, so no index that listed the rule loses it; its other
    members' lines go as any archived file's do."""
    return {first: item for members, item in groups if (first := next((m for m in members if m in listed), None))}


def _display_title(c: Created) -> str:
    """The new file's title as an index shows it: its name, or, when the name is a file-name slug
    (`feedback_claim_ignores_and_git`, as members named by their file names give it), its body's
    first heading, as the author's titles read (`Claim Ignores Git State`)."""
    title = _title(c.title)
    if " " in title or not re.search(r"[-_]", title):
        return title
    body = split_frontmatter_lenient(c.data.decode("utf-8", "replace"))[0].body
    heading = next((h[1] for line in body.splitlines() if (h := memory_md.heading(line)) and h[0] == 1), "")
    return _title(heading) or title


def _common_title(titles: list[str]) -> str:
    """The words every title starts with (`feat/i18n-multilingual` of `feat/i18n-multilingual R1`
    ... `R6`), when there are two titles or more and each has words of its own left."""
    if len(titles) < 2:
        return ""
    words = [_title(t).split() for t in titles]
    common = 0
    while all(len(w) > common + 1 and w[common] == words[0][common] for w in words):
        common += 1
    return " ".join(words[0][:common])


def _joined_hooks(parts: list[tuple[str, str]], members: list[str], total: int = CONSOLIDATED_HOOK_CHARS) -> str:
    """One hook from the members' entries, `label: hook` each, in the members' order: the label is
    what its title says beyond the titles' common words (`R6 — APPROVED, closes epic`), none when
    the title is only the file's name. `total` characters in all, shared out (`_shares`) and
    each cut at a word, its label kept whole while a few words of its hook still fit beside it."""
    common = len(_common_title([t for t, _ in parts]).split())
    names = {n for m in members for n in (m, m.removesuffix(".md"))}
    pieces: list[tuple[str, str]] = []
    for title, hook in parts:
        label = " ".join(_title(title).split()[common:])
        pieces.append(("" if label in names else label, " ".join(hook.split())))
    whole = [f"{label}: {hook}" if label and hook else label or hook for label, hook in pieces]
    shares = _shares([len(w) for w in whole], min(total, CONSOLIDATED_HOOK_CHARS) - 2 * (len(whole) - 1))  # "; " between
    out = []
    for (label, hook), text, share in zip(pieces, whole, shares):
        room = share - len(label) - 2
        out.append(f"{label}: {shorten(hook, room)}" if label and hook and len(text) > share and room >= 12 else shorten(text, share))
    return "; ".join(p for p in out if p)


def _shares(lengths: list[int], total: int) -> list[int]:
    """How many characters each of texts this long gets of `total`: the short ones all they need,
    the rest an equal share of what is left."""
    shares = [0] * len(lengths)
    left, waiting = total, sorted(range(len(lengths)), key=lambda i: lengths[i])
    while waiting:
        i = waiting.pop(0)
        shares[i] = min(lengths[i], left // (len(waiting) + 1))
        left -= shares[i]
    return shares


def consequences(corpus: Corpus, actions: list[Action], settings: Settings, disk: DiskReads | None = None) -> dict[str, list[str]]:
    """What applying `actions` does to each MEMORY.md beyond its entries (hooks shortened, lines
    past what Claude Code loads), in the words the run's notes use: MEMORY.md key -> what. The same
    decisions and the same rebuild as apply, on the files as they are now (a whole rebuild where
    `actions` ask for one, else the run's own edits); nothing is written. `disk`: the reads of
    earlier dry runs of the same plan, shared (each reads the same indexes and sub-indexes)."""
    root = Path(corpus.root)
    by_key = corpus.by_key()
    d = decide(corpus, actions, None, memory_left(corpus), StaleInfo(None))
    cut_in_place = {folder_of(k) for k in d.retire if k in by_key and by_key[k].extra.get("in_index")}
    archived = {k for k in d.retire if folder_of(k) not in cut_in_place}
    archived_in = {folder_of(k) for k in archived}
    folders = archived_in | {folder_of(k) for k in d.created} | {folder_of(k) for k in d.index_actions}
    disk = disk or DiskReads(root, settings.max_file_bytes)
    out: dict[str, list[str]] = {}
    for folder in sorted(folders - cut_in_place):
        index_key = _in_folder(folder, INDEX)
        said = ChangeSet()
        created = {k: c for k, c in d.created.items() if folder_of(k) == folder}
        ops, _, not_written = _rebuild_index(root, corpus, settings, "plan", index_key, archived, said, created, disk,
                                             fix_drift=index_key in d.index_actions, successors=d.successor)
        if not ops and not_written is not None and not not_written.up_to_date and (folder in archived_in or created):
            said.notes.append(not_following(index_key, not_written))  # as the writer's notes say it
        if said.notes:
            # a note on MEMORY.md as the run words it, less its key; one on a sub-index by its name
            out[index_key] = [n.removeprefix(f"{index_key}: ").removeprefix(_in_folder(folder, "")) for n in said.notes]
    return out


@dataclass
class SubIndexEdits:
    ops: list[Op]  # the writes, each after its archived copy
    texts: dict[str, str]  # each edited sub-index's new text by name
    summary: str
    notes: list[str]  # what became of the owner's notes on archived files, by sub-index key: the run's notes
    repointed: set[str]  # the files an owner's note on an archived file now points at


def _edit_sub_indexes(
    root: Path, corpus: Corpus, run_id: str, index_key: str, archived: set[str], archived_here: set[str],
    gone_numbers: memory_md.GoneLeaves, disk: DiskReads, groups: list[Group] | None = None,
    homes: Mapping[str, str] | None = None,
) -> SubIndexEdits:
    """The sub-indexes MEMORY.md reaches that point at files this run archives, with those lines
    gone (`memory_md.strike`: entry and numbered lines removed, inline links struck out, every other
    byte kept; nothing added: Claude Code does not load them). An owner's note on an archived file
    points at its content's new home (`homes`, `_homes`: a file of the folder) as in MEMORY.md, or
    goes with it, quoted in the notes. One apply leaves as it is (`uneditable.index_left`: a
    symlink, a fence never closed) or that cannot be read again is not edited, and the summary says
    so; what the first leaves pointing at archived files the run's notes say too (and the plan:
    `consequences`)."""
    ops: list[Op] = []
    texts: dict[str, str] = {}
    said: list[str] = []
    notes: list[str] = []
    repointed: set[str] = set()
    folder = folder_of(index_key)
    reported = reported_by_reader(corpus)
    for key in corpus.extra.get("sub_indexes", {}).get(index_key, []):
        name = _name(key)
        if key in archived or folder_of(key) != folder:
            continue
        try:
            old = disk.bytes(key)
            if old is None:
                continue
            existing = decode_text(old)
        except Unreadable as exc:
            said.append(f"{name} not edited, cannot read it again: {exc}")
            continue
        parsed = memory_md.parse(existing)
        replace = _replacements(memory_md.listed(parsed, archived_here, gone_numbers), groups or [])
        struck = memory_md.strike(existing, archived_here, gone_numbers, replace, homes, parsed)
        text, removed, replaced = struck.text, struck.removed, struck.replaced
        if not removed and not replaced:
            continue
        left = index_left(corpus, key, reported) or fenced(parsed)
        if left is not None:
            lines = len(removed) + len(replaced)
            pointing = f"{plural(lines, 'line')} still point{'s' if lines == 1 else ''} at archived files"
            said.append(f"{name} not edited, {left.why}: {pointing}")
            # in the run's notes too: with nothing else to write, the summary this goes in is not said
            notes.append(f"{key}: not edited for this run's changes, {left.why}: {pointing}")
            continue
        texts[name] = text
        notes += [f"{key}: {w}" for w in struck.said]
        repointed.update(struck.repointed)
        ops += [Op("write", archive_path(folder, run_id, name), data=old, expect=ABSENT),
                Op("write", key, data=_encode(text, split_bom(old)[0]), expect=sha(old))]  # built on `old`
        what = [f"{plural(len(removed), 'line')} to archived files removed or struck out"] if removed else []
        what += [f"{plural(len(replaced), 'line')} now a consolidation's entry"] if replaced else []
        said.append(f"{name}: {', '.join(what)}")
    return SubIndexEdits(ops, texts, "; ".join(said), notes, repointed)


def _cut_index_memories(
    corpus: Corpus, settings: Settings, run_id: str, index_key: str, keys: list[str], disk: DiskReads
) -> tuple[list[Op] | None, str]:
    """The ops that cut memories kept inside MEMORY.md out of it (its old copy archived first), or
    None and why not. Each memory's lines must still hold what the reader read from them."""
    if (left := index_left(corpus, index_key)) is not None:  # `uneditable.memory_left` keeps such memories out of `decide`'s
        return None, f"not edited, MEMORY.md left untouched: {left.why}"
    try:
        old = disk.bytes(index_key)
    except Unreadable as exc:
        return None, f"not edited, cannot read it again: {exc}"
    if old is None:
        return None, "not edited, it is gone"
    text, bom = _decode(old)
    pieces = line_pieces(text)  # the lines the reader numbered (memory_md.chunks), each with its own ending
    lines = [line for line, _ in pieces]
    by_key = corpus.by_key()
    drop: set[int] = set()
    for key in keys:
        start, end = by_key[key].extra["lines"]
        if "\n".join(lines[start:end]).strip("\n") != by_key[key].body:
            return None, f"not edited, {_name(key)} no longer holds what was read"
        drop.update(range(start, end))
        # A paragraph between two blank lines leaves one of them, not both.
        if start > 0 and end < len(lines) and not lines[start - 1].strip() and not lines[end].strip():
            drop.add(end)
    # Each kept line keeps its own ending (a file with mixed endings keeps every one of them).
    new = join_pieces(pieces[n] for n in range(len(pieces)) if n not in drop)
    folder = folder_of(index_key)
    copy = Op("write", archive_path(folder, run_id, INDEX), data=old, expect=ABSENT)
    return [copy, Op("write", index_key, data=_encode(new, bom), expect=sha(old))], ""


def _sibling_reader(root: Path, folder: str, settings: Settings, disk: DiskReads | None) -> Callable[[str], str | None]:
    """How the rebuild looks inside a sibling for further links (sub-indexes), as the reader does."""
    reads = disk or DiskReads(root, settings.max_file_bytes)

    def read(name: str) -> str | None:
        try:
            data = reads.bytes(_in_folder(folder, name))
            return None if data is None else decode_text(data)
        except Unreadable:
            return None

    return read
