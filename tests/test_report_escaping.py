"""A file name with a newline, a carriage return and an ANSI escape forges no line of any report.

Every line for a person goes through `pipeline.printable.printable`: the human plan, the run
reports, claude's REPORT.md, crux's REM summary, zylos session log entries, stdout and stderr.
"""

import json
import shutil
from pathlib import Path

from helpers import FIXTURES, NOW, run_cli
from pipeline.printable import printable

FORGED = "x\n## Forged heading\r\x1b[31m"
ESCAPED = "x\\n## Forged heading\\r\\x1b[31m"


def assert_escaped(text: str) -> None:
    assert "\x1b" not in text and "\r" not in text
    assert not any(line.startswith("## Forged") for line in text.splitlines())
    assert ESCAPED in text


def copy(layout: str, tmp_path: Path) -> Path:
    return Path(shutil.copytree(FIXTURES / layout, tmp_path / layout, symlinks=True))


def test_printable_escapes_control_characters_and_nothing_else():
    assert printable(f"a{FORGED}b") == f"a{ESCAPED}b"
    assert printable("tab\there \x00 \x7f \x9b \u2028 \u202e") == "tab\\there \\x00 \\x7f \\x9b \\u2028 \\u202e"
    plain = "memories/idea/ünïcode — “quotes” [x](y) \\ back\udcff"
    assert printable(plain) == plain


def test_claude_plan_report_md_and_run_report(tmp_path):
    store = copy("claude", tmp_path)
    folder = store / ".claude" / "projects" / "-home-dev-acme-shop" / "memory"
    (folder / "project_ci_cache_copy.md").rename(folder / f"project_ci_cache_copy{FORGED}.md")
    plan = run_cli("plan", str(store), "--now", NOW)
    assert plan.returncode == 0, plan.stderr
    assert_escaped(plan.stdout)
    res = run_cli("apply", str(store), "--now", NOW, "--yes")
    assert res.returncode == 0, res.stderr
    (report,) = folder.glob(".archive/*/REPORT.md")
    assert_escaped(report.read_text())
    (whole,) = (store / ".memconsolidate" / "reports").glob("*.md")
    assert_escaped(whole.read_text())
    # the archived file keeps its real name: only what is shown is escaped
    assert list(folder.glob(f".archive/*/project_ci_cache_copy{FORGED}.md"))


def test_crux_rem_summary(tmp_path):
    store = copy("crux", tmp_path)
    trackers = store / ".crux" / "reference-tracking"
    (trackers / "legacy-soap-client-timeouts.refs.yml").rename(trackers / f"legacy{FORGED}.refs.yml")
    res = run_cli("apply", str(store), "--now", NOW, "--yes")
    assert res.returncode == 0, res.stderr
    (summary,) = store.glob(".ai-ignored/executed/rem-*.md")
    text = summary.read_text()
    assert_escaped(text)
    assert f"- legacy{ESCAPED}.refs.yml (orphaned)" in text.splitlines()


def test_zylos_session_log(tmp_path):
    store = copy("zylos", tmp_path)
    entry = "### Answers stay short\n- **Date observed:** {d}\n- **Importance:** 3\n- **Type:** procedural\n\n"
    (store / "reference" / f"notes{FORGED}.md").write_text("# Notes\n\n" + entry.format(d="2026-01-02") + entry.format(d="2026-02-03"))
    plan = run_cli("plan", str(store), "--now", NOW)
    assert plan.returncode == 0, plan.stderr
    assert_escaped(plan.stdout)
    res = run_cli("apply", str(store), "--now", NOW, "--yes", "--json")
    assert res.returncode == 0, res.stderr
    assert any(FORGED in t for a in json.loads(res.stdout)["applied"] for t in a["targets"])  # JSON keeps the real name
    log = (store / "sessions" / "current.md").read_text()
    assert_escaped(log)
    assert [line for line in log.splitlines() if line.startswith("## ")][-1].endswith("- Memory consolidation")


def test_stderr_lines(tmp_path):
    res = run_cli("plan", str(tmp_path / f"nope{FORGED}"))
    assert res.returncode == 2
    assert res.stderr.count("\n") == 1 and ESCAPED in res.stderr and "\x1b" not in res.stderr


def test_claude_keep_both_note_inside_a_memory_forges_no_line(tmp_path):
    store = copy("claude", tmp_path)
    folder = store / ".claude" / "projects" / "-home-dev-acme-shop" / "memory"
    (folder / "feedback_pnpm.md").rename(folder / f"feedback_pnpm{FORGED}.md")
    res = run_cli("apply", str(store), "--now", NOW, "--yes", "--select", "conflict", "--resolve", "keep-both")
    assert res.returncode == 0, res.stderr
    noted = (folder / "feedback_npm.md").read_text()
    assert "\x1b" not in noted and "\r" not in noted
    assert not any(line.startswith("## Forged") for line in noted.splitlines())
    assert any(line.startswith("> Note (memconsolidate") and ESCAPED in line for line in noted.splitlines())


BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"


def test_every_bidi_control_is_escaped():
    # LRM, RLM and the Arabic letter mark were shown raw: each reorders what the terminal shows
    assert printable(BIDI) == "".join(f"\\u{ord(c):04x}" for c in BIDI)
    assert printable("עברית and العربية stay") == "עברית and العربية stay"  # right-to-left text itself is not escaped


def test_the_human_plan_shows_no_bidi_control_raw(tmp_path):
    memory = tmp_path / ".claude" / "memory"
    memory.mkdir(parents=True)
    (memory / "MEMORY.md").write_text("- [A](project_a.md) — a\n")
    (memory / "project_a.md").write_text("---\nname: a\ndescription: a\ntype: project\n---\nA.\n")
    (memory / f"project_{BIDI}b.md").write_text("---\nname: b\ndescription: b\ntype: project\n---\nB.\n")
    plan = run_cli("plan", str(tmp_path), "--now", NOW, "--model", "none")
    assert plan.returncode == 0, plan.stderr
    assert not set(BIDI) & set(plan.stdout)
    assert "project_\\u061c\\u200e\\u200f\\u202a" in plan.stdout  # the unindexed file, named
