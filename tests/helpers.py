"""Small builders shared by the tests."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import traceback
import warnings
from pathlib import Path

from pipeline.model import Memory

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"
REAL_STORES = REPO.parent / "shared" / "real-stores"
NOW = "2026-11-29"
# the real Claude Code stores (conftest's `wild_plans` plans each once, aged as a long-lived checkout sees it)
WILD = REAL_STORES / "wild"
WILD_NOW = "2026-12-01"
WILD_AGE_DAYS = 200  # as scripts/wild_stores.py ages them


def mem(key: str, body: str, **kw) -> Memory:
    kw.setdefault("layout", "bank")
    kw.setdefault("group", "g")
    return Memory(key=key, body=body, **kw)


def run_cli_process(*args: str, cwd: Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    """The command line in its own process (`python -m pipeline`), exactly as a user runs it: for what
    only a separate process shows (a crash, a kill, a lock held by another process, the module entry)."""
    return subprocess.run(
        # UTF-8 whatever the machine's locale: what the command writes (strict: invalid bytes fail)
        [sys.executable, "-m", "pipeline", *args], capture_output=True, encoding="utf-8", cwd=cwd, env=env, timeout=120
    )


FAULT_ENV = "MEMCONSOLIDATE_FAULT_AFTER"
# the journal's fault injection: each ends the process with os._exit at its point
FAULT_ENVS = (FAULT_ENV, "MEMCONSOLIDATE_FAULT_IN_WRITE")
# the journal's counters for them, which a new process starts at zero
FAULT_COUNTERS = ("_steps", "_writes")


def reset_fault_counters() -> dict[str, int]:
    """Set the journal's fault counters to zero, as in a new process; returns what they were."""
    from pipeline import journal

    saved = {name: getattr(journal, name) for name in FAULT_COUNTERS if hasattr(journal, name)}
    for name in saved:
        setattr(journal, name, 0)
    return saved


def run_cli(*args: str, cwd: Path | None = None, env: dict | None = None, typed: str | None = None) -> subprocess.CompletedProcess:
    """The command line run in this process, seen as a subprocess would see it.

    `pipeline.cli.main` runs with its own argv, stdin (empty, not a terminal; or, given `typed`, a
    terminal at which a person types that: apply's prompt reads it), stdout and stderr
    (bytes decoded and newline-translated as `subprocess.run(text=True)` does), environment
    (`env` replaces it, as for a subprocess), working directory and a fresh interpreter's warning
    filters, all restored afterwards. An uncaught exception prints its traceback and exits 1, as
    the interpreter would. A fault-injected run (MEMCONSOLIDATE_FAULT_AFTER, _IN_WRITE) ends its
    process with os._exit, so it always runs in a process of its own (`start_cli`).
    """
    if any(name in (os.environ if env is None else env) for name in FAULT_ENVS):
        return start_cli(*args, cwd=cwd, env=env).wait()
    with _isolated_process_state(args, cwd, env, typed) as output:
        code = _call_main()
    return subprocess.CompletedProcess(["memconsolidate", *args], code, _as_text(output["stdout"]), _as_text(output["stderr"]))


def _as_text(data: bytes) -> str:
    text = data.decode("utf-8")  # strict: invalid UTF-8 fails as `text=True` would
    return text.replace("\r\n", "\n").replace("\r", "\n")


class TerminalStream(io.StringIO):
    """A stream that says it is a terminal: stdin holding what a person types, or where a
    progress bar draws."""

    def isatty(self) -> bool:
        return True


