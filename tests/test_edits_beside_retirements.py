"""claude: a text edit (absolutize_dates, update_ref) of a memory an automatic action of the same
plan archives is never proposed beside it: apply moves the file into `.archive/` as it was and skips
the edit, every time (rules.without_edits_of_archived). When the archive waits for the user, who
may decline it, the edit stays. (crux edits the file where its archive moved it: both are kept,
tests/test_text_edits.py.)"""

from __future__ import annotations

from helpers import plan_json, with_git_history

CACHE = ".claude/agent-memory/backend-architect/project_cache_layer.md"
LATER = ("--now", "2026-12-10")  # past its prune guard (modified 2026-11-20, within 14 days on NOW)


def _for(plan: dict, key: str) -> list[tuple[str, bool]]:
    return sorted((a["kind"], a["needs_user"]) for a in plan["actions"] if key in a["targets"])


def test_a_memory_an_automatic_prune_archives_gets_no_date_edit(fixture_store):
    store = with_git_history(fixture_store("claude"))  # the history proves its refs deleted: the prune is automatic
    assert _for(plan_json(store, "--model", "none", *LATER), CACHE) == [("prune_stale", False)]


def test_a_memory_whose_prune_waits_for_the_user_keeps_its_date_edit(fixture_store):
    store = fixture_store("claude")  # no history: the prune is the user's call
    assert _for(plan_json(store, "--model", "none", *LATER), CACHE) == [("absolutize_dates", False), ("prune_stale", True)]
