"""All-or-nothing changes to a store: journal first, then change, then commit.

A run's changes are a list of primitive `Op`s (write a file, move a file, and — only when undoing a
run — remove a file that run created). Before the first change, every path the run will touch has
its current bytes copied into `.memconsolidate/runs/<run-id>/before/` and a journal listing them is
written and fsynced. A run whose journal is not marked committed is rolled back by the next command
on the store, so a store is always either entirely before or entirely after a run. A committed run
can be undone byte-for-byte, as long as the files it wrote are still what it wrote.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import secrets
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .errors import RunFailed
from .lock import state_dir

ABSENT = "absent"
JOURNAL = "journal.json"


@dataclass(frozen=True)
class Op:
    kind: Literal["write", "move", "remove"]
    path: str  # relative to the store root, POSIX
    dest: str | None = None  # for moves
    data: bytes | None = None  # for writes
    # sha (or ABSENT) of the bytes the op was built from: a file that changed since is never replaced
    expect: str | None = None
    mode: int | None = None  # permission bits for a write (undo of a moved file); None keeps them


@dataclass
class RunRecord:
    run_id: str
    status: str
    created: str
    touched: dict[str, dict[str, Any]] = field(default_factory=dict)
    dirs_created: list[str] = field(default_factory=list)
    ops: list[dict[str, str | None]] = field(default_factory=list)
    info: dict = field(default_factory=dict)


def new_run_id() -> str:
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{secrets.token_hex(2)}"


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def state(data: bytes | None) -> str:
    return ABSENT if data is None else sha(data)


class ChangedMeanwhile(OSError):
    """A path no longer holds what the journal recorded: something else wrote it during the run."""


def runs_dir(root: Path) -> Path:
    path = state_dir(root) / "runs"
    path.mkdir(mode=0o700, exist_ok=True)
    return path


# --- fault injection for the kill tests: MEMCONSOLIDATE_FAULT_AFTER=N exits hard at step N -----

_steps = 0


def _step() -> None:
    global _steps
    _steps += 1
    delay = os.environ.get("MEMCONSOLIDATE_FAULT_DELAY_MS")
    if delay:
        time.sleep(int(delay) / 1000)
    limit = os.environ.get("MEMCONSOLIDATE_FAULT_AFTER")
    if limit and _steps >= int(limit):
        os._exit(99)


# --- durable file primitives ------------------------------------------------------------------


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: Path, data: bytes, mode: int | None = None, expect: str | None = None) -> None:
    """Write through a temp file in the same folder and `os.replace`, fsyncing file and folder.

    With `expect`, the replace happens only if `path` still holds those bytes (ChangedMeanwhile).
    """
    tmp = path.with_name(f".{path.name}.mc-tmp-{secrets.token_hex(3)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode if mode is not None else 0o644)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)  # exact bits back (undo of a 0600 file), whatever the umask
        elif path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o7777)
        if expect is not None:
            _check(path, expect)  # last moment before the replace: keep the race window tiny
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def _read_or_absent(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _check(path: Path, expect: str) -> None:
    if state(_read_or_absent(path)) != expect:
        raise ChangedMeanwhile(f"{path.name} changed while the run was applying (written by something else)")


def _save_record(run: Path, record: RunRecord) -> None:
    write_atomic(run / JOURNAL, json.dumps(record.__dict__, indent=1, sort_keys=True).encode(), mode=0o600)


def load_record(run: Path) -> RunRecord | None:
    try:
        data = json.loads((run / JOURNAL).read_text(encoding="utf-8"))
        return RunRecord(**data)
    except (OSError, ValueError, TypeError):  # TypeError: valid JSON of another shape
        return None


# --- planning the touched set -----------------------------------------------------------------


def _simulate(
    root: Path, ops: list[Op]
) -> tuple[dict[str, bytes | None], dict[str, bytes | None], list[str], dict[str, set[str]]]:
    """Before and after contents of every touched path, the folders the ops will create, and every
    state (sha or ABSENT) the ops put each path in."""
    before: dict[str, bytes | None] = {}
    after: dict[str, bytes | None] = {}
    states: dict[str, set[str]] = {}

    def current(p: str) -> bytes | None:
        if p not in before:
            before[p] = _read_or_absent(root / p)
            after.setdefault(p, before[p])
        return after[p]

    def put(p: str, data: bytes | None) -> None:
        after[p] = data
        states.setdefault(p, set()).add(state(data))

    for op in ops:
        if op.expect is not None and state(current(op.path)) != op.expect:
            # The writer built this op on bytes that are no longer there: replacing them would lose
            # whatever was written since (an agent appending a memory between plan and apply).
            raise RunFailed(f"{op.path} changed since it was read: nothing applied; run apply again")
        if op.kind == "write":
            current(op.path)
            put(op.path, op.data)
        elif op.kind == "move":
            assert op.dest is not None
            data = current(op.path)
            if data is None:
                raise RunFailed(f"cannot move {op.path}: it does not exist")
            if current(op.dest) is not None:
                raise RunFailed(f"cannot move {op.path} to {op.dest}: the destination exists")
            put(op.dest, data)
            put(op.path, None)
        elif op.kind == "remove":
            current(op.path)
            put(op.path, None)
    dirs: set[str] = set()
    for p, data in after.items():
        if data is None:
            continue
        parent = Path(p).parent
        while str(parent) not in ("", ".") and not (root / parent).exists():
            dirs.add(parent.as_posix())
            parent = parent.parent
    return before, after, sorted(dirs, key=lambda d: (d.count("/"), d)), states


# --- execute, recover, undo -------------------------------------------------------------------


def _escapes(root: Path, rel_path: str) -> bool:
    """Whether the deepest existing folder of `rel_path` resolves outside `root`."""
    folder = (root / rel_path).parent
    while not folder.exists() and folder != root:
        folder = folder.parent
    try:
        folder.resolve().relative_to(root.resolve())
    except ValueError:
        return True
    return False


def execute(root: Path, ops: list[Op], run_id: str | None = None, info: dict | None = None) -> RunRecord:
    """Apply `ops` as one transaction. Raises RunFailed (after rolling back) if a change fails."""
    run_id = run_id or new_run_id()
    before, after, dirs, states = _simulate(root, ops)
    for p in before:
        if (root / p).is_symlink():
            raise RunFailed(f"refusing to change {p}: it is a symlink")
        if _escapes(root, p):
            # a symlinked folder on the way would carry the write out of the store
            raise RunFailed(f"refusing to change {p}: a folder on its path leads outside the store")
    run = runs_dir(root) / run_id
    (run / "before").mkdir(parents=True, mode=0o700)
    # The run's folder must survive a power loss with the journal in it: fsync each new entry's parent.
    for folder in (run, run.parent, run.parent.parent, root):
        _fsync_dir(folder)
    # Microseconds: `undo` takes the latest run by this, and two runs can start in one second.
    record = RunRecord(run_id=run_id, status="prepared", created=dt.datetime.now(dt.timezone.utc).isoformat(timespec="microseconds"), info=info or {})
    for n, (p, data) in enumerate(sorted(before.items())):
        entry: dict[str, Any] = {"before": ABSENT, "after": state(after[p]), "states": sorted(states.get(p, ()))}
        if data is not None:
            blob = f"before/{n:05d}"
            write_atomic(run / blob, data, mode=0o600)
            # the mode too: a moved-away file is re-created by rollback or undo, not rewritten
            entry.update(before=sha(data), blob=blob, mode=(root / p).stat().st_mode & 0o7777)
            _step()
        record.touched[p] = entry
    record.dirs_created = dirs
    record.ops = [{"kind": o.kind, "path": o.path, "dest": o.dest} for o in ops]
    _save_record(run, record)  # from here on, a crash is rolled back by the next command
    _fsync_dir(run)
    _step()
    expected = {p: entry["before"] for p, entry in record.touched.items()}
    try:
        for d in dirs:
            (root / d).mkdir(exist_ok=True)
            _fsync_dir((root / d).parent)  # else a moved file's new folder may vanish on power loss
        for op in ops:
            _apply_op(root, op, expected)
            _step()
    except OSError as exc:
        kept = rollback(root, run, record)
        also = f"; left as found (written by something else): {', '.join(kept)}" if kept else ""
        raise RunFailed(f"apply failed and was rolled back: {exc}{also}") from None
    record.status = "committed"
    _save_record(run, record)
    _step()
    return record


def _apply_op(root: Path, op: Op, expected: dict[str, str] | None = None) -> None:
    """Apply one op; with `expected` (path -> state the journal says it is in), refuse with
    ChangedMeanwhile when a path was written by something else since the journal's copy."""
    target = root / op.path
    want = expected or {}
    if op.kind == "write":
        assert op.data is not None
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(target, op.data, mode=op.mode, expect=want.get(op.path))
        if expected is not None:
            expected[op.path] = sha(op.data)
    elif op.kind == "move":
        assert op.dest is not None
        dest = root / op.dest
        dest.parent.mkdir(parents=True, exist_ok=True)
        if dest.exists() or dest.is_symlink():
            raise OSError(f"destination exists: {op.dest}")
        if op.path in want:
            _check(target, want[op.path])
        os.rename(target, dest)
        _fsync_dir(dest.parent)
        _fsync_dir(target.parent)
        if expected is not None:
            expected[op.dest], expected[op.path] = expected[op.path], ABSENT
    elif op.kind == "remove":
        if op.path in want:
            _check(target, want[op.path])
        target.unlink(missing_ok=True)
        _fsync_dir(target.parent)
        if expected is not None:
            expected[op.path] = ABSENT


