"""A rebuild that drops an index entry without a file quotes the entry's hook in its reason.

In Claude Code's MEMORY.md the hook is what the agent reads each session, and for a memory whose
file is gone it may be all that is left of it (a review's verdict in one line): the rebuild's reason
said only the path, so a person approving it could not see what text leaves the index. The index is
archived before it is rewritten; the reason says what goes. Stores built here."""

from __future__ import annotations

from helpers import plan_json

AGENT = ".claude/agent-memory/reviewer"


def test_a_dropped_entry_is_quoted_by_its_hook_clipped_and_one_without_a_hook_is_named_alone(tmp_path):
    folder = tmp_path / AGENT
    folder.mkdir(parents=True)
    (folder / "kept.md").write_text("---\nname: kept\ndescription: kept\ntype: project\n---\n\nStill here.\n")
    verdict = ("approved after round four: the retry loop is bounded, the cache key includes the tenant, "
               "and the flaky test was a real race in the scheduler, now fixed")
    (folder / "MEMORY.md").write_text(
        "# Reviewer\n\n- [kept](kept.md) — kept\n"
        f"- [Round four](round-four.md) — {verdict}\n"
        "- [Scratch](scratch.md)\n")
    plan = plan_json(tmp_path, "--model", "none")
    [rebuild] = [a for a in plan["actions"] if a["kind"] == "rebuild_index"]
    said = rebuild["reason"].split("2 entries without a file: ", 1)[1]
    quoted, plain = said.split(", " + AGENT + "/scratch.md")
    assert quoted.startswith(f"{AGENT}/round-four.md (\u201capproved after round four: the retry loop is bounded")
    assert quoted.endswith("\u2026\u201d)") and len(quoted) < len(AGENT) + 120  # clipped at a word, said as cut
    assert not plain.startswith(" (")  # no hook: the path alone
