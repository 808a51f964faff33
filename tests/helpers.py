"""Small builders shared by the tests."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import traceback
import warnings
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


def run_cli_process(*args: str, cwd: Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    """The command line in its own process (`python -m pipeline`), exactly as a user runs it: for what
    only a separate process shows (a crash, a kill, a lock held by another process, the module entry)."""
    return subprocess.run(
        [sys.executable, "-m", "pipeline", *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=120
    )


FAULT_ENV = "MEMCONSOLIDATE_FAULT_AFTER"


def run_cli(*args: str, cwd: Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    """The command line run in this process, seen as a subprocess would see it.

    `pipeline.cli.main` runs with its own argv, stdin (empty, not a terminal), stdout and stderr
    (bytes decoded and newline-translated as `subprocess.run(text=True)` does), environment
    (`env` replaces it, as for a subprocess), working directory and a fresh interpreter's warning
    filters, all restored afterwards. An uncaught exception prints its traceback and exits 1, as
    the interpreter would. A fault-injected run (MEMCONSOLIDATE_FAULT_AFTER) ends its process
    with os._exit, so it always runs in its own process.
    """
    if FAULT_ENV in (os.environ if env is None else env):
        return run_cli_process(*args, cwd=cwd, env=env)
    with _isolated_process_state(args, cwd, env) as (out, err):
        code = _call_main()
    return subprocess.CompletedProcess(["memconsolidate", *args], code, _as_text(out), _as_text(err))


def _as_text(buffer: io.BytesIO) -> str:
    text = buffer.getvalue().decode("utf-8")  # strict: invalid UTF-8 fails as `text=True` would
    return text.replace("\r\n", "\n").replace("\r", "\n")


@contextlib.contextmanager
def _isolated_process_state(args: tuple[str, ...], cwd: Path | None, env: dict | None):
    from pipeline import journal

    saved = (sys.argv, sys.stdin, sys.stdout, sys.stderr, os.getcwd(), dict(os.environ), journal._steps)
    out, err = io.BytesIO(), io.BytesIO()
    stdout, stderr = (io.TextIOWrapper(b, encoding="utf-8", newline="\n") for b in (out, err))
    try:
        sys.argv, sys.stdin, sys.stdout, sys.stderr = ["memconsolidate", *args], io.StringIO(), stdout, stderr
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        if cwd is not None:
            os.chdir(cwd)
        journal._steps = 0  # the fault-step counter a new process starts at zero
        with warnings.catch_warnings():
            # a fresh interpreter's filters and output, not pytest's recorder: a stray warning
            # must show on stderr (and fail a one-line check) here as it would in a subprocess
            warnings.resetwarnings()
            for category in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
                warnings.simplefilter("ignore", category)
            warnings.showwarning = _show_warning
            yield out, err
    finally:
        for stream in (stdout, stderr):
            stream.flush()
            stream.detach()
        sys.argv, sys.stdin, sys.stdout, sys.stderr = saved[:4]
        os.chdir(saved[4])
        if os.environ != saved[5]:  # what the run set stays in its "process"
            os.environ.clear()
            os.environ.update(saved[5])
        journal._steps = saved[6]


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))


def _call_main() -> int:
    from pipeline import cli

    try:
        cli.main()
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        sys.stderr.write(f"{exc.code}\n")
        return 1
    except Exception:
        traceback.print_exc(file=sys.stderr)
        return 1
    return 0


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
    assert "rolled back" in nxt.stderr or "discarded" in nxt.stderr
    assert snapshot(store) == before
    return before, killed
