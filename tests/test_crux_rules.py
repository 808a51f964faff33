"""The crux rules one by one, over hand-built records: thresholds, boundaries, precedence."""

import datetime as dt

import pytest

from pipeline.config import CruxConfig, Settings, TypeTransition
from pipeline.model import Corpus, Memory, Tracker
from pipeline.layouts.crux import rules as crux_rules
from pipeline.layouts.crux.rules.archive import archivals
from pipeline.layouts.crux.rules.consistency import missing_trackers, orphan_trackers, stale_sources, strength_sync, unit_name
from pipeline.layouts.crux.rules.demote import demotions
from pipeline.layouts.crux.rules.promote import promotions
from pipeline.layouts.crux.rules.rule_promotion import rule_promotions

NOW = dt.date(2026, 11, 29)
CFG = CruxConfig()


def days_ago(n: int) -> dt.date:
    return NOW - dt.timedelta(days=n)


def cm(type_: str, slug: str = "m", *, strength: int | None = 1, created: dt.date | None = None, agent: str | None = None,
       twin: bool = False, source: str | None = None) -> Memory:
    folder = f"memories/agents/{agent}/{type_}" if agent else f"memories/{type_}"
    suffix = ".memory.crux.md" if twin else ".memory.md"
    return Memory(
        key=f"{folder}/{slug}{suffix}",
        layout="crux",
        title=f"title of {slug}",
        body=f"body of {slug}",
        type=type_,
        strength=strength,
        created=created if created is not None else days_ago(10),
        source=source,
        group=f"agent:{agent}" if agent else "base",
        extra={"scope": "agent" if agent else "base", "agent": agent, "twin": f"{folder}/{slug}.memory.md" if twin else None},
    )


def tracker(slug: str = "m", *, last: int | None = 1, refs: int = 1, strength: int | None = 1) -> Tracker:
    return Tracker(
        key=f".crux/reference-tracking/{slug}.refs.yml",
        slug=slug,
        references=refs,
        last_referenced=days_ago(last) if last is not None else None,
        strength=strength,
    )


def by_slug(*ts: Tracker) -> dict[str, Tracker]:
    return {t.slug: t for t in ts}


# ---------------------------------------------------------------------------------------------
# promote (step 4)


@pytest.mark.parametrize("type_, at, to", [("idea", 5, "learning"), ("learning", 15, "core"), ("redflag", 10, "core")])
def test_promote_exactly_at_threshold(type_, at, to):
    out = promotions([cm(type_, strength=at)], CFG)
    [a] = out.actions
    assert (a.kind, a.from_type, a.to_type) == ("promote", type_, to)
    assert a.reason == f"strength {at} ≥ threshold {at}"
    assert a.to_path == f"memories/{to}/m.memory.md"
    assert not a.needs_user


@pytest.mark.parametrize("type_, at", [("idea", 5), ("learning", 15), ("redflag", 10)])
def test_no_promotion_one_below_threshold(type_, at):
    assert promotions([cm(type_, strength=at - 1)], CFG).actions == []


@pytest.mark.parametrize("type_", ["core", "goal", "archived", "custom"])
def test_terminal_unknown_and_archived_types_never_promote(type_):
    out = promotions([cm(type_, strength=999)], CFG)
    assert out.actions == [] and out.findings == []


def test_promotion_thresholds_come_from_config_verbatim():
    cfg = CruxConfig(typeTransitions={"idea": TypeTransition(promoteAt=2, promoteTo="learning")})
    assert [a.to_type for a in promotions([cm("idea", strength=2)], cfg).actions] == ["learning"]
    assert promotions([cm("learning", strength=100)], cfg).actions == []


def test_promote_to_a_type_outside_type_priority_is_a_config_issue():
    cfg = CruxConfig(
        typePriority=["core", "experiment", "idea", "archived"],
        typeTransitions={"experiment": TypeTransition(promoteAt=3, promoteTo="practice")},
    )
    out = promotions([cm("experiment", strength=3)], cfg)
    assert out.actions == []
    [f] = out.findings
    assert f.kind == "config_issue" and f.targets == ["memories/experiment/m.memory.md"]
    assert "'practice' is not in typePriority" in f.reason and "strength 3 ≥ threshold 3" in f.reason


