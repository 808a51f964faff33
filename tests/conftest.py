import datetime as dt
import importlib.util
import json
import os
from pathlib import Path

import pytest
from hypothesis import settings as hypothesis_settings

# Tests check correctness, not wall time: hypothesis's default 200 ms deadline per example failed a
# property test now and then on a loaded machine (a first example paying for imports and caches).
hypothesis_settings.register_profile("memconsolidate", deadline=None)
hypothesis_settings.load_profile("memconsolidate")

# litellm fetches a price map from the network at import unless told otherwise.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.pop("MEMCONSOLIDATE_MODEL", None)

from helpers import FIXTURES, REPO, WILD, WILD_AGE_DAYS, WILD_NOW, copy_store, run_cli  # noqa: E402
from openai_server import fake_openai  # noqa: E402,F401 - the local OpenAI server, for every test module


# --- what every test gets -----------------------------------------------------------------------

_cache_dirs = iter(range(1, 1_000_000))


@pytest.fixture(autouse=True)
def _isolated(monkeypatch, tmp_path_factory):
    """Each test starts as a fresh process would: no MEMCONSOLIDATE_* setting from the shell that
    runs pytest, a reply cache of its own (never ~/.cache, never another test's), the journal's
    fault counters at zero; and no process it started outlives it."""
    from helpers import end_children, reset_fault_counters

    for name in list(os.environ):
        if name.startswith("MEMCONSOLIDATE_") and not name.startswith("MEMCONSOLIDATE_TEST_"):
            monkeypatch.delenv(name)
    # outside tmp_path, which some tests use as the store itself; created only if a run caches
    cache = tmp_path_factory.getbasetemp() / "reply-caches" / str(next(_cache_dirs))
    monkeypatch.setenv("MEMCONSOLIDATE_CACHE_DIR", str(cache))
    reset_fault_counters()
    yield
    end_children()


@pytest.fixture
def fixture_store(tmp_path):
    """`fixture_store("crux")`: a copy of fixtures/crux at tmp_path/crux (symlinks kept), to change at will."""

    def copy(layout: str, name: str | None = None):
        return copy_store(FIXTURES / layout, tmp_path / (name or layout))

    return copy


@pytest.fixture
def bank_store(fixture_store):
    return fixture_store("bank")


# --- the real Claude Code stores in ../shared/real-stores/wild/, planned once ----------------------

@pytest.fixture(scope="session")
def wild_plans(tmp_path_factory) -> dict[str, tuple[Path, dict | str]]:
    """Each wild store by name: (its copy, aged as a long-lived checkout sees it by
    scripts/wild_stores.py's aged_copy and made writable, the shared copies being read-only; its
    stub plan as JSON, or "exit N: stderr"). Built once for the session, for every test that judges
    or rebuilds them; a test that changes a store copies it first (`copy_store` keeps the mtimes)."""
    spec = importlib.util.spec_from_file_location("wild_stores", REPO / "scripts" / "wild_stores.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    when = (dt.datetime.fromisoformat(WILD_NOW) - dt.timedelta(days=WILD_AGE_DAYS)).timestamp()
    tmp = tmp_path_factory.mktemp("wild")
    # set up before any test's own isolation (a wider scope): no MEMCONSOLIDATE_* setting from the
    # shell, and no reply cache at all
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMCONSOLIDATE_")}
    out: dict[str, tuple[Path, dict | str]] = {}
    for src in sorted(p for p in WILD.iterdir() if p.is_dir()):
        store = tmp / src.name
        script.aged_copy(src, store, when)
        for folder, dirs, names in os.walk(store):
            for name in dirs + names:
                path = Path(folder) / name
                if not path.is_symlink():
                    os.chmod(path, 0o755 if path.is_dir() else 0o644)  # the mtime stays
        res = run_cli("plan", str(store), "--json", "--model", "stub", "--now", WILD_NOW, "--no-cache", env=env)
        out[src.name] = (store, json.loads(res.stdout) if res.returncode == 0 else f"exit {res.returncode}: {res.stderr.strip()}")
    return out


def pytest_sessionfinish(session):
    from helpers import stop_forkserver

    stop_forkserver()


# --- MEMCONSOLIDATE_TEST_COSTS=1: what each test costs ------------------------------------------
# Reports, at the end of the session, the processes the suite started (the CLI runs in-process;
# this shows where processes are still started: subprocesses, and runs forked from the fork
# server) and the CPU time per file and test (this process and the subprocesses it waited for),
# the figure that matters on a shared machine.

if os.environ.get("MEMCONSOLIDATE_TEST_COSTS"):
    import resource
    import subprocess
    from collections import Counter

    _spawned: Counter[str] = Counter()
    _cpu: Counter[str] = Counter()
    _popen_init = subprocess.Popen.__init__

    def _counting_init(self, *args, **kwargs):
        _spawned[os.environ.get("PYTEST_CURRENT_TEST", "?").split(" ")[0]] += 1
        _popen_init(self, *args, **kwargs)

    subprocess.Popen.__init__ = _counting_init  # type: ignore[method-assign]

    import multiprocessing.process

    _process_start = multiprocessing.process.BaseProcess.start

    def _counting_start(self):
        _spawned[os.environ.get("PYTEST_CURRENT_TEST", "?").split(" ")[0] + " (forked)"] += 1
        _process_start(self)

    multiprocessing.process.BaseProcess.start = _counting_start  # type: ignore[method-assign]

    def _cpu_seconds() -> float:
        own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(item, nextitem):
        start = _cpu_seconds()
        yield
        _cpu[item.nodeid] += _cpu_seconds() - start

    def pytest_terminal_summary(terminalreporter):
        write = terminalreporter.write_line
        own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        write(f"CPU seconds: {own.ru_utime + own.ru_stime:.1f} in pytest, {children.ru_utime + children.ru_stime:.1f} in "
              "the processes it started (subprocesses, the fork server and the runs forked from it)")
        write(f"processes started: {sum(_spawned.values())}")
        for test, n in _spawned.most_common():
            write(f"  {n:4d} {test}")
        write(f"CPU seconds in tests: {sum(_cpu.values()):.1f} (runs forked from the fork server not included); by file:")
        by_file: Counter[str] = Counter()
        for test, seconds in _cpu.items():
            by_file[test.split("::")[0]] += seconds
        for name, seconds in by_file.most_common():
            write(f"  {seconds:6.2f} {name}")
        write("the 40 costliest tests:")
        for test, seconds in _cpu.most_common(40):
            write(f"  {seconds:6.2f} {test}")