@contextlib.contextmanager
def _isolated_process_state(args: tuple[str, ...], cwd: Path | None, env: dict | None, typed: str | None = None):
    saved = (sys.argv, sys.stdin, sys.stdout, sys.stderr, os.getcwd(), dict(os.environ))
    out, err = io.BytesIO(), io.BytesIO()
    output: dict[str, bytes] = {}
    # The streams a new interpreter would open on pipes: UTF-8 (the machine's C.UTF-8 locale), or
    # what PYTHONIOENCODING says; strict on stdout, backslashreplace on stderr unless it says.
    encoding, _, errors = ((os.environ if env is None else env).get("PYTHONIOENCODING") or "utf-8").partition(":")
    stdout = io.TextIOWrapper(out, encoding=encoding or "utf-8", errors=errors or "strict", newline="\n")
    stderr = io.TextIOWrapper(err, encoding=encoding or "utf-8", errors=errors or "backslashreplace", newline="\n")
    try:
        stdin = io.StringIO() if typed is None else TerminalStream(typed)
        sys.argv, sys.stdin, sys.stdout, sys.stderr = ["memconsolidate", *args], stdin, stdout, stderr
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        if cwd is not None:
            os.chdir(cwd)
        counters = reset_fault_counters()
        with warnings.catch_warnings():
            # a fresh interpreter's filters and output, not pytest's recorder: a stray warning
            # must show on stderr (and fail a one-line check) here as it would in a subprocess
            warnings.resetwarnings()
            for category in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
                warnings.simplefilter("ignore", category)
            warnings.showwarning = _show_warning
            yield output
    finally:
        # Flushed, read, and left open: a logging handler created during the run may hold on to
        # these streams, and must not fail later (what it writes then is lost, as in a subprocess).
        for stream in (stdout, stderr):
            stream.flush()
        output.update(stdout=out.getvalue(), stderr=err.getvalue())
        sys.argv, sys.stdin, sys.stdout, sys.stderr = saved[:4]
        os.chdir(saved[4])
        if os.environ != saved[5]:  # what the run set stays in its "process"
            os.environ.clear()
            os.environ.update(saved[5])
        from pipeline import journal

        for name, value in counters.items():
            setattr(journal, name, value)


@contextlib.contextmanager
def fifo_watch(*fifos: Path):
    """Count the readers that open one of `fifos`, and free each at once (opening a FIFO for
    writing hands a reader blocked on it an immediate end of file), so such a bug fails the test
    instead of hanging it. Yields the list of FIFOs opened: empty means none ever was."""
    import threading

    opened: list[Path] = []
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            for fifo in fifos:
                try:
                    fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)  # ENXIO while nobody reads it
                except OSError:
                    continue
                opened.append(fifo)
                os.close(fd)
            stop.wait(0.005)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        yield opened
    finally:
        stop.set()
        watcher.join()


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))


def _call_main() -> int:
    from pipeline import cli

    reuse_the_click_command()
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


_click_commands: dict[int, tuple[object, object]] = {}


def reuse_the_click_command() -> None:
    """Build the click command from the typer app once per process, not at every run.

    `app()` rebuilds it from the command functions' signatures and type hints each time (15-50 ms,
    most of an in-process run of the CLI); a process of the command line builds it once, the tests'
    runs hundreds of times. The build depends on nothing but the app (defaults, environment
    variables and the terminal are read when a command is parsed and run, not here), so the
    command a run gets is the one a fresh process would build.
    """
    import typer.main

    if getattr(typer.main.get_command, "reused", False):
        return
    build = typer.main.get_command

    def get_command(typer_instance):
        built = _click_commands.get(id(typer_instance))
        if built is None or built[0] is not typer_instance:
            built = _click_commands[id(typer_instance)] = (typer_instance, build(typer_instance))
        return built[1]

    get_command.reused = True  # type: ignore[attr-defined]
    typer.main.get_command = get_command


def plan_json(path: Path, *extra: str) -> dict:
    res = run_cli("plan", str(path), "--json", "--now", NOW, *extra)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def apply_json(root: Path, *extra: str) -> dict:
    """`apply --yes --json` with no model on NOW: what it applied, skipped and noted."""
    res = run_cli("apply", str(root), "--now", NOW, "--model", "none", "--yes", "--json", *extra)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def kinds(items: list[dict]) -> list[tuple[str, tuple[str, ...]]]:
    return [(i["kind"], tuple(i["targets"])) for i in items]


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under `root` with its bytes, except the tool's own `.memconsolidate/` folder."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if rel.split("/")[0] in (".memconsolidate", ".git"):
            continue
        if p.is_file() and not p.is_symlink():
            out[rel] = p.read_bytes()
        elif p.is_dir():
            out[rel + "/"] = b""
    return out


# Files the claude fixture's memories name that its repository no longer has: its git history shows
# them deleted, which is what lets staleness prune without asking (issue 11, item 9).
CLAUDE_DELETED = (
    "src/api/legacy_routes.ts", "src/billing/invoice.ts", "src/billing/tax.ts", "src/cache/redis.ts",
    "src/errors/handler.ts", "src/export/csv_job.ts", "src/payments/README.md", "src/payments/gateway.ts",
    "src/queue/worker.ts", "src/review/checklist.md", "src/search/indexer.ts", "src/utils/date_helpers.ts",
)


