"""A hostile store: `.memconsolidate/` planted by whoever a store was cloned from.

Every journal below was written by someone else (or damaged). None may reach a file outside the
store, and none may be acted on (rolled back, undone, rewritten or deleted): `plan` reports it on
stderr and goes on read-only; the commands that write refuse with one line naming it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from helpers import FIXTURES, NOW, copy_store, snapshot
from helpers import run_cli, start_cli

BLOG = "blog/memories.jsonl"
RUN = "20260101T000000Z-beef"
ABSENT = "absent"


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """The command in this process; on a store holding a FIFO, in a process of its own, so a read
    that blocks on it fails the test after `timeout` seconds instead of hanging the suite."""
    store = Path(args[1])
    if any(stat.S_ISFIFO(p.lstat().st_mode) for p in store.rglob("*")):
        return start_cli(*args).wait(timeout)
    return run_cli(*args)


def plan(store: Path) -> subprocess.CompletedProcess:
    return cli("plan", str(store), "--now", NOW, "--model", "none", "--json")


def apply(store: Path) -> subprocess.CompletedProcess:
    return cli("apply", str(store), "--now", NOW, "--model", "none", "--yes")


def tree(top: Path) -> dict[str, object]:
    """Every entry under `top` (state folder included), never following a symlink or reading a FIFO."""
    out: dict[str, object] = {}
    for dirpath, dirnames, filenames in os.walk(top):
        for name in sorted(dirnames + filenames):
            p = Path(dirpath) / name
            st = p.lstat()
            key = p.relative_to(top).as_posix()
            if stat.S_ISLNK(st.st_mode):
                out[key] = ("link", os.readlink(p))
            elif stat.S_ISREG(st.st_mode):
                out[key] = p.read_bytes()
            elif stat.S_ISDIR(st.st_mode):
                out[key] = "dir"
            else:
                out[key] = "special"
    return out


class World:
    """A bank store in tmp/store, files beside it outside, and a way to plant runs."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.store = copy_store(FIXTURES / "bank", tmp / "store")
        self.precious = tmp / "precious.txt"
        self.precious.write_bytes(b"a file outside the store\n")
        self.victim = tmp / "victim.txt"
        self.victim.write_bytes(b"another file outside the store\n")
        self.secret = tmp / "secret.txt"
        self.secret.write_bytes(b"SECRET=outside-the-store\n")
        (tmp / "emptydir").mkdir()
        self.runs = self.store / ".memconsolidate" / "runs"
        self.runs.mkdir(parents=True)

    def plant(self, record: dict, blobs: dict[str, bytes] | None = None, name: str = RUN) -> Path:
        run = self.runs / name
        (run / "before").mkdir(parents=True, exist_ok=True)
        for blob, data in (blobs or {}).items():
            (run / blob).write_bytes(data)
        (run / "journal.json").write_text(json.dumps(record))
        return run

    def blog(self) -> bytes:
        return (self.store / BLOG).read_bytes()

    def everything(self) -> dict[str, object]:
        return tree(self.tmp)


def record(status: str = "prepared", touched=None, dirs=None, ops=None, run_id: str = RUN, **extra) -> dict:
    return {
        "run_id": run_id, "status": status, "created": "2026-01-01T00:00:00.000000+00:00",
        "touched": touched or {}, "dirs_created": dirs or [], "ops": ops or [], "info": {}, **extra,
    }


# Each shape: a function of the world that plants one journal. All are "prepared" (unfinished):
# the next command used to roll them back.
def _delete_outside(w: World) -> None:
    w.plant(record(touched={"../precious.txt": {"before": ABSENT, "after": "0" * 64, "states": [sha(w.precious.read_bytes())]}}))


def _overwrite_outside(w: World) -> None:
    v = sha(w.victim.read_bytes())
    w.plant(record(touched={"../victim.txt": {"before": sha(b"evil\n"), "after": v, "states": [v], "blob": "before/00000"}}),
            {"before/00000": b"evil\n"})


def _blob_outside(w: World) -> None:
    b = sha(w.blog())
    w.plant(record(touched={BLOG: {"before": sha(w.secret.read_bytes()), "after": b, "states": [b], "blob": "../../../../secret.txt"}}))


