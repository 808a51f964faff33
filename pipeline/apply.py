"""Execute a plan: choose the actions, let the layout's writer turn them into file operations, and
run those as one journaled transaction (`journal.py`). Nothing is deleted: retired memories move to
an archive or get `superseded_by`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Literal

from .kinds import ActionKind, is_automatic
from .changes import ChangeSet
from .config import Settings
from .errors import UsageError
from .journal import Op, RunFailed, RunRecord, execute, new_run_id, unsafe_reason
from .journal_check import path_problem
from .layouts.base import REPORTS_DIR, Layout
from .layouts.registry import layout_of
from .actions import FINGERPRINT_LENGTH, WholeRead
from .model import Action, Corpus, Plan, file_of
from .printable import printable
from .storage.files import Unreadable
from .storage.since_plan import recent_reads
from .text.counts import plural

Resolution = Literal["newer", "keep-both"]
FileBytes = Callable[[str], bytes | None]  # a store file's bytes as they are now (None: absent)


@dataclass
class ApplyResult:
    run_id: str
    record: RunRecord | None
    changes: ChangeSet


_KIND_NAMES = [k.value for k in ActionKind]


@dataclass
class Selection:
    """What `--select` names: action numbers, those given with the fingerprint the plan printed
    beside them (`3=3a7527dc`: `pinned`), and action kinds."""

    numbers: set[int] = field(default_factory=set)
    pinned: dict[int, str] = field(default_factory=dict)
    kinds: set[str] = field(default_factory=set)


def parse_select(select: list[str] | None, resolve: Resolution | None, unattended: bool = False) -> Selection:
    """The numbers and kinds `--select` names, checked before anything is planned: an unknown kind,
    or conflicts without a resolution policy, is a usage error naming the choices. `unattended`
    (`--yes`, a fleet): a number must come with its fingerprint, since apply plans again and,
    once the store, the date or a model's reply changed, the number may be another action's."""
    chosen = Selection()
    for item in select or []:
        for part in (p.strip() for p in item.split(",")):
            if not part:
                continue
            number, pinned, code = part.partition("=")
            is_number = number.isascii() and number.isdigit()  # "²".isdigit() too, which int() refuses
            if is_number and not pinned:
                if unattended:
                    raise UsageError(f"--select {part} with --yes: give the number with the fingerprint the plan printed beside it "
                                     f"({part}=FINGERPRINT), so that a plan changed since is refused instead of applying another action")
                chosen.numbers.add(int(number))
            elif is_number and _is_fingerprint(code):
                n, code = int(number), code.lower()
                if chosen.pinned.get(n, code) != code:  # one of them is wrong: neither may win quietly
                    raise UsageError(f"--select {n}: given with two fingerprints, {chosen.pinned[n]} and {code}; "
                                     "give the one the plan printed beside it")
                chosen.numbers.add(n)
                chosen.pinned[n] = code
            elif part in _KIND_NAMES:
                chosen.kinds.add(part)
            elif pinned:
                raise UsageError(f"--select {part}: an action's number and the fingerprint the plan printed beside it, "
                                 f"NUMBER=FINGERPRINT ({FINGERPRINT_LENGTH} hex digits)")
            else:
                raise UsageError(f"--select {part}: not an action number or kind (kinds: {', '.join(_KIND_NAMES)})")
    if ActionKind.CONFLICT in chosen.kinds and resolve is None:
        raise UsageError("--select conflict: conflicts are applied only with --resolve newer or --resolve keep-both")
    return chosen


def _is_fingerprint(code: str) -> bool:
    return len(code) == FINGERPRINT_LENGTH and all(c in "0123456789abcdef" for c in code.lower())


def select_actions(plan: Plan, select: list[str] | None, resolve: Resolution | None) -> list[Action]:
    """Actions to execute: every automatic one, or those chosen by kind or 1-based number.

    Conflicts are executed only under an explicit resolution policy; other actions that need the
    user only when chosen explicitly with --select. A number given with a fingerprint that is no
    longer its action's is refused before anything is applied.
    """
    wanted = parse_select(select, resolve)
    _refuse_changed_since_printed(plan, wanted.pinned)
    in_plan = sorted({a.kind for a in plan.actions})
    for n in sorted(wanted.numbers):
        if not 1 <= n <= len(plan.actions):
            choices = f"1-{len(plan.actions)}" if plan.actions else "none"
            raise UsageError(f"--select {n}: the plan has {len(plan.actions)} actions (numbers: {choices}; kinds: {', '.join(in_plan) or 'none'})")
        if plan.actions[n - 1].kind == ActionKind.CONFLICT and resolve is None:
            raise UsageError(f"--select {n}: action {n} is a conflict, applied only with --resolve newer or --resolve keep-both")
    chosen: list[Action] = []
    for n, action in enumerate(plan.actions, start=1):
        explicit = n in wanted.numbers or action.kind in wanted.kinds
        if select and not explicit:
            continue
        if not is_automatic(action.kind):
            if resolve is not None:
                chosen.append(action)
        elif not action.needs_user or explicit:
            chosen.append(action)
    return chosen


# How many lines the agent may have appended to a log between the plan and a pinned apply of its
# rotation. The pin names the bytes the plan read only by a 32-bit code (their length is in the
# plan, not in the pin), so apply tries the reads that end on each of the log's last lines, each a
# 1 in 2**32 chance of taking another read (an edited log) for the one reviewed: bounded, the
# chance is at most about 2,000 in 2**32 (1 in 2 million) whatever the log's size, and the work a
# few thousand hashes. A day of a zylos agent's log is tens of lines; more, and the pin is refused
# as changed (the next plan, or a plain `apply`, rotates the log with all of them).
PINNED_LINES_APPENDED = 1000


def as_reviewed(plan: Plan, select: list[str] | None, resolve: Resolution | None, read: FileBytes) -> Plan:
    """The fresh plan with, at each number pinned to a fingerprint its action no longer has, the
    action as the user reviewed it when the only change since is whole lines appended to the file
    that action takes whole (`Action.takes_appended_lines`: the live session log a rotation moves,
    which its agent appends to all day). Found by the fingerprint itself: the one read of the file
    as it is now (`read`), a prefix followed by at most `PINNED_LINES_APPENDED` whole lines, that
    gives the action the pinned code (a code covers the read's length and sha256). Any other change
    (a byte of those edited, the file cut shorter, the action going elsewhere) finds none, and the
    plan stays as it is, for `_refuse_changed_since_printed` to refuse."""
    actions = list(plan.actions)
    for n, code in sorted(parse_select(select, resolve).pinned.items()):
        if 1 <= n <= len(actions) and actions[n - 1].fingerprint() != code:
            actions[n - 1] = _reviewed(actions[n - 1], code, read) or actions[n - 1]
    if all(a is b for a, b in zip(actions, plan.actions)):
        return plan
    return plan.model_copy(update={"actions": actions})


def _reviewed(action: Action, code: str, read: FileBytes) -> Action | None:
    """`action` judged on an earlier state of the file it takes whole, the one whose fingerprint is
    `code`, or None."""
    now = action.takes_appended_lines()
    if now is None:
        return None
    try:
        data = read(now.key)
    except Unreadable:
        return None
    if data is None:
        return None
    for length, sha in recent_reads(data, PINNED_LINES_APPENDED):
        reviewed = action.as_read(WholeRead(now.key, sha, length))
        if reviewed.fingerprint() == code:
            return reviewed
    return None


def _refuse_changed_since_printed(plan: Plan, pinned: dict[int, str]) -> None:
    """The plan apply made afresh must hold, at each pinned number, the action whose fingerprint the
    user gave: else the store, the date or a model's reply changed since the plan the user read,
    and the number now names another action (or none). One line, naming the first such number."""
    if not pinned:
        return
    codes = [a.fingerprint() for a in plan.actions]
    changed = [(n, code) for n, code in sorted(pinned.items()) if not (1 <= n <= len(codes) and codes[n - 1] == code)]
    if not changed:
        return
    n, code = changed[0]
    moved = f"; {code} is now action {codes.index(code) + 1}" if code in codes else f"; {code} is no longer in the plan"
    more = f" (and {plural(len(changed) - 1, 'other number')})" if len(changed) > 1 else ""
    what = f"{number_holds(plan, n, 'is now')}{moved}{more}"
    raise PinsChanged(what, f"--select {n}={code}: the plan changed since it was printed ({what}); "
                      "nothing was applied: run `memconsolidate plan` again and choose from it", n, code)


def number_holds(plan: Plan, n: int, verb: str = "is") -> str:
    """What number `n` names in `plan`, as a pin's refusal says it: "action 3 is demote 1a2b3c4d"."""
    actions = plan.actions
    return f"action {n} {verb} {actions[n - 1].kind} {actions[n - 1].fingerprint()}" if 1 <= n <= len(actions) else \
        f"the plan has {plural(len(actions), 'action')}"


class PinsChanged(UsageError):
    """A pinned number the fresh plan no longer holds with its fingerprint. `what`: what changed, and
    the first such pin (`number`, `code`), for a caller to word in its own terms (`fleet apply
    --plans-dir`: the fleet pinned the numbers, or the user's pin is not of the saved plan)."""

    def __init__(self, what: str, message: str, number: int, code: str) -> None:
        super().__init__(message)
        self.what = what
        self.number = number
        self.code = code

    def __reduce__(self) -> tuple[type[PinsChanged], tuple[str, str, int, str]]:
        # As it was made, not from `args` alone: it may cross a process boundary (a fleet worker's).
        return (PinsChanged, (self.what, str(self), self.number, self.code))


def apply_plan(
    root: Path, corpus: Corpus, plan: Plan, settings: Settings, actions: list[Action], resolve: Resolution | None
) -> ApplyResult:
    _refuse_linked_reports(root)
    run_id = new_run_id(root)
    changes = _recordable_changes(root, layout_of(corpus), corpus, plan, settings, actions, run_id, resolve)
    if not changes.ops:
        return ApplyResult(run_id=run_id, record=None, changes=changes)
    info = {
        "layout": corpus.layout,
        "now": settings.now.isoformat(),
        "model": settings.llm.model,
        "applied": [a.kind for a in changes.applied],
        "skipped": len(changes.skipped),
    }
    record = execute(root, changes.ops, run_id=run_id, info=info)
    return ApplyResult(run_id=run_id, record=record, changes=changes)


def _refuse_linked_reports(root: Path) -> None:
    """Every run writes its report there: a symlinked reports folder is the run's to refuse, in one
    line, as a symlinked runs folder is (not each action's, skipped one by one every night)."""
    reports = root / REPORTS_DIR
    if reports.is_symlink():
        raise RunFailed(f"{reports} is a symlink: refusing to write run reports outside the store")


def _unrecordable(root: Path, ops: list[Op]) -> str | None:
    """Why the run would refuse `ops` (one line, naming the first path it may not change), or None:
    a path the journal cannot record, a symlink, a folder on the way out of the store."""
    return next(iter(_refusals(root, ops).values()), None)


def _refusals(root: Path, ops: list[Op]) -> dict[str, str]:
    """Every path of `ops` the run would refuse, with why (one line each), in the order met."""
    out: dict[str, str] = {}
    for op in ops:
        for p in (op.path, op.dest):
            if p is None or p in out:
                continue
            if (problem := path_problem(p)) is not None:
                out[p] = f"not applied: the journal cannot record {printable(p)}, which {problem}"
            elif (why := unsafe_reason(root, p)) is not None:
                out[p] = f"not applied: {printable(p)}: {why}"
    return out


def _recordable_changes(
    root: Path, layout: Layout, corpus: Corpus, plan: Plan, settings: Settings, actions: list[Action], run_id: str, resolve: Resolution | None
) -> ChangeSet:
    """The layout's change set, without the actions that lead to a path the run refuses (a file
    named `zz\\notes.md`: a legal name on POSIX, a folder separator to the journal; a move into a
    folder symlinked out of the store): each is skipped with why, and the run applies the rest, where
    the journal would refuse the whole run every night.

    Which actions those are is found only when the whole set names such a path: first, in one more
    build, the actions one of whose target files is a refused path's; if the rest is still refused,
    by building each one's change set alone, those whose targets name the path first, then, if that
    is not all of them, every applied action."""

    def build(chosen: list[Action]) -> ChangeSet:
        return layout.changes(corpus, chosen, settings, run_id, resolve, plan.findings)

    changes = build(actions)
    refusals = _refusals(root, changes.ops)
    if not refusals:
        return changes
    # First the likely ones, in two builds: each action one of whose target files is a refused path's
    # (a folder whose archive is linked elsewhere refuses every move of it: building each alone
    # re-made the folder's index edits once per action, 600 actions in six minutes).
    by_file: dict[str, str] = {}
    for path, reason in refusals.items():
        by_file.setdefault(printable(path.rsplit("/", 1)[-1]), reason)
    likely = {id(a): w for a in changes.applied for t in a.targets if (w := by_file.get(_file_part(t))) is not None}
    if likely:
        rest = build([a for a in actions if id(a) not in likely])
        if not _refusals(root, rest.ops):
            return _with_skipped(rest, actions, likely)
    refused = next(iter(refusals.values()))
    named = [a for a in changes.applied if any(_file_part(t) in refused for t in a.targets)]
    for suspects in (named, changes.applied):
        why = {id(a): w for a in suspects if (w := _unrecordable(root, build([a]).ops)) is not None}
        if not why:
            continue
        rest = build([a for a in actions if id(a) not in why])
        if _unrecordable(root, rest.ops) is None or suspects is changes.applied:
            return _with_skipped(rest, actions, why)
    return changes  # no one action's doing: the journal refuses the run, and says why


def _with_skipped(rest: ChangeSet, actions: list[Action], why: dict[int, str]) -> ChangeSet:
    """`rest` (the change set without the refused actions) listing them as skipped, with why, in
    the plan's order among its own skips."""
    order = {id(a): n for n, a in enumerate(actions)}
    skipped = rest.skipped + [(a, w) for a in actions if (w := why.get(id(a))) is not None]
    rest.skipped = sorted(skipped, key=lambda s: order.get(id(s[0]), len(order)))
    return rest


def _file_part(target: str) -> str:
    """The file name a target key ends with, as printable() shows it (`MEMORY.md#rules/1`: MEMORY.md)."""
    return printable(file_of(target).rsplit("/", 1)[-1])