def test_promote_without_promote_to_is_a_config_issue():
    cfg = CruxConfig(typeTransitions={"idea": TypeTransition(promoteAt=3)})
    [f] = promotions([cm("idea", strength=4)], cfg).findings
    assert f.kind == "config_issue" and "has no promoteTo" in f.reason


def test_agent_scoped_promotion_stays_in_the_agent_folder_and_moves_the_twin():
    m = cm("learning", "tag-from-main", strength=15, agent="release-bot", twin=True)
    [a] = promotions([m], CFG).actions
    assert a.to_path == "memories/agents/release-bot/core/tag-from-main.memory.crux.md"
    assert a.twin_to_path == "memories/agents/release-bot/core/tag-from-main.memory.md"


# ---------------------------------------------------------------------------------------------
# demote (step 5)


@pytest.mark.parametrize("type_, to", [("core", "learning"), ("learning", "idea"), ("redflag", "learning")])
def test_demote_one_day_past_threshold(type_, to):
    out = demotions([cm(type_)], by_slug(tracker(last=91)), CFG, NOW)
    [a] = out.actions
    assert (a.kind, a.from_type, a.to_type) == ("demote", type_, to)
    assert a.reason.startswith("unreferenced for 91 days, threshold: 90; last referenced 2026-08-30")
    assert a.to_path == f"memories/{to}/m.memory.md"


@pytest.mark.parametrize("type_", ["core", "learning", "redflag", "goal"])
def test_exactly_at_demote_threshold_stays(type_):
    out = demotions([cm(type_)], by_slug(tracker(last=90)), CFG, NOW)
    assert out.actions == [] and out.findings == []


def test_without_tracker_days_count_from_created():
    out = demotions([cm("core", created=days_ago(91))], {}, CFG, NOW)
    [a] = out.actions
    assert "unreferenced for 91 days, threshold: 90; no tracker; counted from created 2026-08-30" == a.reason
    assert demotions([cm("core", created=days_ago(90))], {}, CFG, NOW).actions == []


def test_tracker_without_last_referenced_falls_back_to_created():
    [a] = demotions([cm("learning", created=days_ago(100))], by_slug(tracker(last=None)), CFG, NOW).actions
    assert "tracker has no last_referenced; counted from created" in a.reason


def test_recent_tracker_reference_beats_old_created_date():
    out = demotions([cm("core", created=days_ago(400))], by_slug(tracker(last=5)), CFG, NOW)
    assert out.actions == []


def test_goal_is_never_demoted_but_reviewed():
    out = demotions([cm("goal")], by_slug(tracker(last=91)), CFG, NOW)
    assert out.actions == []
    [f] = out.findings
    assert f.kind == "goal_review" and "unreferenced for 91 days, threshold: 90" in f.reason


@pytest.mark.parametrize("type_", ["idea", "archived", "custom"])
def test_idea_archived_and_unknown_types_are_not_demoted(type_):
    out = demotions([cm(type_)], by_slug(tracker(last=500)), CFG, NOW)
    assert out.actions == [] and out.findings == []


def test_unknown_age_is_left_alone():
    m = cm("core")
    m.created = None
    assert demotions([m], {}, CFG, NOW).actions == []


def test_demote_threshold_from_config():
    cfg = CruxConfig(demoteAfterDaysUnreferenced=10)
    [a] = demotions([cm("core")], by_slug(tracker(last=11)), cfg, NOW).actions
    assert "threshold: 10" in a.reason


# ---------------------------------------------------------------------------------------------
# archive (step 6)


@pytest.mark.parametrize("type_", ["core", "learning", "redflag", "goal", "idea", "custom"])
def test_archive_any_type_one_day_past_archive_threshold(type_):
    [a] = archivals([cm(type_)], by_slug(tracker(last=181)), CFG, NOW).actions
    assert (a.kind, a.from_type, a.to_type) == ("archive", type_, "archived")
    assert a.reason.startswith("unreferenced for 181 days, threshold: 180")
    assert a.to_path == "memories/archived/m.memory.md"


