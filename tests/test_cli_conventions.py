"""Conventions: --version, -h, `help CMD`, one-line usage errors off a terminal, exit codes and
environment in --help, --json on undo, --quiet/--verbose, the cron line, the lock note, a store
that cannot be written, progress bars that never read like success after Ctrl-C, eval data."""

import errno
import fcntl
import json
import os
import re

import pytest

from helpers import NOW, TerminalStream, run_cli
from pipeline import __version__


def test_version_and_short_help():
    res = run_cli("--version")
    assert res.returncode == 0 and res.stdout == f"memconsolidate {__version__}\n"
    short, long = run_cli("-h"), run_cli("--help")
    assert short.returncode == 0 and short.stdout == long.stdout


def test_help_names_exit_codes_environment_config_and_completion():
    text = " ".join(run_cli("--help").stdout.split())
    assert "Exit codes: 0 success" in text and "2 bad usage" in text
    for var in ("MEMCONSOLIDATE_MODEL", "MEMCONSOLIDATE_CACHE_DIR", "MEMCONSOLIDATE_EVALS", "XDG_CONFIG_HOME"):
        assert var in text
    assert "--install-completion" in text and ".memconsolidate.toml" in text


def test_help_command_shows_a_commands_help():
    res = run_cli("help", "plan")
    assert res.returncode == 0 and res.stdout.strip() == run_cli("plan", "--help").stdout.strip()
    bad = run_cli("help", "nope")
    assert bad.returncode == 2 and "commands: plan, apply" in bad.stderr


def test_json_help_says_what_each_command_prints():
    texts = {}
    for cmd in ("plan", "apply", "undo", "status", "runs", "run", "eval"):
        out = " ".join(run_cli(cmd, "--help").stdout.split())
        texts[cmd] = re.search(r"--json (.*?) as JSON", out).group(1)
    assert len(set(texts.values())) == len(texts), texts


@pytest.mark.parametrize("args", [("plan",), ("plan", ".", "--bogus"), ("nope",), ("apply", ".", "--max-calls", "x")])
def test_usage_errors_are_one_line_off_a_terminal(args):
    res = run_cli(*args)
    assert res.returncode == 2 and len(res.stderr.splitlines()) == 1, res.stderr
    assert res.stderr.startswith("memconsolidate: ") and "--help" in res.stderr


def test_undo_json(bank_store):
    applied = json.loads(run_cli("apply", str(bank_store), "--now", NOW, "--yes", "--json").stdout)
    res = run_cli("undo", str(bank_store), "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["undone"] == applied["run_id"] and out["run_id"] and sorted(out["restored"]) == sorted(applied["changed"])


def test_quiet_and_verbose(bank_store):
    quiet = run_cli("apply", str(bank_store), "--now", NOW, "--yes", "--quiet")
    assert quiet.returncode == 0 and quiet.stdout == "" and quiet.stderr == ""
    loud = run_cli("plan", str(bank_store), "--now", NOW, "--verbose")
    assert "stage reorder ended: " in loud.stderr
    plain = run_cli("plan", str(bank_store), "--now", NOW)
    assert plain.stderr == ""  # off a terminal: nothing but warnings


def test_run_writes_one_line_for_a_cron_log(bank_store):
    res = run_cli("run", str(bank_store), "--now", NOW)
    assert res.returncode == 0, res.stderr
    (line,) = res.stdout.splitlines()
    m = re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ (\S+) model=stub applied=(\d+) errors=0 run=(\S+)", line)
    assert m and m.group(1) == str(bank_store) and int(m.group(2)) > 0
    assert (bank_store / ".memconsolidate" / "runs" / m.group(3)).is_dir()
    again = run_cli("run", str(bank_store), "--now", NOW, "--if-due")
    assert again.returncode == 0 and re.fullmatch(r"\S+ \S+ model=stub skipped: not due: .*\n", again.stdout)


def test_run_if_due_while_another_run_holds_the_lock_is_a_quiet_note(bank_store):
    state = bank_store / ".memconsolidate"
    state.mkdir()
    fd = os.open(state / "lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # another open file: it conflicts even here
        os.write(fd, b"4242\n")
        res = run_cli("run", str(bank_store), "--now", NOW, "--if-due")
        assert res.returncode == 0 and res.stderr == "", res.stderr
        (line,) = res.stdout.splitlines()
        assert "skipped: another memconsolidate run is working" in line and "4242" in line
        assert run_cli("run", str(bank_store), "--now", NOW).returncode == 1  # asked to run: it failed
    finally:
        os.close(fd)


def _read_only(monkeypatch, store):
    """The store's file system refuses every new folder and every file opened for writing (EROFS),
    as a read-only mount does; simulated so the test bites as root too."""
    real_mkdir, real_open = os.mkdir, os.open

    def mkdir(path, *a, **k):
        if os.fspath(path).startswith(str(store)):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), os.fspath(path))
        return real_mkdir(path, *a, **k)

    def open_(path, flags, *a, **k):
        if os.fspath(path).startswith(str(store)) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), os.fspath(path))
        return real_open(path, flags, *a, **k)

    monkeypatch.setattr(os, "mkdir", mkdir)
    monkeypatch.setattr(os, "open", open_)


