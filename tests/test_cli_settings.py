"""Settings from the command line: a misspelt key or an impossible value is one line naming it
(exit 2); the project config is discovered and shown; a store's own config cannot redirect calls."""

import json
import os
from pathlib import Path

import pytest

from helpers import NOW, fifo_watch, run_cli

from pipeline.errors import ConfigError


def one_line(res) -> str:
    assert res.returncode == 2, (res.returncode, res.stderr)
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
    return lines[0]


def test_unknown_key_in_config_is_named(bank_store, tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text('[llm]\nmodle = "stub"\n')
    line = one_line(run_cli("plan", str(bank_store), "--config", str(cfg)))
    assert "unknown setting llm.modle" in line and "model" in line and str(cfg) in line


def test_unknown_section_in_json_config(bank_store, tmp_path):
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"shedule": {"interval_hours": 3}}))
    assert "unknown setting shedule" in one_line(run_cli("plan", str(bank_store), "--config", str(cfg)))


@pytest.mark.parametrize("text, key", [
    ("[schedule]\ninterval_hours = -3\n", "schedule.interval_hours"),
    ("[llm]\nbatch_size = 0\n", "llm.batch_size"),
    ("[journal]\nkeep_runs = 0\n", "journal.keep_runs"),
])
def test_impossible_value_in_config_is_named(bank_store, tmp_path, text, key):
    cfg = tmp_path / "c.toml"
    cfg.write_text(text)
    assert f"invalid setting {key}" in one_line(run_cli("run", str(bank_store), "--config", str(cfg)))


@pytest.mark.parametrize("args, flag", [
    (("--max-calls", "-1"), "--max-calls"),
    (("--max-cost", "-0.5"), "--max-cost"),
    (("--model", ""), "--model"),
])
def test_impossible_value_on_the_command_line_names_the_option(bank_store, args, flag):
    line = one_line(run_cli("plan", str(bank_store), *args))
    assert line.startswith(f"memconsolidate: invalid {flag}:"), line
    assert not (bank_store / ".memconsolidate").exists()


def test_project_config_in_the_store_is_used_and_shown(bank_store):
    (bank_store / ".memconsolidate.toml").write_text('[llm]\nmodel = "none"\n')
    res = run_cli("plan", str(bank_store), "--now", NOW)
    assert res.returncode == 0, res.stderr
    assert f"config {bank_store / '.memconsolidate.toml'}" in res.stdout and "model none" in res.stdout
    status = json.loads(run_cli("status", str(bank_store), "--json", "--now", NOW).stdout)
    assert status["config"] == str(bank_store / ".memconsolidate.toml") and status["model"] == "none"


def test_user_config_from_xdg_and_explicit_config_wins(bank_store, tmp_path, monkeypatch):
    xdg = tmp_path / "xdg"
    (xdg / "memconsolidate").mkdir(parents=True)
    (xdg / "memconsolidate" / "config.toml").write_text('[llm]\nmodel = "none"\n')
    monkeypatch.setenv("XDG_CONFIG_HOME", str(xdg))
    plan = json.loads(run_cli("plan", str(bank_store), "--json", "--now", NOW).stdout)
    assert plan["model"] == "none"
    explicit = tmp_path / "mine.toml"
    explicit.write_text('[llm]\nmodel = "stub"\n')
    res = run_cli("plan", str(bank_store), "--now", NOW, "--config", str(explicit))
    assert "model stub" in res.stdout and f"config {explicit}" in res.stdout


def test_store_config_may_not_redirect_model_calls(bank_store):
    (bank_store / ".memconsolidate.toml").write_text('[llm]\napi_base = "http://198.51.100.7/v1"\n')
    line = one_line(run_cli("plan", str(bank_store)))
    assert "may not set llm.api_base" in line


def test_a_config_that_is_a_named_pipe_is_refused_not_waited_on(bank_store, tmp_path):
    # --config FILE was read with read_bytes: a FIFO blocked the command forever (a FIFO
    # .memconsolidate.toml in the store is no file, and not taken for a config at all)
    fifo = tmp_path / "c.toml"
    os.mkfifo(fifo)
    with fifo_watch(fifo) as opened:
        line = one_line(run_cli("plan", str(bank_store), "--config", str(fifo)))
    assert opened == []  # never opened, so never waited on
    assert line == f"memconsolidate: config {fifo} is not a regular file"
    assert one_line(run_cli("plan", str(bank_store), "--config", str(tmp_path))) == f"memconsolidate: config {tmp_path} is not a regular file"


def test_a_store_config_that_is_a_symlink_out_of_the_store_is_not_read(bank_store, tmp_path):
    # the store would choose a file of the user's to be read as its settings
    outside = tmp_path / "users.toml"
    outside.write_text('[llm]\nmodel = "none"\n')
    (bank_store / ".memconsolidate.toml").symlink_to(outside)
    line = one_line(run_cli("plan", str(bank_store), "--now", NOW))
    assert line == f"memconsolidate: config {bank_store / '.memconsolidate.toml'} is a symlink to {outside}, not a file of the store's own: not read"
    (bank_store / ".memconsolidate.toml").unlink()
    (bank_store / "mine.toml").write_text('[llm]\nmodel = "none"\n')
    (bank_store / ".memconsolidate.toml").symlink_to("mine.toml")  # one inside the store is the store's
    assert "model none" in run_cli("plan", str(bank_store), "--now", NOW).stdout


def test_a_store_given_by_a_relative_path_is_judged_where_it_is_not_where_the_process_was(tmp_path, monkeypatch):
    # files.resolved_below caches each root it resolves by the path as given: a store named "." in a
    # process that has changed folder since (a library caller) was judged as the first "." it resolved,
    # and its own config, a symlink out of it into that folder, was read as the store's
    from pipeline.storage.config_file import load_user_config
    from pipeline.storage.files import inside

    first, store = tmp_path / "first", tmp_path / "store"
    first.mkdir()
    store.mkdir()
    (first / "users.toml").write_text("max_retire_fraction = 0.5\n")
    (store / ".memconsolidate.toml").symlink_to(first / "users.toml")
    monkeypatch.chdir(first)
    assert inside(Path("."), Path("users.toml"))  # "." resolved while the process was in `first`
    monkeypatch.chdir(store)
    with pytest.raises(ConfigError, match="not a file of the store's own: not read"):
        load_user_config(Path(".memconsolidate.toml"), ".")


def test_config_dev_null_means_no_settings(bank_store):
    # review (session 16): refusing every file that is not a regular one refused `--config /dev/null`,
    # the usual way to say "no settings", which planned before
    res = run_cli("plan", str(bank_store), "--model", "none", "--config", os.devnull)
    assert res.returncode == 0, res.stderr
    assert f"\nconfig {os.devnull}\n" in res.stdout  # named, as any settings file the command read
