"""Staleness (seed 001, STEP 2, 2.5): are the files and symbols a memory names still there?

Classes, per memory (dream's table made exact):

- EVERGREEN: no verifiable file ref — none at all, or every one UNVERIFIABLE (outside the
  repository, see `refs.scope`). Symbols alone never make a memory verifiable: a symbol has no
  location, and a memory anchored to no file of this repository may well describe another codebase.
  Also EVERGREEN: a claude memory without front matter (dream: "cannot verify refs without
  metadata"), and any memory with no repository to check against.
- FRESH: every verifiable file ref exists and every symbol is found.
- FULLY_STALE: every verifiable file ref is missing and every symbol is missing too (a memory with
  no symbols qualifies on its files alone). One surviving file or symbol means the code moved, not
  vanished: PARTIALLY_STALE. So does a missing file whose last name (its own, or the last of a
  chain of renames ending in a deletion) one other file bears today (`staleness_refs.SAME_NAME`):
  it counts as missing, but whether it is the same file is the user's call, not an automatic
  prune's.
- PARTIALLY_STALE: anything in between — some file ref missing, or all files present but a symbol
  missing, or (when a scan cap was hit) refs that could not be checked.

FULLY_STALE memories then pass the prune guards (`prune_guards`) and the consult-gate
(`consult_gate`); each one that holds downgrades to PARTIALLY_STALE with a `kept_reason`. What stays
FULLY_STALE becomes a `prune_stale` action (archived by apply, never deleted).

Everything here is pure: the repositories, their history and the consult logs come in as a
`StalenessContext`, read once by the plan (`pipeline/evidence/context.py`).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from ..text.counts import plural
from ..kinds import StaleClass
from ..config import Settings
from ..actions import PruneStaleAction, StaleFinding
from ..model import Corpus, Memory
from .consult_gate import consult_match, consulted_terms
from .outcome import Outcome
from .prune_guards import guard_reason
from .refs import REPO_RELATIVE, Refs, extract_refs, scope
from .repo_index import RepoIndex
from .staleness_history import GitHistory
from .staleness_refs import (
    MOVED,
    NEVER,
    PRESENT,
    SAME_NAME,
    SameName,
    names_other_project,
    ref_leads,
    ref_status,
    same_name_action,
    update_ref_action,
)
from .staleness_context import StalenessContext, consult_log_of, repo_of

EVERGREEN = StaleClass.EVERGREEN
FRESH = StaleClass.FRESH
PARTIALLY_STALE = StaleClass.PARTIALLY_STALE
FULLY_STALE = StaleClass.FULLY_STALE


@dataclass(frozen=True)
class Assessment:
    cls: str
    reason: str
    missing: tuple[str, ...] = ()  # missing file refs, then missing symbols
    unverifiable: tuple[str, ...] = ()
    kept_reason: str | None = None
    moved: tuple[tuple[str, str], ...] = ()  # (ref as written, where git's renames took it)
    same_name: tuple[SameName, ...] = ()  # missing refs the one file of their name elsewhere may be


def _describe(items: list[str] | tuple[str, ...], limit: int = 5) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def memory_refs(m: Memory) -> Refs:
    return extract_refs(f"{m.description}\n{m.body}" if m.description else m.body)


def _split_scope(refs: Refs, index: RepoIndex, foreign: str | None) -> tuple[list[str], list[str], str]:
    """(verifiable, unverifiable, why none is verifiable): in a memory about another project, no
    relative path or bare name is anchored here."""
    verifiable: list[str] = []
    external: list[str] = []
    for ref in refs.files:
        (verifiable if scope(ref, index.top_dirs)[0] == REPO_RELATIVE else external).append(ref)
    if foreign and verifiable:
        return [], external + verifiable, f"the memory {foreign}"
    return verifiable, external, "no verifiable file refs"


def classify(refs: Refs, index: RepoIndex | None, history: GitHistory | None = None, foreign: str | None = None) -> Assessment:
    """The staleness class of one memory's refs against one repository index (and its git history)."""
    if index is None:
        return Assessment(EVERGREEN, "no repository to check against (pass --repo)")
    verifiable, external, why = _split_scope(refs, index, foreign)
    missing_files: list[str] = []
    notes: dict[str, str] = {}  # missing ref -> what history or today's tree says of it
    moved: list[tuple[str, str]] = []
    same_name: list[SameName] = []
    for ref in verifiable:
        verdict, where, renamed = ref_status(ref, index, history)
        if verdict == PRESENT:
            continue
        if verdict == NEVER:
            external.append(ref)
        elif verdict == MOVED:
            moved.append((ref, where))
        else:
            missing_files.append(ref)
            if verdict == SAME_NAME:
                hint = SameName(ref, where, renamed)
                same_name.append(hint)
                notes[ref] = f"{hint.fate()}; {hint.lead()}" if renamed else hint.lead()
            elif where:
                notes[ref] = f"renamed to {where}, since deleted"
    checked = [r for r in verifiable if r not in external]
    unverifiable = tuple(external)
    if not checked:
        note = f"; {len(external)} unverifiable: {_describe(external)}" if external else ""
        return Assessment(EVERGREEN, why + note, unverifiable=unverifiable)
    missing_symbols = [s for s in refs.symbols if not index.has_symbol(s)]
    missing = tuple(missing_files + missing_symbols)
    shown = _describe([f"{r} ({notes[r]})" if r in notes else r for r in missing_files] + [f"symbol {s}" for s in missing_symbols])
    moved_t, same_t = tuple(moved), tuple(same_name)
    if not index.complete and missing:
        return Assessment(
            PARTIALLY_STALE,
            f"not found, but the repository scan hit a size cap so this proves nothing: {shown}",
            missing,
            unverifiable,
            moved=moved_t,
            same_name=same_t,
        )
    if moved:
        where = _describe([f"{a} -> {b}" for a, b in moved])
        extra = f"; missing: {shown}" if missing else ""
        return Assessment(PARTIALLY_STALE, f"moved: {where}{extra}", missing, unverifiable, moved=moved_t, same_name=same_t)
    if not missing:
        return Assessment(
            FRESH, f"found: {plural(len(checked), 'file ref')} and {plural(len(refs.symbols), 'symbol')}", (), unverifiable
        )
    if len(missing_files) == len(checked) and len(missing_symbols) == len(refs.symbols):
        if same_name:
            kept = "a file of the same name exists elsewhere; whether it is the same file is the user's call"
            return Assessment(
                PARTIALLY_STALE, f"every verifiable ref is missing: {shown}; kept: {kept}", missing, unverifiable, kept, same_name=same_t
            )
        return Assessment(FULLY_STALE, f"every verifiable ref is missing: {shown}", missing, unverifiable)
    return Assessment(PARTIALLY_STALE, f"missing: {shown}", missing, unverifiable, moved=moved_t, same_name=same_t)


