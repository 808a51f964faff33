"""`absolutize_dates`: relative dates in memory text made absolute against the memory's own date (issue 15).

A pure rule over typed memories, for every layout. The memory's own date is what its metadata says
it was written: front matter `created` / `modified` / `date` (crux, claude), a bank record's
`created_at` / `updated_at`, a zylos entry's date or its session log's date, a tier file's
"Last updated" line. From that:

- one date known (or created and modified agree): an automatic in-place edit (`needs_user` false,
  pinned memories excepted), one action per memory carrying every replacement, before -> after;
- created and modified disagree: the phrase may have been written on either day, so a finding
  (`class` ambiguous_date) with the replacements read against `created` as a suggestion;
- only a file mtime (its UTC date, so every machine agrees): a finding (`mtime_only`) with the
  replacements read against it; no date at all: a finding (`no_date`);
- the live zylos session log (`sessions/current.md`, only ever appended to): a finding
  (`append_only`);
- vague phrases ("recently", "soon"; not the present-tense ones, see QUIET_VAGUE): a finding
  (`vague`); phrases recognised but deliberately
  kept ("last week's outage", "this Friday"): a finding (`not_replaced`).

Offsets in a replacement are character offsets into the field it names, as the reader decoded it
(`body` is the text after the front matter; `twin_body` the uncompressed crux twin's body), so a
writer applies them with `relative_dates.apply_replacements` and re-encodes, keeping every other
byte. `rules.run_rules` runs it for every layout; the writers apply the action through
`storage/text_edits.py` (the same path as `update_ref`).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Iterable

from ..kinds import ActionKind, FindingKind
from ..actions import AbsolutizeDatesAction, RelativeDateFinding
from ..model import Memory
from .outcome import Outcome
from .relative_dates.prefilter import texts_might_have_dates
from ..storage.files import mtime_date

if TYPE_CHECKING:
    from .relative_dates import DateScan, Mention, Replacement

ACTION_KIND = ActionKind.ABSOLUTIZE_DATES
FINDING_KIND = FindingKind.RELATIVE_DATE
# Vague words about the present ("now", "currently", "today" meaning currently) are in most memories
# that describe a state (65 "now" in 394 real memories): the scan reports them, the plan does not.
# The ones that point at an unknown moment ("recently", "soon", "a while ago") are findings.
QUIET_VAGUE = frozenset({"now", "currently", "nowadays", "these days", "earlier", "today", "today's", "today’s"})


@dataclass(frozen=True)
class OwnDate:
    when: dt.date | None
    source: str  # "created", "modified", "created+modified", "ambiguous", "mtime", "none"
    other: dt.date | None = None  # the modified date, when it disagrees with created


def own_date(memory: Memory) -> OwnDate:
    """The day the memory's text was written, and where that came from."""
    created, modified = memory.created, memory.modified
    if created and modified:
        if created == modified:
            return OwnDate(created, "created+modified")
        return OwnDate(created, "ambiguous", modified)
    if created or modified:
        return OwnDate(created or modified, "created" if created else "modified")
    if memory.mtime is not None:
        try:
            return OwnDate(mtime_date(memory.mtime), "mtime")
        except (OverflowError, OSError, ValueError):
            pass
    return OwnDate(None, "none")


def field_texts(memory: Memory) -> list[tuple[str, str]]:
    """(field, text) pairs worth scanning: description and body, and a crux memory's uncompressed
    twin so the two keep saying the same. A zylos reference file is left to its entries."""
    return [(field, text) for _, field, text in _scanned_texts([memory])]


def _scanned_texts(memories: list[Memory]) -> Iterator[tuple[int, str, str]]:
    """`field_texts` of each memory, as (its place, field, text): one generator for a whole store."""
    for place, memory in enumerate(memories):
        if memory.extra.get("entries") is not None:
            # a file read as entries (zylos reference files): each entry is scanned with its own date,
            # and one with none (none read: an unclosed fence) is not a text to edit as a whole
            continue
        if memory.description:
            yield place, "description", memory.description
        if memory.body:
            yield place, "body", memory.body
        twin = memory.extra.get("twin_body")
        if isinstance(twin, str) and twin:
            yield place, "twin_body", twin


def _edit(field: str, r: Replacement) -> dict[str, Any]:
    return {"field": field, "start": r.start, "end": r.end, "before": r.phrase, "after": r.replacement}