def git(root: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.invalid", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@example.invalid", GIT_AUTHOR_DATE="2026-01-01T00:00:00Z",
               GIT_COMMITTER_DATE="2026-01-01T00:00:00Z")
    out = subprocess.run(["git", *args], cwd=root, env=env, capture_output=True, text=True, check=True)
    return out.stdout


def commit_all(root: Path, message: str) -> None:
    """Everything in the work tree committed (a repository made first when there is none)."""
    if not (root / ".git").exists():
        git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)


def with_git_history(root: Path, deleted: tuple[str, ...] | list[str] = CLAUDE_DELETED) -> Path:
    """Make `root` a git work tree whose history held `deleted` (committed, then removed).

    The commits are deterministic (fixed author, committer and dates), so for a tree it has seen
    before (same files, same bytes, same `deleted`) the `.git` folder built then is copied in: the
    same repository, without five more `git` processes per test."""
    key = _tree_key(root, tuple(deleted))
    template = _git_templates.get(key) if key is not None else None
    if template is not None:
        shutil.copytree(template, root / ".git", symlinks=True)
        return root
    git(root, "init", "-q", "-b", "main")
    for rel in deleted:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"// {rel}\n", encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "before")
    git(root, "rm", "-q", *deleted)
    git(root, "commit", "-q", "-m", "delete")
    if key is not None:
        _git_templates[key] = shutil.copytree(root / ".git", _git_template_root() / str(len(_git_templates)), symlinks=True)
    return root


_git_templates: dict[str, Path] = {}
_git_template_folder: list[Path] = []


def _git_template_root() -> Path:
    if not _git_template_folder:
        import atexit
        import tempfile

        _git_template_folder.append(Path(tempfile.mkdtemp(prefix="mc-git-templates-")))
        atexit.register(shutil.rmtree, _git_template_folder[0], True)
    return _git_template_folder[0]


def _tree_key(root: Path, deleted: tuple[str, ...]) -> str | None:
    """What `git add -A` in `root` would commit: every path, its kind, mode and bytes (a symlink's
    target), and the files to delete. None (build it afresh) when `root` already holds a `.git`
    or a file cannot be read."""
    import hashlib

    digest = hashlib.sha256(json.dumps(deleted).encode())
    try:
        for path in sorted(root.rglob("*")):
            rel = path.relative_to(root).as_posix()
            if rel.split("/")[0] == ".git":
                return None
            info = path.lstat()
            digest.update(f"\0{rel}\0{info.st_mode:o}\0".encode("utf-8", "surrogateescape"))
            if path.is_symlink():
                digest.update(os.readlink(path).encode("utf-8", "surrogateescape"))
            elif path.is_file():
                digest.update(path.read_bytes())
    except OSError:
        return None
    return digest.hexdigest()


def copy_store(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, symlinks=True)
    return dst


def copy_real(src: Path, dst: Path) -> Path:
    """A writable copy of a store under ../shared/real-stores (read in place there, read-only)."""
    shutil.copytree(src, dst, symlinks=True)
    for folder, _dirs, names in os.walk(dst):
        os.chmod(folder, 0o755)
        for name in names:
            path = Path(folder) / name
            if not path.is_symlink():
                os.chmod(path, 0o644)
    return dst


# The zylos store the tests use, assembled from zylos-core's examples (MIT, see
# ../shared/real-stores/SOURCES.md): store path <- skills/zylos-memory/examples/<file>.
ZYLOS_EXAMPLES = {
    "identity.md": "identity.md",
    "state.md": "state.md",
    "references.md": "references.md",
    "users/howard/profile.md": "user-profile.md",
    "reference/decisions.md": "decisions.md",
    "reference/projects.md": "projects.md",
    "reference/preferences.md": "preferences.md",
    "reference/ideas.md": "ideas.md",
    "sessions/current.md": "session-log.md",
}


def real_zylos_store(dst: Path) -> Path:
    examples = REAL_STORES / "zylos" / "skills" / "zylos-memory" / "examples"
    for path, example in ZYLOS_EXAMPLES.items():
        (dst / path).parent.mkdir(parents=True, exist_ok=True)
        (dst / path).write_bytes((examples / example).read_bytes())
    return dst


def files(root: Path) -> dict[str, bytes]:
    """`snapshot` without the folder entries: every file and its bytes."""
    return {k: v for k, v in snapshot(root).items() if not k.endswith("/")}