@pytest.mark.parametrize("type_", ["core", "learning", "redflag", "goal"])
def test_exactly_at_archive_threshold_is_not_archived(type_):
    assert archivals([cm(type_)], by_slug(tracker(last=180)), CFG, NOW).actions == []


def test_idea_past_demote_threshold_is_archived_instead():
    [a] = archivals([cm("idea")], by_slug(tracker(last=91)), CFG, NOW).actions
    assert a.to_type == "archived" and "threshold: 90" in a.reason and "an idea is archived, not demoted" in a.reason
    assert archivals([cm("idea")], by_slug(tracker(last=90)), CFG, NOW).actions == []


def test_already_archived_is_skipped():
    assert archivals([cm("archived", created=days_ago(900))], {}, CFG, NOW).actions == []


def test_agent_scoped_archive_path():
    [a] = archivals([cm("learning", agent="bot")], by_slug(tracker(last=200)), CFG, NOW).actions
    assert a.to_path == "memories/agents/bot/archived/m.memory.md"


# ---------------------------------------------------------------------------------------------
# the rule set: one move per memory


def corpus_of(memories, trackers=(), **extra) -> Corpus:
    store = {"memory_files": sorted(m.key for m in memories), "work_dir_exists": False}
    store.update(extra)
    return Corpus(layout="crux", root="/x", memories=list(memories), trackers=list(trackers), extra={"crux": store})


def settings() -> Settings:
    return Settings(now=NOW)


def test_promotion_and_demotion_together_demotion_wins_and_says_why():
    out = crux_rules.rules(corpus_of([cm("learning", strength=20)], [tracker(last=100, strength=20)]), settings())
    [a] = out.actions
    assert (a.kind, a.to_type) == ("demote", "idea")
    assert "not promoted to core (strength 20 ≥ threshold 15) because it is unreferenced" in a.reason


def test_archive_beats_demote_for_the_same_memory():
    out = crux_rules.rules(corpus_of([cm("core")], [tracker(last=200)]), settings())
    assert [(a.kind, a.to_type) for a in out.actions] == [("archive", "archived")]


def test_a_goal_past_the_archive_threshold_is_reviewed_and_its_archive_needs_the_user():
    out = crux_rules.rules(corpus_of([cm("goal")], [tracker(last=200)]), settings())
    assert [(a.kind, a.needs_user) for a in out.actions] == [("archive", True)]
    assert [f.kind for f in out.findings] == ["goal_review"]


def test_fresh_strong_memory_is_only_promoted():
    out = crux_rules.rules(corpus_of([cm("idea", strength=5)], [tracker(last=3, strength=5)]), settings())
    assert [(a.kind, a.to_type) for a in out.actions] == [("promote", "learning")]


# ---------------------------------------------------------------------------------------------
# one slug in two folders: one tracker (seed step 13), and a move onto the other's name


def shared(out, kind="shared_slug"):
    return [f for f in out.findings if f.kind == kind]


def test_a_move_onto_a_file_of_its_slug_is_not_proposed_but_named_in_a_finding():
    # apply never moves onto a file: a promote "to confirm" would be skipped whatever the user said
    idea, other = cm("idea", "x", strength=5), cm("learning", "x", strength=5)
    out = crux_rules.rules(corpus_of([idea, other], [tracker("x", last=3, strength=5)]), settings())
    assert out.actions == []
    [f] = shared(out)
    assert f.targets == ["memories/idea/x.memory.md", "memories/learning/x.memory.md"]
    assert ("promote of memories/idea/x.memory.md to learning (strength 5 ≥ threshold 5) not proposed: "
            "memories/learning/x.memory.md is there, and a move never overwrites a file") in f.reason
    assert "by hand: merge them into one memory, or give one a slug of its own" in f.reason