def _absolute_blob(w: World) -> None:
    b = sha(w.blog())
    w.plant(record(touched={BLOG: {"before": sha(w.secret.read_bytes()), "after": b, "states": [b], "blob": str(w.secret)}}))


def _absolute_path(w: World) -> None:
    w.plant(record(touched={str(w.precious): {"before": ABSENT, "after": "0" * 64, "states": [sha(w.precious.read_bytes())]}}))


def _nul_path(w: World) -> None:
    w.plant(record(touched={"blog/a\x00b.md": {"before": ABSENT, "after": "0" * 64, "states": ["0" * 64]}}))


def _backslash_path(w: World) -> None:
    (w.store / "..\\precious.txt").write_bytes(b"a file with an odd name\n")
    w.plant(record(touched={"..\\precious.txt": {"before": ABSENT, "after": "0" * 64, "states": [sha(b"a file with an odd name\n")]}}))


def _dot_segments(w: World) -> None:
    w.plant(record(touched={"blog/../../precious.txt": {"before": ABSENT, "after": "0" * 64, "states": [sha(w.precious.read_bytes())]}}))


def _dirs_outside(w: World) -> None:
    w.plant(record(dirs=["../emptydir"]))


def _state_folder_target(w: World) -> None:
    other = w.plant(record(status="committed"), name="20250101T000000Z-0001")
    data = (other / "journal.json").read_bytes()
    w.plant(record(touched={f".memconsolidate/runs/{other.name}/journal.json": {"before": ABSENT, "after": "0" * 64, "states": [sha(data)]}}))


def _symlinked_folder_in_path(w: World) -> None:
    (w.tmp / "outside").mkdir()
    (w.tmp / "outside" / "victim.txt").write_bytes(b"through a link\n")
    os.symlink(w.tmp / "outside", w.store / "link")
    w.plant(record(touched={"link/victim.txt": {"before": ABSENT, "after": "0" * 64, "states": [sha(b"through a link\n")]}}))


def _symlinked_target(w: World) -> None:
    os.symlink(w.victim, w.store / "blog" / "notes.md")
    v = sha(w.victim.read_bytes())
    w.plant(record(touched={"blog/notes.md": {"before": sha(b"evil\n"), "after": v, "states": [v], "blob": "before/00000"}}),
            {"before/00000": b"evil\n"})


def _symlinked_run_folder(w: World) -> None:
    outside_run = w.tmp / "outside-run"
    (outside_run / "before").mkdir(parents=True)
    (outside_run / "before" / "00000").write_bytes(b"evil\n")
    b = sha(w.blog())
    (outside_run / "journal.json").write_text(json.dumps(record(touched={BLOG: {"before": sha(b"evil\n"), "after": b, "states": [b], "blob": "before/00000"}})))
    os.symlink(outside_run, w.runs / RUN)


def _symlinked_before_folder(w: World) -> None:
    (w.tmp / "outside-before").mkdir()
    (w.tmp / "outside-before" / "00000").write_bytes(w.secret.read_bytes())
    b = sha(w.blog())
    run = w.runs / RUN
    run.mkdir()
    os.symlink(w.tmp / "outside-before", run / "before")
    (run / "journal.json").write_text(json.dumps(record(touched={BLOG: {"before": sha(w.secret.read_bytes()), "after": b, "states": [b], "blob": "before/00000"}})))


def _symlinked_blob(w: World) -> None:
    b = sha(w.blog())
    run = w.plant(record(touched={BLOG: {"before": sha(w.secret.read_bytes()), "after": b, "states": [b], "blob": "before/00000"}}))
    os.symlink(w.secret, run / "before" / "00000")


def _blob_not_our_pattern(w: World) -> None:
    b = sha(w.blog())
    run = w.plant(record(touched={BLOG: {"before": "x", "after": b, "states": [b], "blob": "journal.json"}}))
    data = (run / "journal.json").read_bytes()
    rec = json.loads(data)
    rec["touched"][BLOG]["before"] = sha(data)
    (run / "journal.json").write_text(json.dumps(rec))


def _symlinked_journal(w: World) -> None:
    (w.tmp / "journal-outside.json").write_text(json.dumps(record(touched={"../precious.txt": {"before": ABSENT, "after": "0" * 64, "states": [sha(w.precious.read_bytes())]}})))
    run = w.runs / RUN
    (run / "before").mkdir(parents=True)
    os.symlink(w.tmp / "journal-outside.json", run / "journal.json")