def _mention(field: str, m: Mention) -> dict[str, Any]:
    return {"field": field, "start": m.start, "end": m.end, "phrase": m.phrase, "why": m.why}


def _shown(edits: list[dict[str, Any]]) -> str:
    # Each replacement, before -> after, is listed by the report from `replacements` (one a line).
    return f"{len(edits)} replacement{'s' if len(edits) != 1 else ''}"


def _quoted(mentions: list[dict[str, Any]]) -> str:
    return ", ".join(f"“{p}”" for p in dict.fromkeys(m["phrase"] for m in mentions))


def _append_only(memory: Memory) -> bool:
    # A file its reader marks append-only (zylos' sessions/current.md): rotated, never rewritten.
    return memory.extra.get("append_only") is True


def memory_outcome(memory: Memory) -> Outcome:
    """The action and findings for one memory."""
    out = Outcome()
    fields = field_texts(memory)
    if not fields:
        return out
    from .relative_dates import scan_relative_dates  # its patterns compiled only once a text needs them

    date = own_date(memory)
    scans: list[tuple[str, DateScan]] = [(f, scan_relative_dates(t, date.when)) for f, t in fields]
    edits = [_edit(f, r) for f, s in scans for r in s.replacements]
    vague = [_mention(f, v) for f, s in scans for v in s.vague if " ".join(v.phrase.lower().split()) not in QUIET_VAGUE]
    held = [_mention(f, h) for f, s in scans for h in s.held if h.why != "no date"]
    undated = [_mention(f, h) for f, s in scans for h in s.held if h.why == "no date"]
    key = [memory.key]
    if edits and _append_only(memory):
        out.findings.append(RelativeDateFinding(
            targets=key, class_="append_only", written=str(date.when), replacements=edits,
            reason=f"the live session log is only appended to, never edited in place: {_shown(edits)}",
        ))
    elif edits and date.source in ("created", "modified", "created+modified"):
        pinned = " (pinned: confirm first)" if memory.pinned else ""
        out.actions.append(AbsolutizeDatesAction(
            targets=key, needs_user=memory.pinned,
            reason=f"relative dates made absolute against its {date.source} date {date.when}{pinned}: {_shown(edits)}",
            written=date.when.isoformat() if date.when else None, date_source=date.source, replacements=edits,
        ))
    elif edits and date.source == "ambiguous":
        out.findings.append(RelativeDateFinding(
            targets=key, class_="ambiguous_date", written=str(date.when), replacements=edits,
            reason=f"created {date.when} but modified {date.other}: the phrase may date from either; "
            f"read against created: {_shown(edits)}",
        ))
    elif edits:  # mtime only
        out.findings.append(RelativeDateFinding(
            targets=key, class_="mtime_only", written=str(date.when), replacements=edits,
            reason=f"only the file's mtime ({date.when}) dates it; read against it: {_shown(edits)}",
        ))
    if undated:
        out.findings.append(RelativeDateFinding(
            targets=key, class_="no_date", phrases=undated,
            reason=f"relative dates with nothing to resolve them against: {_quoted(undated)}",
        ))
    if vague:
        out.findings.append(RelativeDateFinding(
            targets=key, class_="vague", phrases=vague,
            reason=f"vague time phrases that will mislead as the memory ages: {_quoted(vague)}",
        ))
    if held:
        out.findings.append(RelativeDateFinding(
            targets=key, class_="not_replaced", phrases=held,
            reason=f"relative dates left as written (no safe rewrite): {_quoted(held)}",
        ))
    return out


def absolutize_dates(memories: Iterable[Memory]) -> Outcome:
    """One `absolutize_dates` action per memory with automatic edits, and the findings."""
    memories = list(memories)
    out = Outcome()
    for place in _worth_scanning(memories):
        out.extend(memory_outcome(memories[place]))
    return out


def _worth_scanning(memories: list[Memory]) -> list[int]:
    """The places of the memories a field text of which passes the scan's own prefilter, in order:
    most memories of a big store hold no time phrase, and for them neither the memory's date nor an
    outcome needs building. The prefilter runs over all their texts at once."""
    owners: list[int] = []
    texts: list[str] = []
    for place, _, text in _scanned_texts(memories):
        owners.append(place)
        texts.append(text)
    return sorted({owners[i] for i in texts_might_have_dates(texts)})
