"""A pinned action (`apply --select N=FINGERPRINT --yes`) applies what the plan showed or nothing, also
where applying it edits more than its targets.

Gap 1: a claude `rebuild_index` indexes the files its folder holds, but its fingerprint covered only
MEMORY.md: a memory file added or removed between `plan` and the pinned apply left it unchanged, and
the rebuild applied listed a file the reviewer never saw, or dropped an entry no plan had named. The
same held for the files it reaches through a sub-index and the front matter its new entries are made
of, and for crux, whose rebuilt `memory-index.yml` lists the memory files there are.

Gap 2: a claude prune or merge also edits the folder's MEMORY.md and its sub-indexes (the file's
entry struck, an owner's note on it re-pointed or quoted, as the plan's reason says), but its
fingerprint covered only its targets: an owner's note added to MEMORY.md after the plan was removed
by the pinned prune, though the plan the user reviewed quoted none.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Callable

import pytest

from helpers import FIXTURES, NOW, run_cli, snapshot, with_git_history
from test_claude_index_notes import sub_indexed_twins

from pipeline.config import Settings
from pipeline.workflow import apply_store

S = Settings.model_validate({"now": NOW, "llm": {"model": "none"}})
FOLDER = ".claude/memory"
INDEX = f"{FOLDER}/MEMORY.md"
SUB = ".claude/agent-memory/oracle"  # sub_indexed_twins' folder


def topic(name: str, description: str, body: str = "", extra: str = "") -> str:
    return f"---\nname: {name}\ndescription: {description}\ntype: project\n{extra}---\n\n{body or name + ' body'}\n"


def write(root: Path, path: str, text: str) -> None:
    (root / path).parent.mkdir(parents=True, exist_ok=True)
    (root / path).write_text(text, encoding="utf-8")


def append(root: Path, path: str, text: str) -> None:
    with open(root / path, "a", encoding="utf-8") as f:
        f.write(text)


def drifted(root: Path) -> Path:
    """alpha, beta and gamma; MEMORY.md lists alpha and links the sub-index ops.md, which lists beta:
    the plan's rebuild_index adds gamma's entry."""
    for n in ("alpha", "beta", "gamma"):
        write(root, f"{FOLDER}/{n}.md", topic(n, f"{n} desc"))
    write(root, f"{FOLDER}/ops.md", "# Ops\n\n- [beta](beta.md) — beta desc\n")
    write(root, INDEX, "# Memory\n\n- [alpha](alpha.md) — alpha desc\n- [Ops](ops.md) — the ops index\n")
    return root


def stale_store(root: Path) -> Path:
    """stale.md names only a file git saw deleted (an automatic prune_stale); MEMORY.md lists it and keep.md."""
    write(root, f"{FOLDER}/stale.md", topic("stale", "old billing", "The invoice code lives in `src/billing/old.ts`.",
                                            extra="modified: 2026-02-14\n"))
    write(root, f"{FOLDER}/keep.md", topic("keep", "keep", "Deploy with make."))
    write(root, INDEX, "# Memory\n\n- [Stale](stale.md) — old billing\n- [Keep](keep.md) — keep\n")
    write(root, "src/main.ts", "export {}\n")  # a project with code: its memories are checked against it
    return with_git_history(root, ("src/billing/old.ts",))


def twins_store(root: Path) -> Path:
    """gamma.md and copy.md the same (a merge retires the copy), listed in the sub-index index-ops.md."""
    sub_indexed_twins(root)
    return root


def crux_store(root: Path) -> Path:
    shutil.copytree(FIXTURES / "crux", root, symlinks=True)
    return root


NEW_CRUX_MEMORY = ("---\nid: n3w0001\ntitle: A new fact\ndescription: written since the plan\ntype: learning\n"
                   "strength: 1\ncreated: 2026-11-28\n---\n\nNew.\n")
OWNERS_NOTE = "\n## Pinned\n\n- [Stale](stale.md) — Mina owns this: ask her before it goes\n"

Edit = Callable[[Path], None]
# store, the kind pinned, what is done to the store after the plan was printed
CASES: dict[str, tuple[Callable[[Path], Path], str, Edit]] = {
    "claude rebuild: a memory file added": (
        drifted, "rebuild_index", lambda r: write(r, f"{FOLDER}/delta.md", topic("delta", "never reviewed"))),
    "claude rebuild: an indexed memory file removed": (
        drifted, "rebuild_index", lambda r: (r / FOLDER / "alpha.md").unlink()),
    "claude rebuild: the front matter its new entry is made of": (
        drifted, "rebuild_index", lambda r: write(r, f"{FOLDER}/gamma.md", topic("gamma", "a hook nobody reviewed"))),
    "claude rebuild: a file the sub-index listed no longer listed": (
        drifted, "rebuild_index", lambda r: write(r, f"{FOLDER}/ops.md", "# Ops\n")),
    "claude prune: an owner's note on the pruned file added to MEMORY.md": (
        stale_store, "prune_stale", lambda r: append(r, INDEX, OWNERS_NOTE)),
    "claude merge: MEMORY.md lists the retired copy since": (
        twins_store, "merge_duplicate", lambda r: append(r, f"{SUB}/MEMORY.md", "- [Copy](copy.md) — the deploy bot reads it\n")),
    "claude merge: an owner's note on the retired copy added to its sub-index": (
        twins_store, "merge_duplicate", lambda r: append(r, f"{SUB}/index-ops.md", "- [Copy](copy.md) — Ivo's, too\n")),
    "crux rebuild: a memory file added": (
        crux_store, "rebuild_index", lambda r: write(r, "memories/learning/a-new-fact.memory.md", NEW_CRUX_MEMORY)),
    "crux rebuild: a memory file removed": (
        crux_store, "rebuild_index", lambda r: (r / "memories/idea/websocket-push-for-order-status.memory.md").unlink()),
}


def planned(root: Path, kind: str) -> tuple[int, dict]:
    """The number and the action of the plan's first action of `kind`, as `plan --json` prints them."""
    res = run_cli("plan", str(root), "--json", "--model", "none", "--now", NOW)
    assert res.returncode == 0, res.stderr
    found = [(n, a) for n, a in enumerate(json.loads(res.stdout)["actions"], start=1) if a["kind"] == kind]
    assert found, f"no {kind} in the plan"
    return found[0]


