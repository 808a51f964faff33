"""Plans on disk: what `fleet plan --plans-dir DIR` writes, and what `fleet apply --plans-dir DIR`
reads back to apply exactly the plans a person reviewed.

A store's plan file is named after the store (`plan_file_name`: its folder's name and its path's
hash), never after anything in a plan, so no plan file can choose which store it is read for. Read
back, a plan is data, never an instruction: a regular file within `MAX_PLAN_FILE_BYTES`, never
through a symlink, the plan JSON contract (each action's fingerprint that of what it holds), made
for this very store (its `root` and `layout`), no target leaving the store. What it contributes to
the apply is only which of its actions to pin, each by its number and fingerprint
(`apply --select N=FINGERPRINT`, the single-store pinning path); the actions applied are the
store's fresh plan's, and each must be, in full, the saved one (`check_unchanged`).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from ..apply import PinsChanged, Resolution, number_holds, select_actions
from ..errors import UsageError
from ..model import PLAN_SCHEMA, Action, Plan
from ..storage.files import Unreadable, read_own

# A plan is a few hundred bytes an action: this holds a hundred thousand of them. A bigger file is
# no plan of ours (a link to /dev/zero is refused before, as no regular file).
MAX_PLAN_FILE_BYTES = 64 << 20


def plan_bytes(plan: Plan) -> bytes:
    """Exactly what `memconsolidate plan --json` prints for this plan."""
    text = json.dumps(plan.to_json_dict(), ensure_ascii=False, indent=2, sort_keys=False) + "\n"
    return text.encode("utf-8", errors="backslashreplace")


def plan_file_name(path: str) -> str:
    """A name unique per store (its path's hash) that a person can still recognise (its folder name)."""
    digest = hashlib.sha256(path.encode("utf-8", "surrogateescape")).hexdigest()[:12]
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(path).name)[:60].lstrip(".") or "store"
    return f"{readable}-{digest}.plan.json"


def write_plan(folder: Path, path: str, plan: Plan) -> Path:
    from ..journal import write_atomic

    target = folder / plan_file_name(path)
    write_atomic(target, plan_bytes(plan))
    return target


def forget_plan(folder: Path, path: str) -> None:
    """Take away the store's plan file of an earlier `fleet plan`, before this one runs any store: a
    store that fails, runs out of budget, times out or is never reached tonight must not leave
    yesterday's plan in the folder to be reviewed, and applied by `fleet apply --plans-dir`, as if it
    were tonight's."""
    target = folder / plan_file_name(path)
    if target.is_symlink() or target.is_file():  # never a folder someone made under that name
        target.unlink(missing_ok=True)


# --- the read side: `fleet apply --plans-dir` -----------------------------------------------------


@dataclass(frozen=True)
class Reviewed:
    """A store's saved plan, checked: `file` it was read from, `plan` as it was reviewed."""

    file: Path
    plan: Plan

    def pins(self, select: list[str] | None, resolve: Resolution | None) -> dict[int, Action]:
        """The saved plan's actions that `apply` would have applied to it (its automatic ones, or
        those `select` names, conflicts under `resolve`), by their number in it."""
        try:
            chosen = {id(a) for a in select_actions(self.plan, select, resolve)}
        except PinsChanged as exc:  # the saved plan never changes: the user's pin is not of it
            raise _refused(self.file, f"--select {exc.number}={exc.code} names no action of it ({number_holds(self.plan, exc.number)})") from None
        except UsageError as exc:  # a pinned conflict without --resolve
            raise _refused(self.file, str(exc)) from None
        return {n: a for n, a in enumerate(self.plan.actions, start=1) if id(a) in chosen}

    def check_unchanged(self, pinned: dict[int, Action], plan: Plan, actions: list[Action]) -> None:
        """Before anything is applied: the actions the store's fresh `plan` is about to apply are
        the pinned ones, each the change the saved action describes in full (its reason aside, as
        for the fingerprint). The pins match each one's 32-bit fingerprint already; a saved plan is
        untrusted, and one made to match a fingerprint with other content (another target, an
        action needing the user marked automatic) must not have the fresh one applied as reviewed."""
        at = {id(a): n for n, a in enumerate(plan.actions, start=1)}
        numbers = [at[id(a)] for a in actions]
        if sorted(numbers) != sorted(pinned):
            raise _refused(self.file, f"the store's plan would apply actions {sorted(numbers)}, not the reviewed {sorted(pinned)}")
        for n, action in zip(numbers, actions):
            if not _same_change(action, pinned[n]):
                raise _refused(self.file, f"action {n} ({pinned[n].kind} {pinned[n].fingerprint()}) is not the change "
                                          "the store's plan now makes under that fingerprint")


def _same_change(fresh: Action, saved: Action) -> bool:
    return type(fresh) is type(saved) and fresh.model_dump(exclude={"reason"}) == saved.model_dump(exclude={"reason"})


def read_reviewed(folder: Path, path: str, root: Path, layout: str) -> Reviewed:
    """The plan `fleet plan --plans-dir folder` saved for the store at `path` (resolved: `root`,
    detected as `layout`), checked as the module says; UsageError, one line, when there is none
    or it cannot be taken as this store's reviewed plan."""
    file = folder / plan_file_name(path)
    try:
        data = read_own(file, MAX_PLAN_FILE_BYTES)
    except FileNotFoundError:
        raise _refused(file, f"none in {folder} (the store was not planned there)") from None
    except Unreadable as exc:
        raise _refused(file, f"cannot be read: {exc}") from None
    plan = _parsed(file, data)
    if plan.schema_ != PLAN_SCHEMA:
        raise _refused(file, f"schema {plan.schema_!r}, not {PLAN_SCHEMA}")
    if plan.root != str(root) or plan.layout != layout:
        raise _refused(file, f"a plan of the {plan.layout} store {plan.root!r}, not of this {layout} store {str(root)!r}")
    for n, action in enumerate(plan.actions, start=1):
        for key in [*action.targets, *(action.target_hashes or {})]:
            if _leaves_the_store(key):
                raise _refused(file, f"action {n} names {key!r}, no path inside the store")
    return Reviewed(file, plan)


class NotAsReviewed(UsageError):
    """A store's saved plan that cannot be applied as reviewed: none, unreadable, not this store's,
    or not what the store's plan now holds. One line, naming the plan file."""


def _refused(file: Path, why: str) -> NotAsReviewed:
    return NotAsReviewed(" ".join(f"reviewed plan {file.name}: {why}".split())[:400] + "; nothing was applied")


def _parsed(file: Path, data: bytes) -> Plan:
    try:
        raw = json.loads(data)
    except (ValueError, RecursionError):  # RecursionError: nesting deeper than the stack
        raise _refused(file, "not JSON") from None
    try:
        return Plan.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(map(str, first["loc"]))  # none: the document itself
        raise _refused(file, f"not a plan: {where + ': ' if where else ''}{first['msg']}") from None
    except RecursionError:
        raise _refused(file, "not a plan: nested too deep") from None


def _leaves_the_store(key: str) -> bool:
    """A target no reader of ours makes: absolute, or with a `..` segment (or a NUL, which no file
    name holds). A file name legal on POSIX but odd (a backslash) is a real memory's; apply skips
    what it cannot journal."""
    return key.startswith("/") or "\x00" in key or ".." in key.split("/")
