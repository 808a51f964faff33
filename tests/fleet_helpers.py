"""Fleets of small stores for the fleet tests: copies of the bundled fixtures, plus broken ones."""

from __future__ import annotations

import json
import os
from pathlib import Path

from helpers import FIXTURES, copy_store

LAYOUTS = ("bank", "claude", "crux", "zylos")
PLANTED = "20260101T000000Z-dead"


def build_fleet(top: Path, per_layout: int = 13) -> dict[str, list[Path]]:
    """`per_layout` copies of each fixture under `top` (in nested folders, as a platform keeps them),
    plus broken stores; the paths by kind ("bank", ..., "broken")."""
    out: dict[str, list[Path]] = {layout: [] for layout in LAYOUTS}
    for layout in LAYOUTS:
        for i in range(per_layout):
            out[layout].append(copy_store(FIXTURES / layout, top / f"tenant{i % 3}" / f"{layout}-{i:02d}"))
    out["broken"] = list(broken_stores(top / "broken").values())
    return out


def broken_stores(top: Path) -> dict[str, Path]:
    """garbage: a crux config that is not JSON; fifo: a bank file that is a FIFO (a read would
    block forever); statefile: a zylos store whose state folder is a file (nowhere to journal);
    hostile: a bank store with a planted unfinished journal naming a file outside it."""
    top.mkdir(parents=True, exist_ok=True)
    garbage = copy_store(FIXTURES / "crux", top / "garbage")
    (garbage / ".crux" / "crux-memories.json").write_bytes(b"\x00{garbage")
    fifo = copy_store(FIXTURES / "bank", top / "fifo")
    (fifo / "ops" / "memories.jsonl").unlink()
    os.mkfifo(fifo / "ops" / "memories.jsonl")
    statefile = copy_store(FIXTURES / "zylos", top / "statefile")
    (statefile / ".memconsolidate").write_text("not a folder\n")
    hostile = copy_store(FIXTURES / "bank", top / "hostile")
    (top / "precious.txt").write_text("a file outside every store\n")
    run = hostile / ".memconsolidate" / "runs" / PLANTED
    (run / "before").mkdir(parents=True)
    (run / "journal.json").write_text(json.dumps({
        "run_id": PLANTED, "status": "prepared", "created": "2026-01-01T00:00:00.000000+00:00",
        "touched": {"../../precious.txt": {"before": "absent", "after": "0" * 64, "states": ["0" * 64]}},
        "dirs_created": [], "ops": [], "info": {},
    }))
    return {"garbage": garbage, "fifo": fifo, "statefile": statefile, "hostile": hostile}


class CountingMeter:
    """A meter (`pipeline.llm.meter`) that lets `allow` requests through (each after a tiny wait),
    then refuses."""

    def __init__(self, allow: int) -> None:
        self.allow, self.reserved, self.refusals = allow, 0, 0

    def reserve(self, stage: str) -> float:
        from pipeline.llm.errors import BudgetExceeded

        if self.reserved >= self.allow:
            self.refusals += 1
            raise BudgetExceeded(stage, "the fleet says no")
        self.reserved += 1
        return 0.001

    def spent(self, cost_usd: float) -> None:
        pass


def lines(stdout: str) -> dict[str, dict]:
    """The fleet's JSON lines by store path (every line must parse: stdout is only JSON lines)."""
    records = [json.loads(line) for line in stdout.splitlines()]
    by_path = {r["path"]: r for r in records}
    assert len(by_path) == len(records), "one line per store"
    return by_path


def crash_task(path, spec, budget):
    """A per-store task whose worker dies on any store named `crash*`: what a segfault looks like."""
    from pipeline.fleet.task import run_task

    if Path(path).name.startswith("crash"):
        os._exit(3)
    return run_task(path, spec, budget)


# --- stores that never finish (the fleet's --store-timeout) -------------------------------------

# The journal step (pipeline.journal._step) a `stall*` store's apply never returns from: the third,
# when its first change is made and its journal says the run is under way (a backup copy, the
# journal, an op).
STALL_STEP = 3


