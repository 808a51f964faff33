import os

import pytest

# litellm fetches a price map from the network at import unless told otherwise.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.pop("MEMCONSOLIDATE_MODEL", None)


@pytest.fixture(autouse=True)
def _no_child_outlives_its_test():
    from helpers import end_children

    yield
    end_children()


def pytest_sessionfinish(session):
    from helpers import stop_forkserver

    stop_forkserver()


# --- MEMCONSOLIDATE_TEST_COSTS=1: what each test costs ------------------------------------------
# Reports, at the end of the session, the child processes the suite started (the CLI runs
# in-process; this shows where processes are still spawned) and the tests that used the most CPU
# (this process and its children), the figure that matters on a shared machine.

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
        write(f"subprocesses started: {sum(_spawned.values())}")
        for test, n in _spawned.most_common():
            write(f"  {n:4d} {test}")
        write(f"CPU seconds in tests: {sum(_cpu.values()):.1f}; the 40 costliest:")
        for test, seconds in _cpu.most_common(40):
            write(f"  {seconds:6.2f} {test}")
