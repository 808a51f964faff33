"""A link spelled with the words of the title a tree index gives a numbered file (`- 104. Lanes Are
Clones` in MEMORY.md or a sub-index, for `104-feedback_lanes.md`) but without its number,
`[[lanes-are-clones]]`, reaches no file: the title is a name of file 104 only in a numbered reference
(`[[104-lanes-are-clones]]`). It is mended like any link spelled otherwise than the one memory whose
name has its words: an `update_ref` (the user's to approve) to the numbered reference, the author's
words kept, so the link then reaches that file."""

from __future__ import annotations

from pathlib import Path

from helpers import plan_json


def _fm(name: str, body: str, type_: str = "feedback") -> str:
    return f"---\nname: {name}\ndescription: about {name}\ntype: {type_}\n---\n\n{body}"


def _store(tmp_path: Path, files: dict[str, str], index: str, sub_indexes: dict[str, str] | None = None) -> Path:
    folder = tmp_path / ".claude" / "agent-memory" / "lead"
    folder.mkdir(parents=True)
    for name, text in {**files, **(sub_indexes or {})}.items():
        (folder / name).write_text(text)
    (folder / "MEMORY.md").write_text(index)
    return folder


def _relinks(root: Path) -> tuple[list[dict], list[dict]]:
    plan = plan_json(root, "--model", "none", "--now", "2026-12-06")
    return ([a for a in plan["actions"] if a["kind"] == "update_ref"],
            [f for f in plan["findings"] if f["kind"] == "dangling_link"])


def _lead(key: str) -> str:
    return ".claude/agent-memory/lead/" + key


def test_a_link_by_a_tree_titles_words_is_respelled_to_its_numbered_reference(tmp_path: Path):
    _store(tmp_path, {
        "104-feedback_commit_to_default_branch_ok.md": _fm("feedback_commit_to_default_branch_ok", "Edits land via a lane clone.\n"),
        "7-feedback_drain.md": _fm("feedback_drain", "The drain merges; see [[edit-work-runs-in-a-lane-clone]].\n"),
    }, "# Memory\n\n- 104. Edit-Work Runs In A Lane Clone — lanes\n- 7. Drain — merges\n")
    [action], found = _relinks(tmp_path)
    assert found == []
    assert action["targets"] == [_lead("7-feedback_drain.md")] and action["needs_user"]
    assert [(r["before"], r["after"]) for r in action["replacements"]] == [
        ("edit-work-runs-in-a-lane-clone", "104-edit-work-runs-in-a-lane-clone")]


def test_a_title_given_in_a_sub_index_and_a_type_word_the_file_shares(tmp_path: Path):
    _store(tmp_path, {
        "44-feedback_state_edits_no_permission.md": _fm("feedback_state_edits_no_permission", "Just edit state.\n"),
        "45-feedback_model_routing.md": _fm("feedback_model_routing", "Route by task.\n"),
        "9-project_board.md": _fm("project_board", "See [[feedback_state_edits_need_no_permission]].\n", "project"),
    }, "# Memory\n\n- **[Meta](index-meta.md)** — meta rules\n- 9. Board — the board\n",
        {"index-meta.md": "# Meta\n\n- 44. State Edits Need No Permission — just do it\n- 45. Model Routing — by task\n"})
    [action], found = _relinks(tmp_path)
    assert found == []
    assert [r["after"] for r in action["replacements"]] == ["44-state-edits-need-no-permission"]


def test_the_respelled_link_then_reaches_its_file(tmp_path: Path):
    from helpers import run_cli

    folder = _store(tmp_path, {
        "12-feedback_ship.md": _fm("feedback_ship", "Ship on green.\n"),
        "3-feedback_notes.md": _fm("feedback_notes", "Rule: [[Ship When Green]].\n"),
    }, "# Memory\n\n- 12. Ship When Green — ship\n- 3. Notes — notes\n")
    res = run_cli("apply", str(tmp_path), "--yes", "--model", "none", "--now", "2026-12-06", "--select", "update_ref")
    assert res.returncode == 0, res.stderr
    assert "[[12-ship-when-green]]" in (folder / "3-feedback_notes.md").read_text()
    assert _relinks(tmp_path) == ([], [])


def test_a_type_word_the_file_does_not_share_or_two_files_of_those_words_are_no_respelling(tmp_path: Path):
    _store(tmp_path, {
        "91-feedback_protocol_first_class.md": _fm("feedback_protocol_first_class", "Protocols first.\n"),
        "5-feedback_retry.md": _fm("feedback_retry", "Retry twice.\n"),
        "6-feedback_retry_policy_v2.md": _fm("feedback_retry_policy_v2", "Retry thrice.\n"),
        "8-feedback_phase.md": _fm("feedback_phase", "Phase one.\n"),
        "2-feedback_notes.md": _fm("feedback_notes", "See [[project_protocol_first_class]], [[retry-policy]] and [[phase-2]].\n"),
    }, "# Memory\n\n- 91. Protocol Is First-Class — p\n- 5. Retry Policy — r\n- 6. Retry Policy — r2\n"
       "- 8. Phase 1 — p1\n- 2. Notes — n\n")
    actions, [finding] = _relinks(tmp_path)
    assert actions == []
    assert finding["reason"] == ("3 links reach no file of its folder: [[project_protocol_first_class]]; [[retry-policy]]; "
                                 "[[phase-2]]")


def test_a_tree_title_of_no_word_but_little_ones_is_no_name_a_link_may_spell(tmp_path: Path):
    # "- 5. A" gives file 5 a title whose words are all dropped ("a", "the", "is" ...): it matched every
    # link of no other word, so `[[the]]` and `[[an]]` were respelled to `[[5-a]]`, "the same words".
    _store(tmp_path, {
        "5-feedback_x.md": _fm("feedback_x", "Alpha.\n"),
        "3-feedback_c.md": _fm("feedback_c", "See [[the]] and [[an]].\n"),
    }, "# Memory\n\n- 5. A — first\n- 3. C — c\n")
    actions, [finding] = _relinks(tmp_path)
    assert actions == []
    assert finding["reason"] == "2 links reach no file of its folder: [[the]]; [[an]]"
