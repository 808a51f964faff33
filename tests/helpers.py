"""Small builders shared by the tests."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from pipeline.model import Memory

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"
REAL_STORES = REPO.parent / "shared" / "real-stores"
NOW = "2026-11-29"


def mem(key: str, body: str, **kw) -> Memory:
    kw.setdefault("layout", "bank")
    kw.setdefault("group", "g")
    return Memory(key=key, body=body, **kw)


def run_cli(*args: str, cwd: Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    """The installed command line in a subprocess, exactly as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "pipeline", *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=120
    )


def plan_json(path: Path, *extra: str) -> dict:
    res = run_cli("plan", str(path), "--json", "--now", NOW, *extra)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def kinds(items: list[dict]) -> list[tuple[str, tuple[str, ...]]]:
    return [(i["kind"], tuple(i["targets"])) for i in items]


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under `root` with its bytes, except the tool's own `.memconsolidate/` folder."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if rel.split("/")[0] == ".memconsolidate":
            continue
        if p.is_file() and not p.is_symlink():
            out[rel] = p.read_bytes()
        elif p.is_dir():
            out[rel + "/"] = b""
    return out


def copy_store(src: Path, dst: Path) -> Path:
    import shutil

    shutil.copytree(src, dst, symlinks=True)
    return dst


def files(root: Path) -> dict[str, bytes]:
    """`snapshot` without the folder entries: every file and its bytes."""
    return {k: v for k, v in snapshot(root).items() if not k.endswith("/")}


def kill_apply_then_recover(store: Path, step: int, env: dict | None = None) -> tuple[dict, dict]:
    """Kill `apply` at fault step `step` (it exits 99), let the next `plan` recover the store, and
    check it is exactly as before; returns (the snapshot before, the snapshot right after the kill)."""
    import os

    before = snapshot(store)
    base = dict(env or os.environ)
    cmd = [sys.executable, "-m", "pipeline", "apply", str(store), "--now", NOW, "--model", "none", "--yes"]
    res = subprocess.run(cmd, env={**base, "MEMCONSOLIDATE_FAULT_AFTER": str(step)}, capture_output=True, text=True, timeout=120)
    assert res.returncode == 99, res.stderr
    killed = snapshot(store)
    nxt = run_cli("plan", str(store), "--now", NOW, "--model", "none", "--json", env=base)
    assert nxt.returncode == 0, nxt.stderr
    assert "rolled back" in nxt.stderr or "interrupted before any change" in nxt.stderr
    assert snapshot(store) == before
    return before, killed