def _fifo_journal(w: World) -> None:
    run = w.runs / RUN
    run.mkdir()
    os.mkfifo(run / "journal.json")


def _deep_json(w: World) -> None:
    run = w.runs / RUN
    (run / "before").mkdir(parents=True)
    (run / "journal.json").write_text("[" * 200_000 + "]" * 200_000)


def _run_id_leaves(w: World) -> None:
    w.plant(record(run_id="../../../outside-run"))


def _well_formed_but_unsigned(w: World) -> None:
    """Everything inside the store and of the right shape: only the store binding tells it apart."""
    b = sha(w.blog())
    w.plant(record(touched={BLOG: {"before": sha(b"planted\n"), "after": b, "states": [b], "blob": "before/00000", "mode": 0o644}}),
            {"before/00000": b"planted\n"})


def _forged_hmac(w: World) -> None:
    b = sha(w.blog())
    w.plant(record(touched={BLOG: {"before": sha(b"planted\n"), "after": b, "states": [b], "blob": "before/00000"}}, hmac="ab" * 32),
            {"before/00000": b"planted\n"})


SHAPES = {
    f.__name__.strip("_"): f
    for f in (
        _delete_outside, _overwrite_outside, _blob_outside, _absolute_blob, _absolute_path, _nul_path, _backslash_path,
        _dot_segments, _dirs_outside, _state_folder_target, _symlinked_folder_in_path, _symlinked_target,
        _symlinked_run_folder, _symlinked_before_folder, _symlinked_blob, _blob_not_our_pattern, _symlinked_journal,
        _fifo_journal, _deep_json, _run_id_leaves, _well_formed_but_unsigned, _forged_hmac,
    )
}


@pytest.fixture
def world(tmp_path) -> World:
    return World(tmp_path)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_plan_never_acts_on_a_planted_journal(world, shape):
    SHAPES[shape](world)
    before = world.everything()
    res = plan(world.store)
    assert res.returncode == 0, res.stderr
    json.loads(res.stdout)  # the plan JSON contract holds
    assert "Traceback" not in res.stderr
    assert RUN in res.stderr and "not acting on" in res.stderr, res.stderr
    after = world.everything()
    # nothing changed anywhere: not outside, not in the store, not the planted run itself
    assert after == before


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_apply_refuses_a_store_with_a_planted_unfinished_journal(world, shape):
    SHAPES[shape](world)
    before = world.everything()
    res = apply(world.store)
    assert res.returncode == 1, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and RUN in lines[0], res.stderr
    assert _only_lock_added(before, world.everything())


def _only_lock_added(before: dict, after: dict) -> bool:
    """The lock file (and nothing else) may appear: it is how a writing command starts."""
    extra = set(after) - set(before)
    return {k: after[k] for k in before} == before and extra <= {"store/.memconsolidate/lock"}


# --- committed runs planted for `undo` --------------------------------------------------------


def _planted_committed(w: World, blob: str) -> None:
    rules = w.store / "blog" / "rules" / "style.md"
    now = sha(rules.read_bytes())
    w.plant(record(
        status="committed",
        created="2099-01-01T00:00:00.000000+00:00",  # "the latest run"
        touched={"blog/rules/style.md": {"before": sha(w.secret.read_bytes()), "after": now, "states": [now], "blob": blob}},
    ))


@pytest.mark.parametrize("blob", ["../../../../secret.txt", "ABSOLUTE", "before/00000"])
def test_undo_never_restores_a_planted_committed_run(world, blob):
    if blob == "ABSOLUTE":
        blob = str(world.secret)
    if blob == "before/00000":
        (world.runs / RUN / "before").mkdir(parents=True)
        (world.runs / RUN / "before" / "00000").write_bytes(world.secret.read_bytes())
    _planted_committed(world, blob)
    before = world.everything()
    res = cli("undo", str(world.store))
    assert res.returncode == 1
    assert len(res.stderr.strip().splitlines()) == 1
    assert "SECRET" not in (world.store / "blog" / "rules" / "style.md").read_text()
    assert _only_lock_added(before, world.everything())
    named = cli("undo", str(world.store), "--run", RUN)
    assert named.returncode == 1 and RUN in named.stderr
    assert _only_lock_added(before, world.everything())