@pytest.mark.parametrize("state_exists", [False, True])
@pytest.mark.parametrize("command", ["apply", "run", "undo"])
def test_read_only_store_is_named_with_its_reason(bank_store, monkeypatch, state_exists, command):
    if state_exists:
        (bank_store / ".memconsolidate").mkdir()
    _read_only(monkeypatch, bank_store)
    args = (command, str(bank_store)) + (("--now", NOW, "--yes") if command == "apply" else ("--now", NOW) if command == "run" else ())
    res = run_cli(*args)
    assert res.returncode == 2, (res.returncode, res.stderr)
    assert res.stderr == f"memconsolidate: cannot write to {bank_store}: read-only file system\n"


class _Interrupted:
    name = "reorder"

    def applies(self, corpus, settings):
        return True

    def run(self, ctx, outcome):
        ctx.progress(1, 3)
        raise KeyboardInterrupt


def test_progress_bars_at_a_terminal_and_nothing_like_success_after_ctrl_c(bank_store, monkeypatch):
    import pipeline.render.progress as progress
    import pipeline.stages as stages
    from pipeline.render.progress import StageBars

    plain = run_cli("plan", str(bank_store), "--now", NOW, "--no-cache")
    terminal = TerminalStream()
    monkeypatch.setattr(progress, "stage_progress", lambda stream, **k: StageBars(terminal))
    ok = run_cli("plan", str(bank_store), "--now", NOW, "--no-cache")
    assert ok.returncode == 0 and ok.stdout == plain.stdout  # calls in waves: the same plan, the same counts
    shown = terminal.getvalue()
    assert re.search(r"reorder .*1/1.*batches · 1 call, 0 cache hits", shown), shown
    assert "conflicts" in shown and "rules" in shown

    terminal.seek(0)
    terminal.truncate()
    monkeypatch.setattr(stages, "all_stages", lambda: [_Interrupted()])
    res = run_cli("plan", str(bank_store), "--now", NOW)
    assert res.returncode == 130 and res.stdout == "" and res.stderr == "memconsolidate: interrupted\n"
    shown = terminal.getvalue()
    assert "reorder interrupted" in shown and "1/3" in shown
    final = shown.rsplit("\r", 1)[-1]
    assert "3/3" not in shown and "done" not in final.lower()


def test_eval_outside_a_checkout_says_where_it_looked(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMCONSOLIDATE_EVALS", str(tmp_path / "nowhere"))
    res = run_cli("eval", "--stage", "conflict")
    assert res.returncode == 2 and "looked in" in res.stderr and str(tmp_path / "nowhere") in res.stderr


def test_eval_stage_takes_both_names():
    a = json.loads(run_cli("eval", "--stage", "conflict", "--json").stdout)
    b = json.loads(run_cli("eval", "--stage", "conflicts", "--json").stdout)
    assert a == b and a["stage"] == "conflict"


def test_batches_are_reported_as_they_come_back():
    from pydantic import BaseModel

    from pipeline.stages.base import ask_in_batches

    class Reply(BaseModel):
        decisions: list = []

    class Client:
        concurrency = 2
        asked: list[int] = []

        def structured_many(self, stage, payloads, schema):
            self.asked.append(len(payloads))
            return [Reply() for _ in payloads]

    seen = []
    client = Client()
    ask_in_batches(client, "reorder", list(range(5)), str, 1, lambda h, chunk: Reply(), Reply, lambda r: r.decisions,
                   progress=lambda done, total: seen.append((done, total)))
    assert seen == [(0, 5), (2, 5), (4, 5), (5, 5)] and client.asked == [2, 2, 1]
    client.asked.clear()
    ask_in_batches(client, "reorder", list(range(5)), str, 1, lambda h, chunk: Reply(), Reply, lambda r: r.decisions)
    assert client.asked == [5]  # nobody watching: one call for all, as before
