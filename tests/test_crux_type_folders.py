"""A crux memory whose `type` disagrees with its type folder (`memories/learning/x` typed `idea`) is
read as its folder's type (`members.type_of`): the seed's file move (step 13) moves the file first
and sets `type` after, so the mismatch is a move cut short, and the folder is where it went. The
rules never offer a move into the folder it is already in (apply always skipped it, "already in",
and the plan offered it again every night); a `type_mismatch` finding names the file, its folder
and its type, and what to set by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from helpers import NOW, apply_json, files, plan_json, run_cli, snapshot
from stage_helpers import settings_for

from pipeline.config import CruxConfig, TypeTransition
from pipeline.layouts.crux.members import is_archived, type_of
from pipeline.layouts.crux.rules.consistency import type_mismatches
from pipeline.layouts.crux.rules.promote import promotions
from pipeline.layouts.registry import open_store
from pipeline.model import Memory

MOVES = ("promote", "demote", "archive")
FRESH, STALE = "2026-11-20", "2026-08-21"  # 9 and 100 days before NOW

# file: (type field, strength, last referenced; None: no tracker), and what the old rules did with it
MEMORIES = {
    # promoted idea → learning onto itself, every night
    "memories/learning/interrupted-promote.memory.md": ("idea", 6, FRESH),
    # the same for an agent's memory
    "memories/agents/bot/learning/agent-interrupted.memory.md": ("idea", 5, FRESH),
    # demoted learning → idea onto itself; read as an idea 100 days unreferenced, it is archived
    "memories/idea/interrupted-demote.memory.md": ("learning", 2, STALE),
    # promoted idea → learning onto itself; read as a learning at 15, it is promoted to core
    "memories/learning/strong-interrupted.memory.md": ("idea", 15, FRESH),
    # demoted learning → idea; read as a core, it is demoted to learning
    "memories/core/interrupted-core.memory.md": ("learning", 1, STALE),
    # read as an idea, referenced lately: no move, only the finding
    "memories/idea/fresh-demote.memory.md": ("learning", 1, FRESH),
    # an archive cut short, and a memory typed archived in learning/: archived either way, never moved
    "memories/archived/interrupted-archive.memory.md": ("learning", 1, STALE),
    "memories/learning/typed-archived.memory.md": ("archived", 1, STALE),
    # typed as its folder: left alone
    "memories/learning/in-place.memory.md": ("learning", 3, FRESH),
}


def memory_text(key: str, type_: str, strength: int, **fields: str) -> str:
    slug = Path(key).name.split(".")[0]
    lines = ["---", f'title: "{slug.replace("-", " ").capitalize()}"', f'description: "About {slug}."',
             f'type: "{type_}"', f"strength: {strength}", "created: 2026-06-01", "modified: 2026-06-01",
             'source: "adhoc"', f"tags: [{slug.split('-')[0]}]"]
    lines += [f"{k}: {v}" for k, v in fields.items()]
    return "\n".join(lines) + f"\n---\n\nThe body of {slug}.\n"


def tracker_text(slug: str, strength: int, last: str) -> str:
    return (f"slug: {slug}\nreferences: {strength}\nlast_referenced: {last}\nstrength: {strength}\n"
            f"recent_references:\n  - conversation_id: \"c1\"\n    count: 1\n    last: {last}\n")


def make_store(root: Path, memories: dict[str, tuple[str, int, str | None]] = MEMORIES) -> Path:
    (root / ".crux/reference-tracking").mkdir(parents=True)
    (root / ".crux/crux-memories.json").write_text(json.dumps({"flags": [{"enableMemories": "true"}]}))
    for key, (type_, strength, last) in memories.items():
        (root / key).parent.mkdir(parents=True, exist_ok=True)
        (root / key).write_text(memory_text(key, type_, strength))
        slug = Path(key).name.split(".")[0]
        if last is not None:
            (root / f".crux/reference-tracking/{slug}.refs.yml").write_text(tracker_text(slug, strength, last))
    return root


def run_json(root: Path, *extra: str) -> dict:
    res = run_cli("run", str(root), "--now", NOW, "--json", *extra)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def moves(p: dict) -> list[tuple[str, str, str | None, str | None]]:
    return sorted((a["kind"], a["targets"][0], a["from_type"], a["to_path"]) for a in p["actions"] if a["kind"] in MOVES)


def folder(key: str) -> str:
    return key.rsplit("/", 1)[0]


def automatic(p: dict) -> list[tuple[str, str]]:
    return [(a["kind"], a["targets"][0]) for a in p["actions"] if not a["needs_user"]]


@pytest.mark.parametrize("model", ["none", "stub"])
def test_no_move_is_offered_into_the_folder_the_memory_is_in(tmp_path, model):
    p = plan_json(make_store(tmp_path / "crux"), "--model", model)
    assert p["errors"] == []
    assert [m for m in moves(p) if folder(m[3] or "") == folder(m[1])] == []
    # each is judged as its folder's type
    assert moves(p) == [
        ("archive", "memories/idea/interrupted-demote.memory.md", "idea", "memories/archived/interrupted-demote.memory.md"),
        ("demote", "memories/core/interrupted-core.memory.md", "core", "memories/learning/interrupted-core.memory.md"),
        ("promote", "memories/learning/strong-interrupted.memory.md", "learning", "memories/core/strong-interrupted.memory.md"),
    ]


def test_each_mismatch_is_a_finding_naming_the_file_its_folder_and_its_type(tmp_path):
    p = plan_json(make_store(tmp_path / "crux"), "--model", "none")
    found = {f["targets"][0]: f["reason"] for f in p["findings"] if f["kind"] == "type_mismatch"}
    mismatched = {k for k, (type_, _, _) in MEMORIES.items() if folder(k).rsplit("/", 1)[1] != type_}
    # but the one the plan archives automatically: the archive sets its type
    archived = {a["targets"][0] for a in p["actions"] if a["kind"] == "archive" and not a["needs_user"]}
    assert archived == {"memories/idea/interrupted-demote.memory.md"}
    assert sorted(found) == sorted(mismatched - archived)
    reason = found["memories/learning/interrupted-promote.memory.md"]
    assert reason.startswith("in memories/learning/ but typed idea: read as learning, its folder's type")
    assert "set `type: learning` (with `promoted_from: idea` and `modified`" in reason
    assert "or move it to memories/idea/ if idea is right" in reason
    assert "with `demoted_from: learning`" in found["memories/idea/fresh-demote.memory.md"]
    assert reason.endswith("a promote, demote or archive of it sets `type` as it moves the file")
    assert found["memories/archived/interrupted-archive.memory.md"].startswith(
        "in memories/archived/ but typed learning: read as archived, its folder's type")
    typed = found["memories/learning/typed-archived.memory.md"]
    assert typed.startswith("in memories/learning/ but typed archived: read as archived, as its type says: no move is proposed")
    assert "set `type: learning` (with `promoted_from: archived`" in typed and "or move it to memories/archived/" in typed
    agent = found["memories/agents/bot/learning/agent-interrupted.memory.md"]
    assert agent.startswith("in memories/agents/bot/learning/ but typed idea: read as learning")
    assert "memories/agents/bot/idea/" in agent


@pytest.mark.parametrize("model", ["none", "stub"])
def test_a_second_run_on_a_store_with_mismatches_does_nothing(tmp_path, model):
    root = make_store(tmp_path / "crux")
    first = run_json(root, "--model", model)
    assert first["apply"]["skipped"] == [] and first["apply"]["applied"]
    # the moves set `type` as they go (step 5 of the file move)
    core = (root / "memories/core/strong-interrupted.memory.md").read_text()
    assert 'type: "core"' in core and 'promoted_from: "learning"' in core
    tree = files(root)
    second = run_json(root, "--model", model)
    assert second["apply"]["applied"] == [] and second["apply"]["run_id"] is None
    assert files(root) == tree
    assert automatic(plan_json(root, "--model", model)) == []


def test_every_move_offered_on_a_store_with_mismatches_applies_and_undoes_byte_for_byte(tmp_path):
    root = make_store(tmp_path / "crux")
    # and a member a consolidation left behind, in learning/ typed idea: its archive needs the user
    holder, member = "memories/core/holder.memory.md", "memories/learning/left-member.memory.md"
    (root / holder).write_text(memory_text(holder, "core", 2, consolidated_from='["abc1234"]', modified="2026-10-01")
                               .replace("modified: 2026-06-01\n", "", 1))
    (root / member).write_text(memory_text(member, "idea", 1, id='"abc1234"'))
    (root / ".crux/reference-tracking/holder.refs.yml").write_text(tracker_text("holder", 2, FRESH))
    before = snapshot(root)
    p = plan_json(root, "--model", "none")
    offered = [f"{i}={a['fingerprint']}" for i, a in enumerate(p["actions"], 1) if a["kind"] in MOVES]
    assert any(a.get("consolidated_into") == holder and a["from_type"] == "learning" for a in p["actions"])
    assert len(offered) == 4
    out = apply_json(root, "--select", ",".join(offered))
    assert out["skipped"] == [] and len(out["applied"]) == len(offered)
    assert run_cli("undo", str(root)).returncode == 0
    assert snapshot(root) == before


def test_a_promotion_into_its_own_type_is_a_config_issue_not_a_move():
    crux = CruxConfig(typeTransitions={"idea": TypeTransition(promoteAt=5, promoteTo="idea")})
    m = Memory(key="memories/idea/x.memory.md", layout="crux", title="x", body="b", type="idea", strength=5,
               extra={"scope": "base", "agent": None, "folder_type": "idea", "twin": None})
    out = promotions([m], crux)
    assert out.actions == []
    [f] = out.findings
    assert (f.kind, f.targets) == ("config_issue", [m.key])
    assert "typeTransitions.idea promoteTo 'idea' is its own type: promotion skipped (strength 5 ≥ threshold 5)" == f.reason


def test_a_mismatch_with_a_twin_asks_for_the_type_in_both_files():
    m = Memory(key="memories/learning/x.memory.crux.md", layout="crux", title="x", body="b", type="idea",
               extra={"scope": "base", "agent": None, "folder_type": "learning", "twin": "memories/learning/x.memory.md"})
    [f] = type_mismatches([m], CruxConfig())
    assert "(with `promoted_from: idea` and `modified`, as the move would have) in it and its twin memories/learning/x.memory.md" in f.reason


def test_a_folder_that_is_no_type_leaves_the_type_field_in_charge():
    # memories/notes/ is not a type of typePriority: the `type` field is all there is to go by
    m = Memory(key="memories/notes/x.memory.md", layout="crux", title="x", body="b", type="idea", strength=5,
               extra={"scope": "base", "agent": None, "folder_type": "notes", "twin": None})
    assert type_of(m, CruxConfig()) == "idea" and type_mismatches([m], CruxConfig()) == []
    [a] = promotions([m], CruxConfig()).actions
    assert (a.from_type, a.to_path) == ("idea", "memories/learning/x.memory.md")


# --- every consumer of a crux memory's type reads it as its folder's (the reader's `Memory.type`) ---

# The same memory, in core/ but typed learning (a promotion cut short between the file's move and
# the type's edit), in each test below: each consumer must count, group and rank it as a core.
CUT_SHORT = "memories/core/money-as-integers.memory.md"


def write_memory(root: Path, key: str, type_: str, title: str, tags: str, strength: int = 2) -> None:
    slug = Path(key).name.split(".")[0]
    (root / key).parent.mkdir(parents=True, exist_ok=True)
    (root / key).write_text("\n".join([
        "---", f'title: "{title}"', f'description: "{title}."', f'type: "{type_}"', f"strength: {strength}",
        "created: 2026-06-01", "modified: 2026-06-01", 'source: "adhoc"', f"tags: [{tags}]", "---", "",
        f"# {title}", "", f"{title}.", ""]))
    (root / f".crux/reference-tracking/{slug}.refs.yml").write_text(tracker_text(slug, strength, FRESH))


def typed_store(root: Path, consolidation: bool = False) -> Path:
    flags = [{"enableMemories": "true"}] + ([{"enableMemoryConsolidation": "true"}] if consolidation else [])
    (root / ".crux/reference-tracking").mkdir(parents=True)
    (root / ".crux/crux-memories.json").write_text(json.dumps({"flags": flags}))
    write_memory(root, CUT_SHORT, "learning", "Always store money amounts as integer minor units",
                 "money, database, api, currency", strength=4)
    return root


def test_the_reader_gives_the_folders_type_and_keeps_the_field_for_the_finding(tmp_path):
    root = typed_store(tmp_path / "crux")
    write_memory(root, "memories/learning/typed-archived.memory.md", "archived", "Typed archived", "misc")
    corpus, _ = open_store(root, settings_for("none"))
    cut, archived = corpus.by_key()[CUT_SHORT], corpus.by_key()["memories/learning/typed-archived.memory.md"]
    assert cut.type == "core"
    # typed archived in learning/: read as archived everywhere (no move), as its type says
    assert archived.type == "archived" and is_archived(archived)
    # the finding still reads the field itself
    found = {f.targets[0]: f.reason for f in type_mismatches(corpus.memories, CruxConfig())}
    assert found[CUT_SHORT].startswith("in memories/core/ but typed learning: read as core")
    assert found[archived.key].startswith("in memories/learning/ but typed archived: read as archived, as its type says")


def test_a_conflict_names_the_memory_in_core_as_the_core_one(tmp_path):
    root = typed_store(tmp_path / "crux")
    write_memory(root, "memories/idea/money-as-decimals.memory.md", "idea",
                 "Never store money amounts as integer minor units", "money, database, currency, decimal", strength=1)
    [conflict] = [a for a in plan_json(root, "--model", "stub")["actions"] if a["kind"] == "conflict"]
    assert conflict["reason"].endswith(f" — a idea memory contradicts a core memory ({CUT_SHORT})")


def test_a_consolidation_groups_the_memory_in_core_with_the_core_ones(tmp_path):
    root = typed_store(tmp_path / "crux", consolidation=True)
    for slug, extra in (("ack-webhooks", "latency"), ("dedupe-webhooks", "idempotency")):
        write_memory(root, f"memories/core/{slug}.memory.md", "core", f"Webhooks {slug}", f"webhooks, reliability, payments, {extra}")
    # first in merge order (created alike, then by key): the merged memory takes its type
    retry = "memories/core/a-retry-webhooks.memory.md"
    write_memory(root, retry, "learning", "Webhooks retry", "webhooks, reliability, payments, backoff")
    plan = plan_json(root, "--model", "stub", "--max-retire", "1")  # three of four memories retire
    [group] = [a for a in plan["actions"] if a["kind"] == "consolidate"]
    assert group["targets"][0] == retry and len(group["targets"]) == 3
    # one type, so the reason names none, and the merged memory is a core written into core/
    assert "; types" not in group["reason"]
    [merged] = group["outputs"]
    assert (group["to_type"], merged["frontmatter"]["type"]) == ("core", "core")
    assert merged["path"].startswith("memories/core/")


def run_typed_store(root: Path) -> Path:
    """The store with a stronger learning beside the memory in core/, run with no model: no index
    yet, so the run rebuilds it, and writes its REM summary."""
    typed_store(root)
    write_memory(root, "memories/learning/a-learning.memory.md", "learning", "A learning", "misc", strength=9)
    out = run_json(root, "--model", "none")
    assert [a["kind"] for a in out["apply"]["applied"]] == ["rebuild_index"]
    return root


def test_the_rebuilt_index_types_and_ranks_the_memory_in_core_as_a_core(tmp_path):
    root = run_typed_store(tmp_path / "crux")
    entries = yaml.safe_load((root / ".crux/memory-index.yml").read_text())["memories"]
    # ahead of the stronger learning: ranked by type first
    assert [(e["file"], e["type"]) for e in entries] == [(CUT_SHORT, "core"), ("memories/learning/a-learning.memory.md", "learning")]


def test_the_rem_summary_and_status_count_the_memory_in_core_as_a_core(tmp_path):
    root = run_typed_store(tmp_path / "crux")
    [rem] = (root / ".ai-ignored/executed").glob("rem-*.md")
    assert "- By type: core=1, redflag=0, goal=0, learning=1, idea=0, archived=0\n" in rem.read_text()
    status = run_cli("status", str(root), "--json", "--now", NOW)
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["by_type"] == {"core": 1, "learning": 1}


def test_a_memory_typed_archived_in_a_live_folder_is_indexed_and_counted_as_archived(tmp_path):
    """The rules leave it alone as archived; the index and the REM summary said "learning", so the
    agent loaded an archived memory as a learning, ranked among them."""
    root = tmp_path / "crux"
    typed_store(root)
    write_memory(root, "memories/learning/typed-archived.memory.md", "archived", "Typed archived", "misc", strength=9)
    out = run_json(root, "--model", "none")
    assert [a["kind"] for a in out["apply"]["applied"]] == ["rebuild_index"]
    entries = yaml.safe_load((root / ".crux/memory-index.yml").read_text())["memories"]
    assert [(e["file"], e["type"]) for e in entries] == [(CUT_SHORT, "core"), ("memories/learning/typed-archived.memory.md", "archived")]
    [rem] = (root / ".ai-ignored/executed").glob("rem-*.md")
    assert "- By type: core=1, redflag=0, goal=0, learning=0, idea=0, archived=1\n" in rem.read_text()
