"""Every action carries the hashes of what it was judged on (`target_hashes`), so its fingerprint
changes with that content and apply skips it once the content changed since the plan.

A reviewer's case: `rebuild_index`, `trim_budget`, `rotate_session` and `promote_rule` carried none,
so every rebuild of `.claude/memory/MEMORY.md` had one fingerprint in every store, and
`apply --yes --select 1=FP` rebuilt a MEMORY.md its owner had edited since the plan was printed,
removing a line no plan the user saw had named.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Callable

import pytest

from helpers import FIXTURES, NOW, run_cli, snapshot, with_git_history

from pipeline.config import Settings
from pipeline.layouts.registry import open_store
from pipeline.model import Action
from pipeline.plan import build_plan
from pipeline.workflow import apply_store

S = Settings.model_validate({"now": NOW, "llm": {"model": "none"}})
INDEX = ".claude/memory/MEMORY.md"
OWNERS_LINES = "\n## Pinned by owner\n\n- [alpha](alpha.md) — alpha desc\n"


def claude_store(root: Path) -> Path:
    """Three memories, MEMORY.md listing two: a rebuild_index is action 1."""
    folder = root / ".claude" / "memory"
    folder.mkdir(parents=True)
    for n in ("alpha", "beta", "gamma"):
        (folder / f"{n}.md").write_text(f"---\nname: {n}\ndescription: {n} desc\ntype: project\n---\n\n{n} body\n")
    (folder / "MEMORY.md").write_text("# Memory\n\n- [alpha](alpha.md) — alpha desc\n- [beta](beta.md) — beta desc\n")
    return root


def printed(root: Path) -> dict:
    res = run_cli("plan", str(root), "--json", "--model", "none", "--now", NOW)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)["actions"][0]


def apply_pinned(root: Path, code: str):
    return run_cli("apply", str(root), "--yes", "--select", f"1={code}", "--model", "none", "--now", NOW, "--json")


def test_a_rebuild_pinned_before_the_owner_edited_the_index_is_refused(tmp_path):
    root = claude_store(tmp_path)
    action = printed(root)
    assert action["kind"] == "rebuild_index" and action["targets"] == [INDEX]
    with open(root / INDEX, "a", encoding="utf-8") as f:  # the owner edits MEMORY.md after the plan
        f.write(OWNERS_LINES)
    before = snapshot(root)
    res = apply_pinned(root, action["fingerprint"])
    assert res.returncode == 2 and len(res.stderr.splitlines()) == 1, res.stderr
    assert "the plan changed since it was printed" in res.stderr and f"{action['fingerprint']} is no longer in the plan" in res.stderr
    assert snapshot(root) == before and not (root / ".memconsolidate" / "runs").exists()


def test_a_rebuild_pinned_on_an_unchanged_index_applies(tmp_path):
    root = claude_store(tmp_path)
    action = printed(root)
    res = apply_pinned(root, action["fingerprint"])
    assert res.returncode == 0, res.stderr
    assert [a["fingerprint"] for a in json.loads(res.stdout)["applied"]] == [action["fingerprint"]]
    assert "(gamma.md)" in (root / INDEX).read_text(encoding="utf-8")


def test_a_rebuild_of_a_missing_index_is_pinned_to_its_absence(tmp_path):
    root = claude_store(tmp_path)
    (root / INDEX).unlink()
    action = printed(root)
    assert action["kind"] == "rebuild_index" and action["target_hashes"][INDEX] == "absent"
    (root / INDEX).write_text("# Memory\n\n- [alpha](alpha.md) — the owner's own index\n")  # written since
    assert printed(root)["fingerprint"] != action["fingerprint"]


# --- each kind of each layout: the fingerprint moves with the content ------------------------------


def append(path: str, data: str) -> Callable[[Path], None]:
    def edit(root: Path) -> None:
        with open(root / path, "a", encoding="utf-8") as f:
            f.write(data)
    return edit


def record(line: str) -> dict:
    try:
        return json.loads(line)
    except ValueError:  # the fixture holds a torn line
        return {}


def new_revision(bank: str, rid: str) -> Callable[[Path], None]:
    """A newer revision of the record: the same memory, judged on other content."""
    def edit(root: Path) -> None:
        path = root / bank / "memories.jsonl"
        latest = max((r for r in map(record, path.read_text(encoding="utf-8").splitlines()) if r.get("id") == rid),
                     key=lambda r: r.get("revision") or 0)
        newer = dict(latest, text=latest["text"] + " (confirmed again)", revision=(latest.get("revision") or 0) + 1)
        text = path.read_text(encoding="utf-8")
        path.write_text(text + ("" if text.endswith("\n") else "\n") + json.dumps(newer) + "\n", encoding="utf-8")
    return edit


def big_index_store(root: Path) -> Path:
    """A MEMORY.md past a small load limit (`trim_budget`), listing every file (no rebuild_index)."""
    folder = root / ".claude" / "memory"
    folder.mkdir(parents=True)
    lines = []
    for n in range(6):
        (folder / f"m{n}.md").write_text(f"---\nname: m{n}\ndescription: memory {n}\ntype: project\n---\n\nbody {n}\n")
        lines.append(f"- [m{n}](m{n}.md) — " + "a long hook that says a great deal about this memory " * 3)
    (folder / "MEMORY.md").write_text("# Memory\n\n" + "\n".join(lines) + "\n")
    return root


SMALL_INDEX = Settings.model_validate({"now": NOW, "llm": {"model": "none"},
                                       "claude": {"index_budget_bytes": 400, "index_load_bytes": 600}})
CASES = {
    "claude rebuild_index": ("claude", "rebuild_index", append(".claude/agent-memory/backend-architect/MEMORY.md", OWNERS_LINES)),
    "claude trim_budget": (big_index_store, "trim_budget", append(INDEX, OWNERS_LINES)),
    "crux rebuild_index": ("crux", "rebuild_index", append(".crux/memory-index.yml", "# the owner's note\n")),
    "crux promote_rule": ("crux", "promote_rule", append("memories/core/never-log-full-card-numbers.memory.md", "\nOne more line.\n")),
    "zylos rotate_session": ("zylos", "rotate_session", append("sessions/current.md", "\n- a late note from the agent\n")),
    "zylos trim_budget": ("zylos", "trim_budget", append("state.md", "\n- one more pending task\n")),
    "bank promote_rule": ("bank", "promote_rule", new_revision("blog", "m012")),
}


def the_action(root: Path, kind: str, settings: Settings, targets: list[str] | None = None) -> Action:
    corpus, settings = open_store(root, settings)
    found = [a for a in build_plan(corpus, settings).actions if a.kind == kind and targets in (None, a.targets)]
    assert found, f"no {kind} in the plan"
    return found[0]


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_fingerprint_covers_the_content_the_action_was_judged_on(tmp_path, case):
    store, kind, edit = CASES[case]
    root = tmp_path / "store"
    if isinstance(store, str):
        shutil.copytree(FIXTURES / store, root, symlinks=True)
    else:
        store(root)
    settings = SMALL_INDEX if kind == "trim_budget" and case.startswith("claude") else S
    first = the_action(root, kind, settings)
    assert first.target_hashes and set(first.targets) <= set(first.target_hashes)
    assert the_action(root, kind, settings, first.targets).fingerprint() == first.fingerprint()  # same content, same code
    edit(root)
    again = the_action(root, kind, settings, first.targets)
    assert again.target_hashes != first.target_hashes and again.fingerprint() != first.fingerprint()


def rewrite_first_line(path: str, line: str) -> Callable[[Path], None]:
    def edit(root: Path) -> None:
        data = (root / path).read_text(encoding="utf-8")
        (root / path).write_text(line + data[data.index("\n"):], encoding="utf-8")
    return edit


@pytest.mark.parametrize("layout,kind,path,edit", [
    ("crux", "rebuild_index", ".crux/memory-index.yml", append(".crux/memory-index.yml", "# the owner's note\n")),
    # an edit of the log the plan read (lines only appended go along with it: test_rotation_after_appends.py)
    ("zylos", "rotate_session", "sessions/current.md", rewrite_first_line("sessions/current.md", "# Session Log: 2026-11-26")),
])
def test_apply_skips_an_action_whose_file_changed_at_the_prompt(tmp_path, monkeypatch, layout, kind, path, edit):
    """Interactive apply applies the plan it showed: a file written while the user read it is left as
    it is, its action skipped as changed since the plan (crux's rebuild used to be applied unchecked)."""
    monkeypatch.setenv("MEMCONSOLIDATE_CLOCK", f"{NOW}T09:30")
    root = tmp_path / layout
    shutil.copytree(FIXTURES / layout, root, symlinks=True)
    written: list[bytes] = []

    def written_meanwhile(plan, n) -> bool:
        edit(root)
        written.append((root / path).read_bytes())
        return True

    _, result = apply_store(str(root), S, lambda _: None, [kind], None, written_meanwhile)
    assert result.changes.applied == [] and result.record is None
    [(action, why)] = result.changes.skipped
    assert action.kind == kind and why == f"{path} changed since the plan: left as it is (the next plan judges it again)"
    assert [(root / path).read_bytes()] == written


def test_a_rebuild_after_the_runs_own_edits_of_its_index_still_applies(tmp_path):
    """The check is against the index as it was when the run started: the archives of the same run
    edit MEMORY.md before the rebuild, and that is not a change since the plan."""
    root = tmp_path / "claude"
    shutil.copytree(FIXTURES / "claude", root, symlinks=True)
    with_git_history(root)  # history makes the prunes automatic
    index = ".claude/agent-memory/backend-architect/MEMORY.md"
    _, result = apply_store(str(root), S, lambda _: None, None, None, lambda plan, n: True)
    applied = {(a.kind, tuple(a.targets)) for a in result.changes.applied}
    assert ("rebuild_index", (index,)) in applied
    assert any(k == "prune_stale" and t[0].startswith(index.rsplit("/", 1)[0]) for k, t in applied)
    assert not [why for _, why in result.changes.skipped if "changed since the plan" in why]