def stalling_task(path, spec, budget):
    """A per-store task whose store never finishes, as on a stalled mount, where a read never
    returns: a store named `hang*` blocks before it starts; one named `stall*` blocks mid-apply, at
    its journal's STALL_STEP, one of its changes made. Either writes its worker's pid beside the
    store (`<store>.pid`) first. One named `busy*` reserves requests from the fleet's budget for
    ever. Any other store runs as usual."""
    from pipeline import journal
    from pipeline.fleet.task import run_task

    store = Path(path)
    if store.name.startswith(("hang", "stall")):
        store.with_name(store.name + ".pid").write_text(str(os.getpid()))
    if store.name.startswith("hang"):
        _read_a_stalled_mount(store)
    while store.name.startswith("busy"):  # a store whose requests never end, each reserved under the budget's lock
        budget.reserve("busy")
    step, seen = journal._step, 0

    def stalled() -> None:
        nonlocal seen
        seen += 1
        if seen == STALL_STEP:
            _read_a_stalled_mount(store)
        step()

    if store.name.startswith("stall"):
        journal._step = stalled
    try:
        return run_task(path, spec, budget)
    finally:
        journal._step = step


def _read_a_stalled_mount(store: Path) -> None:
    """Block for good in the kernel, as a read from a stalled mount does: open a FIFO (beside the
    store, not in it) that nothing ever writes to."""
    fifo = store.with_name(store.name + ".fifo")
    if not fifo.exists():
        os.mkfifo(fifo)
    fifo.read_bytes()
    raise AssertionError("a FIFO nothing writes to was read")


def elsewhere_task(path, spec, budget):
    """A per-store task run from another folder than the fleet's, as on a Ray node of a cluster."""
    import tempfile

    from pipeline.fleet.task import run_task

    here = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="another-node-") as elsewhere:
        os.chdir(elsewhere)
        try:
            return run_task(path, spec, budget)
        finally:
            os.chdir(here)


def pid_gone(pid: int, within: float = 30.0) -> bool:
    """Whether process `pid` is gone (or is a zombie), waiting up to `within` seconds."""
    import time

    end = time.monotonic() + within
    while True:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state in ("Z", "X"):
            return True
        if time.monotonic() >= end:
            return False
        time.sleep(0.05)


# A store's task that finishes `LATE_S` seconds after it started: past a store timeout shorter than
# that, as the fleet is about to stop it.
LATE_S = 3.0


def late_task(path, spec, budget):
    """A per-store task that runs its store as usual, but finishes `LATE_S` seconds after it started,
    noting `<store>.returning` beside the store just before it returns its record."""
    import time

    from pipeline.fleet.task import run_task

    time.sleep(LATE_S)
    record = run_task(path, spec, budget)
    Path(path).with_name(Path(path).name + ".returning").write_text("")
    return record


def returned(store: Path, within: float = 60.0) -> bool:
    """Whether `late_task` returned the record of `store` (a second after it noted it would), waiting
    up to `within` seconds."""
    import time

    end = time.monotonic() + within
    while not store.with_name(store.name + ".returning").exists():
        if time.monotonic() >= end:
            return False
        time.sleep(0.05)
    time.sleep(1.0)  # its record sent (a few hundred bytes) into the fleet's pipe
    return True


def unkillable_task(path, spec, budget):
    """A per-store task whose worker, on a store named `held*`, outlives its kill as one the kernel
    holds in a read from a stalled mount would (the fleet's kill is made a no-op for it, SIGTERM is
    ignored), writing its pid beside the store; any other store runs as usual."""
    import signal

    from pipeline.fleet.task import run_task

    store = Path(path)
    if store.name.startswith("held"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        store.with_name(store.name + ".pid").write_text(str(os.getpid()))
        _read_a_stalled_mount(store)
    return run_task(path, spec, budget)


def grave_task(path, spec, budget):
    """A per-store task whose worker dies holding the fleet budget's lock on any store named
    `grave*`: the OOM killer striking inside the ledger's microseconds. Any other store runs as usual."""
    from pipeline.fleet.task import run_task

    if Path(path).name.startswith("grave"):
        # the ledger's lock (before it was a plain one, the synchronized Value's own)
        lock = budget._lock if hasattr(budget, "_lock") else budget._value.get_lock()
        lock.acquire()
        os._exit(9)
    return run_task(path, spec, budget)
