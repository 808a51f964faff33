import os

import pytest

# litellm fetches a price map from the network at import unless told otherwise.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.pop("MEMCONSOLIDATE_MODEL", None)

from helpers import FIXTURES, copy_store  # noqa: E402
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
