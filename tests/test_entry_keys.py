"""Keys of entries kept inside a file (`<file>.md#<anchor>`) against names that hold a `#`: a claude
agent folder named `c#-dev` had every key cut at its `#`, so a merge there archived into the parent
folder's `.archive/` and left the folder's MEMORY.md listing the archived file."""

from __future__ import annotations

from helpers import NOW, apply_json, plan_json, run_cli, snapshot

from pipeline.model import file_of, is_entry

FOLDER = ".claude/agent-memory/c#-dev"


def test_only_a_hash_right_after_md_starts_an_anchor():
    assert file_of(f"{FOLDER}/MEMORY.md#api/1") == f"{FOLDER}/MEMORY.md" and is_entry(f"{FOLDER}/MEMORY.md#api/1")
    assert file_of("reference/decisions.md#use-postgres") == "reference/decisions.md"
    for key in (f"{FOLDER}/a.md", ".claude/memory/ci#cache.md", "r000001"):
        assert file_of(key) == key and not is_entry(key)


def test_a_merge_in_a_folder_named_with_a_hash_archives_there_and_edits_its_index(tmp_path):
    folder = tmp_path / FOLDER
    folder.mkdir(parents=True)
    for name in ("a", "b"):
        (folder / f"{name}.md").write_text(f"---\nname: {name}\ndescription: {name}\ntype: project\n---\n\n"
                                           "The CI cache key includes the lockfile hash.\n")
    (folder / "MEMORY.md").write_text("# Memory\n\n- [a](a.md) — a\n- [b](b.md) — b\n")
    before = snapshot(tmp_path)
    [merge] = [a for a in plan_json(tmp_path, "--model", "none")["actions"] if a["kind"] == "merge_duplicate"]
    assert "left untouched" not in merge["reason"], merge["reason"]
    out = apply_json(tmp_path)
    assert not out["skipped"] and not out.get("notes"), out
    archived = sorted(p.relative_to(tmp_path).as_posix() for p in (tmp_path / ".claude/agent-memory").rglob("b.md"))
    assert len(archived) == 1 and archived[0].startswith(f"{FOLDER}/.archive/"), archived
    assert (folder / "MEMORY.md").read_text() == "# Memory\n\n- [a](a.md) — a\n"
    undone = run_cli("undo", str(tmp_path))
    assert undone.returncode == 0, undone.stderr
    assert snapshot(tmp_path) == before