def test_a_lone_file_is_not_moved_beside_the_other_form_of_its_slug():
    # learning/x.memory.crux.md there: idea/x.memory.md moved beside it would be read as its twin
    idea, other = cm("idea", "x", strength=5), cm("learning", "x", strength=5, twin=True)
    out = crux_rules.rules(corpus_of([idea, other], [tracker("x", last=3, strength=5)]), settings())
    assert out.actions == []
    [f] = shared(out)
    assert f.targets == ["memories/idea/x.memory.md", "memories/learning/x.memory.crux.md"]
    assert "memories/learning/x.memory.crux.md is there" in f.reason


def test_a_blocked_archive_gets_no_demotion_in_its_place():
    core, archived = cm("core", "x"), cm("archived", "x")
    out = crux_rules.rules(corpus_of([core, archived], [tracker("x", last=200)]), settings())
    assert [a for a in out.actions if a.kind in ("archive", "demote")] == []
    [f] = shared(out)
    assert "archive of memories/core/x.memory.md to archived (unreferenced for 200 days" in f.reason


def test_two_moves_of_one_slug_into_one_folder_are_neither_proposed():
    # apply would make the first and skip the other: which one goes there is the user's to say
    learning, redflag = cm("learning", "x", strength=15), cm("redflag", "x", strength=15)
    out = crux_rules.rules(corpus_of([learning, redflag], [tracker("x", last=3, strength=15)]), settings())
    assert out.actions == []
    [f] = shared(out)
    assert "promote of memories/learning/x.memory.md to core (strength 15 ≥ threshold 15) not proposed: " \
           "memories/redflag/x.memory.md would be moved there too" in f.reason
    assert "promote of memories/redflag/x.memory.md to core (strength 15 ≥ threshold 10) not proposed: " \
           "memories/learning/x.memory.md would be moved there too" in f.reason


def test_a_move_into_a_folder_without_its_slug_is_proposed_though_the_slug_is_shared():
    idea, other = cm("idea", "x", strength=5), cm("core", "x", strength=5)
    out = crux_rules.rules(corpus_of([idea, other], [tracker("x", last=3, strength=5)]), settings())
    assert [(a.kind, a.targets[0], a.to_type) for a in out.actions] == [("promote", idea.key, "learning")]
    [f] = shared(out)
    assert "not proposed" not in f.reason and "counts the references of both" in f.reason


def test_memories_sharing_a_tracker_that_disagree_on_strength_leave_it_alone():
    # each sync would set the one tracker to one of them, the next run's to the other, for ever
    a, b = cm("idea", "x", strength=2), cm("core", "x", strength=6)
    out = crux_rules.rules(corpus_of([a, b], [tracker("x", last=3, strength=6)]), settings())
    assert [x for x in out.actions if x.kind == "sync_strength"] == []
    assert strength_sync([a, b], by_slug(tracker("x", strength=2))).actions == []
    [f] = shared(out)
    assert ("their front matters disagree on strength (6 in memories/core/x.memory.md, 2 in memories/idea/x.memory.md): "
            "the tracker's strength (6) is not synced, each sync would undo the last") in f.reason


def test_memories_sharing_a_tracker_that_agree_sync_it_once():
    a, b = cm("idea", "x", strength=4), cm("core", "x", strength=4)
    [s] = strength_sync([a, b], by_slug(tracker("x", strength=2))).actions
    assert (s.targets, s.strength) == (["memories/core/x.memory.md", ".crux/reference-tracking/x.refs.yml"], 4)


def test_an_unreadable_file_of_the_slug_counts_as_a_holder():
    idea = cm("idea", "x", strength=5)
    corpus = corpus_of([idea], [tracker("x", last=3, strength=5)],
                       memory_files=["memories/idea/x.memory.md", "memories/learning/x.memory.md"])
    out = crux_rules.rules(corpus, settings())
    assert out.actions == []
    [f] = shared(out)
    assert f.targets == ["memories/idea/x.memory.md", "memories/learning/x.memory.md"]


def test_twins_in_one_folder_share_no_slug():
    m = cm("idea", "x", strength=1, twin=True)
    corpus = corpus_of([m], memory_files=["memories/idea/x.memory.crux.md", "memories/idea/x.memory.md"])
    assert shared(crux_rules.rules(corpus, settings())) == []