def kill_undo_at_every_step(prepare, check_again=lambda again: None) -> int:
    """Kill `undo` at fault step 1, 2, ... until it runs to its end, each time on a fresh store from
    `prepare(step)` (a store with a run applied, and the snapshot it must have after the undo). After
    each kill a second `undo` must finish it (`check_again` looks at its output) and the store must be
    exactly that snapshot. Returns how many steps the undo passed."""
    step = 1
    while True:
        store, expected = prepare(step)
        killed = run_cli("undo", str(store), env={**os.environ, FAULT_ENV: str(step)})
        if killed.returncode != 0:
            assert killed.returncode == 99, killed.stderr
            again = run_cli("undo", str(store))
            assert again.returncode == 0, again.stderr
            check_again(again)
        assert snapshot(store) == expected, f"kill at undo step {step}"
        if killed.returncode == 0:  # more steps than the undo has
            return step - 1
        step += 1


def kill_apply_then_recover(store: Path, step: int, env: dict | None = None) -> tuple[dict, dict]:
    """Kill `apply` at fault step `step` (it exits 99), let the next `plan` recover the store, and
    check it is exactly as before; returns (the snapshot before, the snapshot right after the kill)."""
    before = snapshot(store)
    base = dict(env or os.environ)
    res = run_cli("apply", str(store), "--now", NOW, "--model", "none", "--yes", env={**base, FAULT_ENV: str(step)})
    assert res.returncode == 99, res.stderr
    killed = snapshot(store)
    nxt = run_cli("plan", str(store), "--now", NOW, "--model", "none", "--json", env=base)
    assert nxt.returncode == 0, nxt.stderr
    assert "rolled back" in nxt.stderr or "interrupted before any change" in nxt.stderr
    assert snapshot(store) == before
    return before, killed


# --- the CLI in a process of its own, cheaply ---------------------------------------------------
# A crash, a SIGKILL or a lock held by another process needs a real second process. Each one is
# forked from a fork server that imported the pipeline once (a fresh interpreter per run spends
# most of its time importing), so it is a separate process with its own memory, file descriptors,
# locks and exit, started from a clean single-threaded parent rather than from pytest.

# fork_preload: these, and the click command built (see reuse_the_click_command)
_FORK_PRELOAD = ["helpers", "pipeline.cli", "pipeline.workflow", "pipeline.report", "pipeline.journal", "fork_preload"]
_fork_context = None


def _forkserver():
    global _fork_context
    if _fork_context is None:
        import multiprocessing

        _fork_context = multiprocessing.get_context("forkserver")
        _fork_context.set_forkserver_preload(_FORK_PRELOAD)
    return _fork_context


def stop_forkserver() -> None:
    """End the fork server and reap it, so the CPU time of every run forked from it is counted
    as this process's (by `time`, by rusage) rather than lost with an orphan."""
    global _fork_context
    if _fork_context is None:
        return
    end_children()
    from multiprocessing import forkserver

    server = forkserver._forkserver
    pid, alive = getattr(server, "_forkserver_pid", None), getattr(server, "_forkserver_alive_fd", None)
    if pid is not None and alive is not None:
        os.close(alive)  # the server exits when no client holds this pipe any more
        os.waitpid(pid, 0)
        server._forkserver_pid = server._forkserver_alive_fd = server._forkserver_address = None
    _fork_context = None