def test_a_planted_run_id_never_leads_undo_outside(world):
    world.plant(record(status="committed", run_id="../../../outside-run", created="2099-01-01T00:00:00.000000+00:00"))
    (world.tmp / "outside-run").mkdir()
    before = world.everything()
    res = cli("undo", str(world.store))
    assert res.returncode == 1
    assert list((world.tmp / "outside-run").iterdir()) == []
    assert _only_lock_added(before, world.everything())


# --- a run of this store, copied into another: recognisably foreign ---------------------------


class Crash(BaseException):
    pass


def test_a_crashed_run_copied_with_its_store_is_foreign_in_the_copy(tmp_path, monkeypatch):
    from pipeline import journal
    from pipeline.journal import Op, execute

    src = tmp_path / "src"
    src.mkdir()
    (src / "notes.md").write_bytes(b"mine\n")
    monkeypatch.setattr(journal, "_apply_op", lambda *a, **k: (_ for _ in ()).throw(Crash()))
    with pytest.raises(Crash):
        execute(src, [Op("write", "notes.md", data=b"changed\n")], run_id=RUN)
    monkeypatch.undo()
    copy = tmp_path / "copy"
    shutil.copytree(src, copy)
    (copy / "notes.md").write_bytes(b"the copy's own notes\n")
    before = tree(copy)
    from pipeline.journal import recover

    with pytest.raises(Exception, match=RUN):
        recover(copy)
    assert tree(copy) == before
    # in the original the same journal is ours: rolled back as ever
    assert any("rolled back" in m for m in recover(src))
    assert (src / "notes.md").read_bytes() == b"mine\n"


def test_a_tampered_backup_of_our_own_run_is_never_restored(tmp_path):
    from pipeline.errors import RunFailed
    from pipeline.journal import Op, execute, undo

    root = tmp_path / "s"
    root.mkdir()
    (root / "notes.md").write_bytes(b"mine\n")
    record_ = execute(root, [Op("write", "notes.md", data=b"changed\n")], run_id=RUN)
    blob = root / ".memconsolidate" / "runs" / RUN / record_.touched["notes.md"]["blob"]
    blob.write_bytes(b"tampered\n")
    with pytest.raises(RunFailed, match="notes.md"):
        undo(root)
    assert (root / "notes.md").read_bytes() == b"changed\n"


def test_status_names_a_planted_journal_without_acting_on_it(world):
    _delete_outside(world)
    before = world.everything()
    res = cli("status", str(world.store), "--json", "--now", NOW)
    assert res.returncode == 0, res.stderr
    info = json.loads(res.stdout)
    assert info["unfinished_journal"] == []
    assert [j["run"] for j in info["foreign_journal"]] == [RUN]
    assert world.everything() == before


def test_our_own_crashed_run_is_not_rolled_back_through_a_folder_now_leading_outside(tmp_path, monkeypatch):
    from pipeline import journal
    from pipeline.errors import RunFailed
    from pipeline.journal import Op, execute, recover

    root = tmp_path / "s"
    (root / "notes").mkdir(parents=True)
    (root / "notes" / "a.md").write_bytes(b"a\n")
    monkeypatch.setattr(journal, "_apply_op", lambda *a, **k: (_ for _ in ()).throw(Crash()))
    with pytest.raises(Crash):
        execute(root, [Op("write", "notes/a.md", data=b"a2\n")], run_id=RUN)
    monkeypatch.undo()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "a.md").write_bytes(b"outside\n")
    shutil.rmtree(root / "notes")
    os.symlink(outside, root / "notes")  # after the crash, the folder became a way out
    before = tree(tmp_path)
    messages = recover(root, strict=False)
    assert any(RUN in m and "not acting on" in m for m in messages)
    with pytest.raises(RunFailed, match=RUN):
        recover(root)
    assert tree(tmp_path) == before


# ---------------------------------------------------------------------------------------------
# Names planted in our own run folder: never written through, never waited on.

STYLE = "blog/rules/style.md"


