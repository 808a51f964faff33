"""Apply for banks (iii semantics): append-only revisions, never a rewrite of history.

A retired duplicate gets a new revision with `superseded_by`; the survivor gets a new revision with
the retired records' corroboration added (it absorbs their observations). A record that is already
retired is never superseded twice, and a pinned record is never superseded. An in-place text edit
(`absolutize_dates`, `update_ref`: `edits.py`) is a new revision carrying the replaced text. Learned rules are
appended to `<bank>/rules/learned.md`, fingerprint-deduplicated; hand-written rule files are never
touched.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from ...kinds import ActionKind
from ...changes import ChangeSet
from ...config import Settings
from ...journal import ABSENT, Op, sha
from ...actions import PromoteRuleAction
from ...model import Action, Corpus
from ...report import render_run_report
from ...rules.text import normalize
from .reader import LEARNED_RULES, parse_records, read_bank_bytes, read_learned, record_sha
from ...storage.files import Unreadable, read_bytes
from ...storage.since_plan import changed_since_plan
from ...storage.text_edits import TEXT_EDIT_KINDS, Fields
from .edits import text_edit

LEARNED_HEADER = "# Learned rules\n\nAuto-managed by memconsolidate: one line per rule, append-only.\n\n"
RULE_MIN, RULE_MAX = 3, 300


def rule_fingerprint(rule: str) -> str:
    return hashlib.sha256(normalize(rule).encode()).hexdigest()[:16]


class _Bank:
    """Pending revisions of one bank, applied in order and appended in one write."""

    def __init__(self, root: Path, name: str, settings: Settings, corpus: Corpus) -> None:
        self.name = name
        self.rel = f"{name}/memories.jsonl"
        self.path = root / self.rel
        # One read: the revisions are decided on these records and appended to these bytes.
        self.data = read_bank_bytes(root, root / name, settings, corpus)
        self.records = {} if self.data is None else parse_records(self.rel, self.data, corpus)
        self.pending: dict[str, dict[str, Any]] = {}
        self.stamp = f"{settings.now.isoformat()}T00:00:00Z"

    def current(self, rid: str) -> dict[str, Any] | None:
        return self.pending.get(rid) or self.records.get(rid)

    def revise(self, rid: str, **changes: Any) -> None:
        rec = dict(self.current(rid) or {})
        rev = rec["revision"] if isinstance(rec.get("revision"), int) else 0
        if rid not in self.pending:
            rev += 1
        rec.update(changes, revision=rev, updated_at=self.stamp)
        self.pending[rid] = rec

    def live(self, rid: str) -> bool:
        rec = self.current(rid)
        return rec is not None and not rec.get("superseded_by") and not rec.get("invalid_at")

    def op(self) -> Op | None:
        if not self.pending or self.data is None:
            return None
        data = self.data
        read = sha(data)  # the journal refuses the append if a line is appended after this read
        lines = [json.dumps(self.pending[rid], ensure_ascii=False) for rid in sorted(self.pending)]
        # Appended in place, never rewritten and renamed: an agent holding the file open to append
        # its memories keeps writing to the file everyone reads.
        return Op("append", self.rel, data=_after(data, lines), expect=read)


def _split(key: str) -> tuple[str, str]:
    bank, _, rid = key.partition("/")
    return bank, rid


def changes(corpus: Corpus, actions: list[Action], settings: Settings, run_id: str, resolve: str | None) -> ChangeSet:
    root = Path(corpus.root)
    out = ChangeSet()
    banks: dict[str, _Bank] = {}
    learned: dict[str, list[str]] = {}
    learned_by: dict[str, list[Action]] = {}  # the promote_rule actions each bank's rules file takes
    text_edits: dict[str, Fields] = {}  # record key -> every replacement put in this run

    def bank(name: str) -> _Bank:
        if name not in banks:
            banks[name] = _Bank(root, name, settings, corpus)
        return banks[name]

    def record_state(key: str) -> str | None:
        name, rid = _split(key)
        rec = bank(name).records.get(rid)  # as read by this run, before its own revisions
        return record_sha(rec) if rec is not None else None

    for action in actions:
        changed = changed_since_plan(action, record_state)
        if changed:
            out.skipped.append((action, changed))
        elif action.kind == ActionKind.MERGE_DUPLICATE and action.survivor:
            name, survivor = _split(action.survivor)
            b = bank(name)
            retired = [_split(t)[1] for t in action.targets if t != action.survivor]
            if not b.live(survivor):
                out.skipped.append((action, f"survivor {action.survivor} is no longer live"))
                continue
            absorbed = 0
            for rid in retired:
                rec = b.current(rid)
                if rec is None or not b.live(rid):
                    out.notes.append(f"{name}/{rid} already retired: not superseded twice")
                    continue
                if rec.get("pinned") is True:
                    out.notes.append(f"{name}/{rid} is pinned: never superseded")
                    continue
                b.revise(rid, superseded_by=survivor)
                c = rec.get("corroboration")
                absorbed += c if isinstance(c, int) and not isinstance(c, bool) and c > 0 else 1
            if absorbed:
                c = b.current(survivor).get("corroboration")  # type: ignore[union-attr]
                base = c if isinstance(c, int) and not isinstance(c, bool) else 0
                b.revise(survivor, corroboration=base + absorbed)
                out.applied.append(action)
        elif action.kind == ActionKind.PRUNE_STALE:
            pruned = 0
            for key in action.targets:
                name, rid = _split(key)
                b = bank(name)
                if b.live(rid) and b.current(rid).get("pinned") is not True:  # type: ignore[union-attr]
                    b.revise(rid, invalid_at=b.stamp)
                    pruned += 1
            if pruned:
                out.applied.append(action)
            else:  # reporting it applied would claim a change the run never made
                out.skipped.append((action, "every target is pinned or already retired"))
        elif action.kind == ActionKind.PROMOTE_RULE:
            rule = action.rule if isinstance(action, PromoteRuleAction) else None
            if not isinstance(rule, str) or not RULE_MIN <= len(rule.strip()) <= RULE_MAX or "\n" in rule.strip():
                out.skipped.append((action, "no one-line rule text (3–300 characters) from the rules stage"))
                continue
            name, rid = _split(action.targets[0])
            learned.setdefault(name, []).append(f"{rule.strip()}\t{rid}")
            learned_by.setdefault(name, []).append(action)
        elif action.kind == ActionKind.CONFLICT and resolve:
            _resolve_conflict(action, resolve, bank, out)
        elif action.kind in TEXT_EDIT_KINDS:
            text_edit(action, bank, text_edits, out)
        else:
            out.skipped.append((action, f"{action.kind} does not apply to banks"))

    for name in sorted(banks):
        op = banks[name].op()
        if op:
            out.ops.append(op)
    for name in sorted(learned):
        try:
            op = _learned_op(root, name, learned[name], settings, corpus)
        except Unreadable as exc:
            out.skipped.extend((a, f"{name}/rules/{LEARNED_RULES} is not a rules file of ours ({exc})") for a in learned_by[name])
            continue
        out.applied.extend(learned_by[name])
        if op:
            out.ops.append(op)
    if out.ops:
        out.ops.append(
            Op("write", f".memconsolidate/reports/{run_id}.md", data=render_run_report("bank", run_id, settings.now, out).encode())
        )
    return out


def _resolve_conflict(action: Action, resolve: str, bank, out: ChangeSet) -> None:
    (name_a, a), (name_b, b_id) = (_split(t) for t in action.targets[:2])
    if name_a != name_b:
        out.skipped.append((action, "conflict across banks"))
        return
    b = bank(name_a)
    if not (b.live(a) and b.live(b_id)):
        out.skipped.append((action, "one side is no longer live"))
        return
    if resolve == "keep-both":
        b.revise(a, conflicts_with=sorted({*(b.current(a).get("conflicts_with") or []), b_id}))
        b.revise(b_id, conflicts_with=sorted({*(b.current(b_id).get("conflicts_with") or []), a}))
    else:
        ra, rb = b.current(a), b.current(b_id)
        older, newer = (a, b_id) if str(ra.get("updated_at") or ra.get("created_at")) <= str(rb.get("updated_at") or rb.get("created_at")) else (b_id, a)
        if b.current(older).get("pinned") is True:
            out.skipped.append((action, f"{name_a}/{older} is pinned"))
            return
        b.revise(older, superseded_by=newer)
    out.applied.append(action)


def _learned_op(root: Path, name: str, rules: list[str], settings: Settings, corpus: Corpus) -> Op | None:
    path = root / name / "rules" / LEARNED_RULES
    present = path.exists() or path.is_symlink()
    # Read as the reader reads it (Unreadable: a symlink out of the store or into its state folder
    # is no rules file of ours, and nothing is appended through it).
    existing = read_bytes(root, path, settings.max_file_bytes) if present else LEARNED_HEADER.encode()
    read = sha(existing) if present else ABSENT  # never replace rules written since this read
    seen = set(read_learned(root, root / name, settings, corpus)["fingerprints"])
    lines = []
    for item in rules:
        rule, _, rid = item.partition("\t")
        fp = rule_fingerprint(rule)
        if fp in seen:
            continue
        seen.add(fp)
        lines.append(f"- {rule} <!-- mc:fp={fp} src={rid} -->")
    if not lines:
        return None
    key = path.relative_to(root).as_posix()
    if read == ABSENT:
        return Op("write", key, data=existing + _after(existing, lines), expect=read)
    return Op("append", key, data=_after(existing, lines), expect=read)  # append-only, like the bank


def _after(existing: bytes, lines: list[str]) -> bytes:
    """The bytes that put `lines` after `existing`, on a line of their own."""
    eol = b"\n" if existing and not existing.endswith(b"\n") else b""
    return eol + ("\n".join(lines) + "\n").encode()