class Child:
    """A CLI run in its own process (from `start_cli`). With `report_steps`, it reports each journal
    fault step as it passes it; `hold_at=N` also stops it right after step N until `release()`."""

    def __init__(self, process, steps, control, out_path: Path, err_path: Path, args: tuple[str, ...]) -> None:
        self.process, self._steps, self._control = process, steps, control
        self._out, self._err, self.args = out_path, err_path, args

    def next_step(self) -> int | None:
        """The next step the run reports (blocking), or None once it has ended."""
        try:
            return self._steps.recv()
        except EOFError:
            return None

    def wait_for_step(self, step: int) -> bool:
        """Block until the run has passed `step`; False if it ended first."""
        while (seen := self.next_step()) is not None:
            if seen >= step:
                return True
        return False

    def release(self) -> None:
        self._control.send("go")

    def kill(self) -> None:
        """SIGKILL, unless the run has already ended (its parent, the fork server, reaps it at once)."""
        try:
            os.kill(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def wait(self, timeout: float = 120) -> subprocess.CompletedProcess:
        self.process.join(timeout)
        if self.process.is_alive():
            self.kill()
            self.process.join()
            raise AssertionError(f"memconsolidate {' '.join(self.args)} did not end within {timeout} s")
        for conn in (self._steps, self._control):
            if conn is not None:
                conn.close()
        # a run killed early may not have opened them yet: it printed nothing
        out, err = (p.read_bytes() if p.exists() else b"" for p in (self._out, self._err))
        shutil.rmtree(self._out.parent, ignore_errors=True)
        return subprocess.CompletedProcess(["memconsolidate", *self.args], self.process.exitcode, _as_text(out), _as_text(err))


def start_cli(*args: str, cwd: Path | None = None, env: dict | None = None, report_steps: bool = False,
              hold_at: int | None = None, address_space: int | None = None) -> Child:
    """Start the command line in a process of its own (see above); `.wait()` gives what
    `subprocess.run(text=True)` would: returncode (negative for a signal), stdout, stderr.
    `address_space` caps the process's memory (RLIMIT_AS, bytes) before the command starts."""
    import tempfile

    ctx = _forkserver()
    folder = Path(tempfile.mkdtemp(prefix="mc-child-"))
    out_path, err_path = folder / "stdout", folder / "stderr"
    steps_r = steps_w = control_r = control_w = None
    if report_steps or hold_at is not None:
        steps_r, steps_w = ctx.Pipe(duplex=False)
        control_r, control_w = ctx.Pipe(duplex=False)
    process = ctx.Process(
        target=_child_main,
        args=(args, dict(os.environ if env is None else env), str(cwd or os.getcwd()), str(out_path), str(err_path),
              steps_w, control_r, hold_at, address_space),
        daemon=True,
    )
    process.start()
    for conn in (steps_w, control_r):  # the child has its own copies: EOF comes when it ends
        if conn is not None:
            conn.close()
    child = Child(process, steps_r, control_w, out_path, err_path, args)
    _children.append(child)
    return child


_children: list[Child] = []


def end_children() -> None:
    """Kill and reap every child a test started and left running (a failed assertion before its
    kill or release): none may outlive its test, hold a store's lock or keep the fork server up."""
    while _children:
        child = _children.pop()
        if child.process.is_alive():
            child.kill()
        child.process.join()
        shutil.rmtree(child._out.parent, ignore_errors=True)


def _child_main(args, env, cwd, out_path, err_path, steps, control, hold_at, address_space) -> None:
    """In the child: the environment, folder, output files and argv of a fresh `memconsolidate` run."""
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    for fd, path in ((1, out_path), (2, err_path)):
        target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(target, fd)
        os.close(target)
    sys.argv = ["memconsolidate", *args]
    if address_space is not None:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
    from pipeline import cli, journal

    reuse_the_click_command()
    reset_fault_counters()

    def hold() -> None:
        try:
            control.recv()  # until release() (or the test ends: EOF)
        except EOFError:
            pass

    if steps is not None:
        fault_step = journal._step

        def reporting_step() -> None:
            fault_step()  # the product's own: may sleep (FAULT_DELAY_MS) or exit (FAULT_AFTER)
            steps.send(journal._steps)
            if journal._steps == hold_at:
                hold()

        journal._step = reporting_step
    cli.main()


# --- how work grows, without a clock ------------------------------------------------------------


def cpu_growth(run, small, large, rounds: int = 3) -> float:
    """CPU time of `run(large)` over that of `run(small)`, the fastest of `rounds` interleaved runs
    each: a ratio of this thread's CPU seconds, so neither a loaded machine (wall time) nor the
    machine's speed moves it much. Linear work on an input 4x the size gives about 4 (less, with
    fixed costs); quadratic work about 16. For work inside one C call (a regex, a copy), where
    `calls_made` sees nothing."""
    best = {id(small): float("inf"), id(large): float("inf")}
    for _ in range(rounds):
        for arg in (small, large):
            start = time.thread_time()
            run(arg)
            best[id(arg)] = min(best[id(arg)], time.thread_time() - start)
    return best[id(large)] / max(best[id(small)], 1e-6)


def calls_made(run) -> int:
    """How many Python and C function calls `run()` makes: a deterministic measure of work."""
    count = 0

    def profile(frame, event, arg) -> None:
        nonlocal count
        if event in ("call", "c_call"):
            count += 1

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return count