def _applied(tmp_path: Path) -> tuple[Path, Path]:
    store = copy_store(FIXTURES / "bank", tmp_path / "store")
    assert apply(store).returncode == 0
    (run,) = (store / ".memconsolidate" / "runs").iterdir()
    return store, run


def test_a_hard_link_planted_as_the_spare_is_never_written_through(tmp_path):
    store, run = _applied(tmp_path)
    big = b"# style\n" + b"keep every word of this file\n" * 20000  # larger than any journal
    (store / STYLE).write_bytes(big)
    os.link(store / STYLE, run / "journal.spare")
    result = cli("undo", str(store))
    assert result.returncode == 0, result.stderr
    assert (store / STYLE).read_bytes() == big
    assert json.loads((run / "journal.json").read_bytes())["status"] == "undone"


def test_a_fifo_planted_as_the_spare_never_hangs_undo(tmp_path):
    store, run = _applied(tmp_path)
    os.mkfifo(run / "journal.spare")
    result = cli("undo", str(store), timeout=60)
    assert result.returncode == 0, result.stderr
    assert json.loads((run / "journal.json").read_bytes())["status"] == "undone"


def test_plan_never_deletes_a_planted_journal_less_folder_with_subfolders(world):
    deep = world.store / ".memconsolidate" / "runs" / RUN / "before" / "00000" / "deep"
    deep.mkdir(parents=True)
    (deep / "important.md").write_bytes(b"notes\n")
    state = tree(world.store / ".memconsolidate")
    result = plan(world.store)
    assert "discarded" not in result.stderr + result.stdout
    assert tree(world.store / ".memconsolidate") == state
    assert apply(world.store).returncode != 0  # not ours: never removed, even by a writing command
    assert (deep / "important.md").read_bytes() == b"notes\n"


def test_plan_leaves_our_own_journal_less_folder_for_a_writing_command(world):
    before = world.store / ".memconsolidate" / "runs" / RUN / "before"
    before.mkdir(parents=True)
    (before / "00000").write_bytes(b"a copy\n")
    state = tree(world.store / ".memconsolidate")
    result = plan(world.store)
    assert result.returncode == 0, result.stderr
    assert tree(world.store / ".memconsolidate") == state
    assert "discarded" not in result.stderr
    written = apply(world.store)
    assert f"discarded run {RUN}" in written.stdout + written.stderr
    assert not before.exists()


def test_a_planted_live_link_to_another_store_file_is_never_put_back(tmp_path, monkeypatch):
    from pipeline import journal
    from pipeline.journal import execute, recover
    from pipeline.journal import Op

    store = copy_store(FIXTURES / "bank", tmp_path / "store")
    style = (store / STYLE).read_bytes()
    learned = store / "blog/rules/learned.md"

    class Crash(BaseException):
        pass

    real = journal._apply_op

    def plant_then_crash(root_, op, *args, **kwargs):
        real(root_, op, *args, **kwargs)
        (run,) = (store / ".memconsolidate" / "runs").iterdir()
        live = run / "live" / "00000"
        live.unlink(missing_ok=True)
        os.link(store / STYLE, live)  # a second name of another store file, under the live name
        raise Crash()

    monkeypatch.setattr(journal, "_apply_op", plant_then_crash)
    old = learned.read_bytes()
    with pytest.raises(Crash):
        execute(store, [Op("write", "blog/rules/learned.md", data=b"new\n", expect=sha(old))], run_id="run-live")
    monkeypatch.undo()
    recover(store)
    assert learned.read_bytes() == old
    assert (store / STYLE).read_bytes() == style
    assert (store / STYLE).stat().st_ino != learned.stat().st_ino


def test_a_new_state_folder_ignores_itself_in_git(tmp_path):
    import subprocess

    from pipeline.lock import state_dir

    repo = tmp_path / "repo"
    (repo / "store").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    folder = state_dir(repo / "store")
    (folder / "runs").mkdir()
    (folder / "runs" / "copy-of-a-memory").write_text("secret memory text\n")
    out = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=all"], capture_output=True, text=True, check=True)
    assert ".memconsolidate" not in out.stdout
    # an existing folder (the user's own .gitignore there, or none) is left as it is
    (folder / ".gitignore").write_text("mine\n")
    state_dir(repo / "store")
    assert (folder / ".gitignore").read_text() == "mine\n"