def assess(
    m: Memory, index: RepoIndex | None, history: GitHistory | None = None, evergreen_without_frontmatter: bool = False
) -> Assessment:
    """`evergreen_without_frontmatter`: the layout's rule (claude's: refs cannot be tied to metadata)."""
    if not m.has_frontmatter and evergreen_without_frontmatter:
        return Assessment(EVERGREEN, "no front matter: treated as EVERGREEN (refs cannot be tied to metadata)")
    text = f"{m.description}\n{m.body}"
    foreign = names_other_project(text, index.root if index else None)
    return classify(memory_refs(m), index, history, foreign)


def keep_anyway(m: Memory, settings: Settings, terms: dict[str, dt.date]) -> str | None:
    """Why a FULLY_STALE memory is kept: a prune guard, then the consult-gate; None to prune."""
    guard = guard_reason(m, settings.now, settings.claude.prune_guard_days)
    if guard:
        return f"prune-guard: {guard}"
    hit = consult_match(m, terms)
    if hit:
        term, day = hit
        return f"consult-gate: looked up as {term!r} on {day.isoformat()} (within {settings.claude.consult_window_days}d)"
    return None


def stale_outcome(
    memories: list[Memory], ctx: StalenessContext, settings: Settings, evergreen_without_frontmatter: bool = False
) -> Outcome:
    """The pure rule: one `stale` finding per memory, a `prune_stale` action per prunable one."""
    out = Outcome(findings=list(ctx.findings))
    window = settings.claude.consult_window_days
    terms_by_log = {log: consulted_terms(entries, settings.now, window) for log, entries in sorted(ctx.consult.items())}
    for m in sorted(memories, key=lambda m: m.key):
        repo = repo_of(m, settings)
        history = ctx.history.get(repo) if repo else None
        a = assess(m, ctx.repos.get(repo) if repo else None, history, evergreen_without_frontmatter)
        if a.cls == FULLY_STALE:
            log = consult_log_of(m, settings)
            kept = keep_anyway(m, settings, terms_by_log.get(log, {}) if log else {})
            if kept:
                a = Assessment(PARTIALLY_STALE, f"{a.reason}; kept: {kept}", a.missing, a.unverifiable, kept)
        extra: dict[str, Any] = {"class": a.cls}
        if a.missing:
            extra["missing"] = list(a.missing)
        if a.unverifiable:
            extra["unverifiable"] = list(a.unverifiable)
        if a.kept_reason:
            extra["kept_reason"] = a.kept_reason
        extra.update(ref_leads(a.moved, a.same_name))
        out.findings.append(StaleFinding(targets=[m.key], reason=a.reason, **extra))
        for update in (update_ref_action(m, a.moved) if a.moved else None, same_name_action(m, a.same_name) if a.same_name else None):
            if update is not None:
                out.actions.append(update)
        if a.cls == FULLY_STALE:
            out.actions.append(prune_action(m, a, history))
    return out


def prune_action(m: Memory, a: Assessment, history: GitHistory | None) -> PruneStaleAction:
    """Only git history proves the files were deleted; without it the user decides."""
    if history is None:
        return PruneStaleAction(
            targets=[m.key],
            reason=f"fully stale, {a.reason}",
            needs_user=True,
            needs_user_reason="no git history to tell a deleted file from one that was never in this repository",
            missing=list(a.missing),
        )
    return PruneStaleAction(targets=[m.key], reason=f"fully stale, {a.reason}", missing=list(a.missing))


def staleness(corpus: Corpus, settings: Settings, ctx: StalenessContext, evergreen_without_frontmatter: bool) -> Outcome:
    # A memory whose store names no repository (the reader says why, in a finding) is not judged.
    memories = [m for m in corpus.memories if not m.extra.get("staleness_skipped")]
    return stale_outcome(memories, ctx, settings, evergreen_without_frontmatter)