def apply_pinned(root: Path, n: int, code: str):
    return run_cli("apply", str(root), "--yes", "--select", f"{n}={code}", "--model", "none", "--now", NOW, "--json")


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_pin_is_refused_once_what_its_edits_are_built_on_changed(tmp_path, case):
    build, kind, edit = CASES[case]
    root = build(tmp_path / "store")
    n, action = planned(root, kind)
    edit(root)
    before = snapshot(root)
    res = apply_pinned(root, n, action["fingerprint"])
    assert res.returncode == 2 and len(res.stderr.splitlines()) == 1, (res.stdout, res.stderr)
    assert "the plan changed since it was printed" in res.stderr and f"{action['fingerprint']} is no longer in the plan" in res.stderr
    assert snapshot(root) == before and not (root / ".memconsolidate" / "runs").exists()


@pytest.mark.parametrize("build,kind", sorted({(build, kind) for build, kind, _ in CASES.values()}, key=lambda c: (c[0].__name__, c[1])))
def test_a_pin_on_an_unchanged_store_applies(tmp_path, build, kind):
    root = build(tmp_path / "store")
    n, action = planned(root, kind)
    assert planned(root, kind)[1]["fingerprint"] == action["fingerprint"]  # the same store, the same code
    res = apply_pinned(root, n, action["fingerprint"])
    assert res.returncode == 0, res.stderr
    assert [a["fingerprint"] for a in json.loads(res.stdout)["applied"]] == [action["fingerprint"]]


def test_what_the_refused_prune_would_have_done_is_not_what_the_plan_showed(tmp_path):
    """Why the pin must go: the same prune, planned after the owner's edit, quotes a note the
    reviewed plan never showed, which applying it removes."""
    root = stale_store(tmp_path)
    _, reviewed = planned(root, "prune_stale")
    append(root, INDEX, OWNERS_NOTE)
    _, now = planned(root, "prune_stale")
    assert "Mina owns this" not in reviewed["reason"] and "Mina owns this" in now["reason"]
    assert now["targets"] == reviewed["targets"] and now["fingerprint"] != reviewed["fingerprint"]


# --- at the prompt: the writer checks what the plan read as the run starts --------------------------


def at_the_prompt(root: Path, edit: Edit) -> Callable:
    def confirm(plan, actions) -> bool:
        edit(root)
        return True

    return confirm


def test_a_rebuild_is_skipped_when_a_file_is_added_to_its_folder_at_the_prompt(tmp_path):
    root = drifted(tmp_path)
    text = (root / INDEX).read_text(encoding="utf-8")
    added = lambda r: write(r, f"{FOLDER}/delta.md", topic("delta", "never reviewed"))  # noqa: E731
    _, result = apply_store(str(root), S, lambda _: None, ["rebuild_index"], None, at_the_prompt(root, added))
    assert result is not None and result.changes.applied == [] and result.record is None
    [(action, why)] = result.changes.skipped
    assert action.kind == "rebuild_index"
    assert why == f"which files {FOLDER}/ holds changed since the plan: left as it is (the next plan judges it again)"
    assert (root / INDEX).read_text(encoding="utf-8") == text


def test_a_crux_rebuild_is_skipped_when_a_memory_is_added_at_the_prompt(tmp_path):
    root = crux_store(tmp_path / "crux")
    index = (root / ".crux/memory-index.yml").read_bytes()
    added = lambda r: write(r, "memories/learning/a-new-fact.memory.md", NEW_CRUX_MEMORY)  # noqa: E731
    _, result = apply_store(str(root), S, lambda _: None, ["rebuild_index"], None, at_the_prompt(root, added))
    assert result is not None and result.changes.applied == [] and result.record is None
    [(action, why)] = result.changes.skipped
    assert action.kind == "rebuild_index" and why.startswith("which files memories/ holds changed since the plan")
    assert (root / ".crux/memory-index.yml").read_bytes() == index


def test_a_prune_is_skipped_when_its_index_is_edited_at_the_prompt(tmp_path):
    """It used to be archived all the same, its index left listing it (the edit built on MEMORY.md as
    the plan read it was refused): the file gone, its entry and the owner's new note dangling."""
    root = stale_store(tmp_path)
    noted = lambda r: append(r, INDEX, OWNERS_NOTE)  # noqa: E731
    _, result = apply_store(str(root), S, lambda _: None, ["prune_stale"], None, at_the_prompt(root, noted))
    assert result is not None and result.changes.applied == [] and result.record is None
    [(action, why)] = result.changes.skipped
    assert action.kind == "prune_stale" and why.startswith(f"{INDEX} changed since the plan")
    assert (root / FOLDER / "stale.md").exists() and (root / INDEX).read_text(encoding="utf-8").endswith(OWNERS_NOTE)
