from helpers import FIXTURES, run_cli


def one_line_exit_2(res):
    assert res.returncode == 2, (res.returncode, res.stderr)
    assert "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr


def test_missing_path(tmp_path):
    one_line_exit_2(run_cli("plan", str(tmp_path / "nope")))


def test_no_recognisable_layout(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    one_line_exit_2(run_cli("plan", str(tmp_path)))


def test_bad_now():
    one_line_exit_2(run_cli("plan", str(FIXTURES / "bank"), "--now", "yesterday"))


def test_unreadable_bank_config(tmp_path):
    import shutil

    shutil.copytree(FIXTURES / "bank", tmp_path / "b")
    (tmp_path / "b" / "memory-consolidate.json").write_text("{not json")
    one_line_exit_2(run_cli("plan", str(tmp_path / "b")))


def test_bad_user_config(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text("[llm\nmodel=")
    one_line_exit_2(run_cli("plan", str(FIXTURES / "bank"), "--config", str(cfg)))


def test_wrong_layout_forced():
    one_line_exit_2(run_cli("plan", str(FIXTURES / "bank"), "--layout", "crux"))