def rollback(root: Path, run: Path, record: RunRecord) -> list[str]:
    """Put every touched path back to its journaled bytes. Idempotent, so a crash here is fine.

    Only a path that holds bytes this run wrote is put back. One holding anything else was written
    by something else (an agent appending after a crash, a new file at a path the run meant to
    create): it is left as found, so those bytes — in no copy of ours — are never lost. Returns those.
    """
    kept: list[str] = []
    for p, entry in sorted(record.touched.items()):
        target = root / p
        now = state(_read_or_absent(target))
        if now == entry["before"]:
            continue
        if now not in entry.get("states", [entry["after"]]):
            kept.append(p)
            continue
        if entry["before"] == ABSENT:
            target.unlink(missing_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(target, (run / entry["blob"]).read_bytes(), mode=entry.get("mode"))
    for d in sorted(record.dirs_created, key=lambda d: (-d.count("/"), d)):
        try:
            (root / d).rmdir()
        except OSError:
            pass  # not empty: something else lives there now; keep it
    record.status = "rolled_back"
    if kept:
        record.info["left_as_found"] = kept
    _save_record(run, record)
    return kept


def recover(root: Path) -> list[str]:
    """Roll back every run a crash left unfinished. Returns one message per run recovered."""
    base = root / ".memconsolidate" / "runs"
    if not base.is_dir():
        return []
    messages = []
    for run in sorted(p for p in base.iterdir() if p.is_dir()):
        record = load_record(run)
        if record is None and (run / JOURNAL).exists():
            # A journal we cannot read may be a run that changed the store: its copies are the only
            # way back, so they are never discarded on a guess.
            raise RunFailed(
                f"the journal of run {run.name} cannot be read ({run / JOURNAL}); its copies of the store "
                f"are in {run / 'before'}: repair or move that folder by hand"
            )
        if record is None:
            # The crash came before the journal existed: nothing in the store was changed yet, and
            # the folder holds only our own copies.
            shutil.rmtree(run)
            messages.append(f"discarded run {run.name}: interrupted before any change")
        elif record.status == "prepared":
            kept = rollback(root, run, record)
            messages.append(f"rolled back run {run.name}: it was interrupted; the store is as before it")
            if kept:
                messages[-1] += (
                    f", except {', '.join(kept)}: written by something else since, left as found "
                    f"(their bytes from before the run are in {run / 'before'})"
                )
    return messages


def committed_runs(root: Path) -> list[RunRecord]:
    base = root / ".memconsolidate" / "runs"
    if not base.is_dir():
        return []
    records = [load_record(p) for p in sorted(base.iterdir()) if p.is_dir()]
    # In the order they ran: run ids sort by second, then by a random suffix.
    return sorted((r for r in records if r is not None and r.status == "committed"), key=lambda r: (r.created, r.run_id))


def _state_of(root: Path, record: RunRecord, side: str) -> list[str]:
    """Touched paths whose current bytes differ from the run's `side` ("before" or "after")."""
    differ = []
    for p, entry in sorted(record.touched.items()):
        now = _read_or_absent(root / p)
        if (ABSENT if now is None else sha(now)) != entry[side]:
            differ.append(p)
    return differ


def undo_ops(root: Path, record: RunRecord) -> list[Op]:
    """The ops that put back what `record` changed; refuses if those files changed since."""
    run = runs_dir(root) / record.run_id
    changed = _state_of(root, record, "after")
    if changed:
        shown = ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")
        raise RunFailed(f"cannot undo run {record.run_id}: changed since it ran: {shown}")
    ops: list[Op] = []
    for p, entry in sorted(record.touched.items()):
        if entry["before"] == ABSENT:
            if entry["after"] != ABSENT:
                ops.append(Op("remove", p, expect=entry["after"]))
        elif entry["after"] != entry["before"]:
            blob = (run / entry["blob"]).read_bytes()
            ops.append(Op("write", p, data=blob, expect=entry["after"], mode=entry.get("mode")))
    return ops


def undo(root: Path, run_id: str | None = None) -> RunRecord:
    runs = [r for r in committed_runs(root) if "undo_of" not in r.info]
    if not runs:
        raise RunFailed(f"no applied run to undo in {root}")
    if run_id is None:
        target = runs[-1]
    else:
        matches = [r for r in runs if r.run_id == run_id]
        if not matches:
            raise RunFailed(f"no applied run {run_id} in {root} (known: {', '.join(r.run_id for r in runs[-5:])})")
        target = matches[0]
    if not _state_of(root, target, "before"):
        # Already back to before (an undo that crashed after its own commit): just record it.
        target.status = "undone"
        _save_record(runs_dir(root) / target.run_id, target)
        return target
    result = execute(root, undo_ops(root, target), info={"undo_of": target.run_id})
    # Remove folders the undone run created, if they are empty again.
    for d in sorted(target.dirs_created, key=lambda d: (-d.count("/"), d)):
        try:
            (root / d).rmdir()
        except OSError:
            pass
    target.status = "undone"
    _save_record(runs_dir(root) / target.run_id, target)
    return result
