import os

# litellm fetches a price map from the network at import unless told otherwise.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.pop("MEMCONSOLIDATE_MODEL", None)

# MEMCONSOLIDATE_TEST_COUNT_SUBPROCESSES=1 reports how many child processes the suite started (the
# suite is kept fast by running the CLI in-process; this shows where processes are still spawned).
if os.environ.get("MEMCONSOLIDATE_TEST_COUNT_SUBPROCESSES"):
    import subprocess
    from collections import Counter

    _spawned: Counter[str] = Counter()
    _popen_init = subprocess.Popen.__init__

    def _counting_init(self, *args, **kwargs):
        test = os.environ.get("PYTEST_CURRENT_TEST", "?").split(" ")[0]
        _spawned[test] += 1
        _popen_init(self, *args, **kwargs)

    subprocess.Popen.__init__ = _counting_init  # type: ignore[method-assign]

    def pytest_terminal_summary(terminalreporter):
        terminalreporter.write_line(f"subprocesses started: {sum(_spawned.values())}")
        for test, n in _spawned.most_common():
            terminalreporter.write_line(f"  {n:4d} {test}")