# ---------------------------------------------------------------------------------------------
# consistency (step 2)


def test_orphan_tracker_is_removed_but_a_tracker_of_an_unreadable_file_is_not():
    ts = [tracker("gone"), tracker("broken"), tracker("live")]
    files = ["memories/learning/broken.memory.md", "memories/core/live.memory.crux.md"]
    out = orphan_trackers(ts, files)
    [a] = out.actions
    assert a.kind == "remove_orphan_tracker" and a.targets == [".crux/reference-tracking/gone.refs.yml"]
    assert "'gone'" in a.reason


def test_strength_mismatch_syncs_the_tracker_to_the_front_matter():
    [a] = strength_sync([cm("core", strength=5)], by_slug(tracker(strength=3))).actions
    assert a.kind == "sync_strength"
    assert a.targets == ["memories/core/m.memory.md", ".crux/reference-tracking/m.refs.yml"]
    assert "tracker strength 3" in a.reason and "front matter strength 5" in a.reason
    assert (a.strength, a.tracker_strength) == (5, 3)


def test_equal_strength_or_unknown_memory_strength_is_left_alone():
    assert strength_sync([cm("core", strength=4)], by_slug(tracker(strength=4))).actions == []
    assert strength_sync([cm("core", strength=None)], by_slug(tracker(strength=4))).actions == []


def test_tracker_without_strength_gets_one():
    [a] = strength_sync([cm("core", strength=2)], by_slug(tracker(strength=None))).actions
    assert "tracker no strength" in a.reason


def test_missing_tracker_only_above_strength_one():
    out = missing_trackers([cm("core", "a", strength=1), cm("core", "b", strength=2), cm("core", "c", strength=3)],
                           by_slug(tracker("c")), ".crux/reference-tracking")
    [f] = out.findings
    assert f.kind == "missing_tracker" and f.targets == ["memories/core/b.memory.md"]
    assert "strength 2 > 1" in f.reason and ".crux/reference-tracking/b.refs.yml" in f.reason


@pytest.mark.parametrize(
    "source, unit",
    [
        ("20261015-webhook-hardening", "20261015-webhook-hardening"),
        ("spec:20260425-crux-meditate", "20260425-crux-meditate"),
        ("adhoc", None),
        ("", None),
        ("session: talk with Bea", None),
        ("specs/x", None),
        ("../escape", None),
    ],
)
def test_unit_name(source, unit):
    assert unit_name(source, "spec") == unit


def test_stale_source_when_the_unit_is_in_neither_work_dir_nor_archive():
    store = {"work_dir_exists": True, "units": ["20261015-a", "20260903-b"], "work_dir": "specs",
             "archive_dir": ".ai-ignored/executed", "unit_of_work": "spec"}
    ms = [cm("core", "a", source="20261015-a"), cm("core", "b", source="spec:20260903-b"),
          cm("core", "c", source="20260612-gone"), cm("core", "d", source="adhoc"), cm("core", "e", source=None)]
    [f] = stale_sources(ms, store).findings
    assert f.kind == "stale_source" and f.targets == ["memories/core/c.memory.md"]
    assert "specs/20260612-gone" in f.reason and "advisory" in f.reason


def test_sources_are_unverifiable_without_a_work_dir():
    store = {"work_dir_exists": False, "units": []}
    assert stale_sources([cm("core", source="20260612-gone")], store).findings == []


# ---------------------------------------------------------------------------------------------
# promote to rule (step 10)


def test_rule_promotion_at_threshold_needs_the_user():
    out = rule_promotions([cm("core")], by_slug(tracker(refs=30)), 30)
    [a] = out.actions
    assert a.kind == "promote_rule" and a.needs_user
    assert a.reason.startswith("referenced 30 times (threshold: 30)")
    assert rule_promotions([cm("core")], by_slug(tracker(refs=29)), 30).actions == []


def test_rule_promotion_skips_archived_and_untracked():
    assert rule_promotions([cm("archived")], by_slug(tracker(refs=99)), 30).actions == []
    assert rule_promotions([cm("core", "other")], by_slug(tracker(refs=99)), 30).actions == []
