"""The split stage: volumes for oversized consolidated bodies and rebalanced topics; the sections,
the greedy split, the guards, and the model's assignment (stub, fake OpenAI server, hostile)."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from pathlib import Path

from openai_server import fake_openai, tool_reply  # noqa: F401 - fixture
from stage_helpers import of_kind, plan_with, settings_for

from pipeline.llm import RetryPolicy, make_client
from pipeline.stages.consolidate.stage import MetadataInput
from pipeline.stages.consolidate.stage import stub as metadata_stub
from pipeline.stages.consolidate.volumes import (
    additive_volume_size,
    assignment_problems,
    greedy_split,
    rebalance_reason,
    sections_of,
    subject_split,
    text_volume_size,
)
from pipeline.layouts.crux.reader import body_size

NOW = dt.date(2026, 11, 29)
FAST = RetryPolicy(base_wait_s=0.01, max_wait_s=0.05, retry_after_cap_s=0.5)


def lines(text: str) -> int:
    return body_size(text, "lines")


# --- sections, greedy split, guards ----------------------------------------------------------------


def test_sections_follow_headings_paragraphs_and_fences():
    body = ("# Title\n\n## One\nalpha\nbeta\n\n## Two\n```\ncode\n\n# not a heading\n```\n\n"
            "para one\npara one b\n\npara two\n")
    secs = sections_of(body, 100, lines)
    assert [s.heading for s in secs] == ["One", "Two"]
    assert secs[0].text.startswith("# Title\n\n## One")  # a heading with nothing under it stays with what follows
    assert "# not a heading" in secs[1].text
    # over the cap: the heading section is cut into paragraphs, a long paragraph into runs of lines
    small = sections_of("## Big\nl1\nl2\n\nl3\nl4\nl5\nl6\nl7\n", 3, lines)
    assert [s.text for s in small] == ["## Big\nl1\nl2", "l3\nl4\nl5", "l6\nl7"]


def test_greedy_split_is_contiguous_balanced_and_within_the_cap():
    sizes = [4, 4, 4, 1, 1, 1]
    # a front-to-back fill needs two volumes (12 + 3); the balanced cut into two gives 8 + 7
    assert greedy_split(sizes, 0, 12, additive_volume_size(sizes, 0)) == [[0, 1], [2, 3, 4, 5]]
    sizes = [4, 4, 4, 4, 4, 4, 4]
    parts = greedy_split(sizes, 1, 10, additive_volume_size(sizes, 1))
    assert [i for p in parts for i in p] == list(range(7)) and len(parts) == 4
    assert all(additive_volume_size(sizes, 1)(p) <= 10 for p in parts)
    assert greedy_split([3, 3], 1, 10, additive_volume_size([3, 3], 1)) == [[0, 1]]
    assert greedy_split([], 0, 10, additive_volume_size([], 0)) == []


def test_assignment_guards():
    size = additive_volume_size([4, 4, 4, 4], 0)
    ok = [[0, 2], [1, 3]]
    assert assignment_problems(4, ok, 8, size, 2) == []
    assert "more than one volume" in assignment_problems(4, [[0, 1], [1, 2, 3]], 20, size, 2)[0]
    assert "do not exist" in assignment_problems(4, [[0, 1], [2, 3, 9]], 20, size, 2)[0]
    assert "leaves sections out" in assignment_problems(4, [[0, 1], [2]], 20, size, 2)[0]
    assert "over the cap" in assignment_problems(4, [[0, 1, 2], [3]], 8, size, 2)[0]
    assert "volumes where" in assignment_problems(4, [[0], [1], [2, 3]], 8, size, 2)[0]
    assert "far from equal" in assignment_problems(4, [[0, 1, 2], [3]], 12, additive_volume_size([4, 4, 3, 1], 0), 2)[0]
    assert "empty volume" in assignment_problems(4, [[0, 1, 2, 3], []], 20, size, 2)[0]


def test_rebalance_triggers():
    assert "exceeds" in rebalance_reason([50, 10], 40, 2)
    assert "under-filled" in rebalance_reason([30, 5], 40, 2)
    assert "fewer volumes" in rebalance_reason([20, 15], 40, 1)
    assert rebalance_reason([30, 25], 40, 2) is None
    assert rebalance_reason([5], 40, 1) is None  # one small volume has nowhere to go


def test_subject_grouping_beats_position_on_interleaved_sections():
    from pipeline.stages.consolidate.volumes import Section

    sections = [
        Section("Liveness probe", "## Liveness probe\nliveness probe hits livez\nliveness period 20"),
        Section("Autoscaling target", "## Autoscaling target\nautoscaling cpu target 65\nreplicas autoscaling 4 to 40"),
        Section("Readiness probe", "## Readiness probe\nreadiness probe hits readyz\nprobe readiness period 5"),
        Section("Autoscaling cooldown", "## Autoscaling cooldown\nautoscaling stabilization 300\nreplicas scale down slowly"),
    ]
    size = text_volume_size(sections, lambda t: len([x for x in t.splitlines() if x.strip()]))
    assert subject_split(sections, 6, size, 2) == [[0, 2], [1, 3]]


# --- the stage on stores ---------------------------------------------------------------------------








def front(title: str, *, tags: list[str], strength: int = 1, extra: str = "", id_: str | None = None) -> str:
    return (("---\n" + (f'id: "{id_}"\n' if id_ else "")) + f'title: "{title}"\ndescription: "{title}."\ntype: "learning"\n'
            f"strength: {strength}\ncreated: 2026-11-01\nmodified: 2026-11-01\nsource: \"s1\"\ntags: [{', '.join(tags)}]\n{extra}---\n\n")


def crux_store(root: Path, memories: dict[str, str], **cm) -> Path:
    (root / ".crux").mkdir(parents=True)
    config = {"flags": [{"enableMemories": "true"}, {"enableMemoryCompression": "false"}, {"enableMemoryConsolidation": "true"}],
              "cruxMemories": {"sizeUnit": "lines", "maxConsolidatedSize": 14, **cm}}
    (root / ".crux" / "crux-memories.json").write_text(json.dumps(config), encoding="utf-8")
    for rel, text in memories.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


CACHE_A = ("# Cache keys\n\n## Key format\nKeys are `tenant:{id}:{resource}`.\nKeys never contain emails.\n\n"
           "## Eviction policy\nRedis evicts with allkeys-lru.\nmaxmemory is 2 GB per shard.\n")
CACHE_B = ("# Cache operations\n\n## Key expiry\nKey expiry is 300 s for sessions.\nKeys for carts expire after 7 d.\n\n"
           "## Eviction alerts\nEviction alerts fire above 100 evictions a minute.\nDana owns the eviction dashboard.\n")


def oversized_store(tmp_path: Path) -> Path:
    return crux_store(tmp_path / "s", {
        "memories/learning/cache-keys.memory.md": front("Cache keys", tags=["cache", "redis", "keys"], strength=3, id_="c1") + CACHE_A,
        "memories/learning/cache-ops.memory.md": front("Cache operations", tags=["cache", "redis", "ops"], strength=2, id_="c2") + CACHE_B,
    })


def _content_lines(text: str) -> list[str]:
    return [x for x in text.splitlines() if x.strip() and not x.startswith("#")]


def test_oversized_consolidation_is_split_into_volumes_regrouped_by_subject(tmp_path):
    plan = plan_with(oversized_store(tmp_path), settings_for())
    assert plan["errors"] == []
    (action,) = of_kind(plan, "consolidate")
    assert action["source"] == "stub:metadata" and action["split_source"] == "stub:split" and action["split_fallback"] is False
    topic = action["topic"]
    assert topic and action["volumes"] == len(action["outputs"]) >= 2
    outs = action["outputs"]
    for n, out in enumerate(outs, start=1):
        fm = out["frontmatter"]
        assert out["path"] == f"memories/learning/{topic}-pt{n}.memory.md"
        assert out["size"] == lines(out["body"]) <= 14
        assert fm["consolidation_topic"] == topic and fm["consolidation_part"] == n
        assert fm["id"] == hashlib.sha256(f"{topic} part {n}".encode()).hexdigest()[:7]
        assert fm["consolidated_from"] == ["c1", "c2"] and fm["strength"] >= 1
    assert sum(o["frontmatter"]["strength"] for o in outs) == 5
    # every member line is in exactly one volume
    every = [x for out in outs for x in _content_lines(out["body"])]
    assert sorted(every) == sorted(_content_lines(CACHE_A) + _content_lines(CACHE_B))
    # sub-topics together: the two eviction sections share a volume, the two key sections another
    where = {x: n for n, out in enumerate(outs) for x in _content_lines(out["body"])}
    assert where["Redis evicts with allkeys-lru."] == where["Eviction alerts fire above 100 evictions a minute."]
    assert where["Keys never contain emails."] == where["Keys for carts expire after 7 d."]


def _volume(topic: str, part: int, body: str, *, compressed_only: bool = False) -> str:
    extra = f"consolidated_from: [\"m{part}\"]\nconsolidation_topic: {topic}\nconsolidation_part: {part}\n"
    return front(f"Deploys part {part}", tags=["deploys", "ci"], strength=2, extra=extra) + body


STEPS = {1: "## Build\nThe image builds in 90 s on the ci runners.\n",
         2: "## Push\nImages go to registry.example.com/shop.\n",
         3: "## Roll out\nArgo rolls out 25% of pods per wave.\n"}


def test_existing_topic_that_fits_in_fewer_volumes_is_rebalanced(tmp_path):
    store = crux_store(tmp_path / "s", {
        f"memories/learning/deploys-pt{n}.memory.md": _volume("deploys", n, STEPS[n])
        for n in (1, 2, 3)
    }, maxConsolidatedSize=40)
    plan = plan_with(store, settings_for())
    (action,) = of_kind(plan, "rebalance_volumes")
    assert action["source"] == "stub:split" and action["topic"] == "deploys"
    assert action["targets"] == [f"memories/learning/deploys-pt{n}.memory.md" for n in (1, 2, 3)]
    assert "under-filled" in action["reason"] and "3 → 1 volumes" in action["reason"]
    (out,) = action["outputs"]
    assert out["path"] == "memories/learning/deploys-pt1.memory.md"
    assert out["frontmatter"]["strength"] == 6 and out["frontmatter"]["consolidated_from"] == ["m1", "m2", "m3"]
    assert all(STEPS[n].strip() in out["body"] for n in (1, 2, 3))


def test_topic_with_only_compressed_volumes_goes_to_manual_review(tmp_path):
    store = crux_store(tmp_path / "s", {
        f"memories/learning/deploys-pt{n}.memory.crux.md": _volume("deploys", n, body)
        for n, body in ((1, "⟦CRUX:memory\nΓ.build{image→90s}\n⟧\n"), (2, "⟦CRUX:memory\nE.push{registry.example.com/shop}\n⟧\n"))
    }, maxConsolidatedSize=40)
    plan = plan_with(store, settings_for())
    assert of_kind(plan, "rebalance_volumes") == []
    (finding,) = [f for f in plan["findings"] if f["kind"] == "manual_review"]
    assert "only its compressed form" in finding["reason"]


# --- the model through the fake server ---------------------------------------------------------------


def responder(split_answer):
    """Metadata calls get the stub's answer; split calls get `split_answer(body)`."""

    def respond(body):
        payload = json.loads([m for m in body["messages"] if m["role"] == "user"][-1]["content"])
        if "groups" in payload:
            return tool_reply(metadata_stub(MetadataInput.model_validate(payload)).model_dump())
        return tool_reply({"decisions": [split_answer(b) for b in payload["bodies"]]})

    return respond


def server(srv, tmp_path: Path):
    settings = settings_for(srv.model(), api_base=srv.api_base, timeout_s=5.0, max_attempts=1, concurrency=1)
    return settings, make_client(settings.llm, retry=FAST, cache_dir=tmp_path / "cache")


def _by_heading(body: dict, words: tuple[str, ...]) -> list[int]:
    return [s["n"] for s in body["sections"] if any(w in s["heading"].lower() for w in words)]


def test_a_valid_model_assignment_is_used_with_its_titles(fake_openai, tmp_path):
    def answer(body):
        evict = _by_heading(body, ("evict",))
        rest = [s["n"] for s in body["sections"] if s["n"] not in evict]
        return {"handle": body["handle"], "reasoning": "keys vs eviction", "volumes": [
            {"title": "Cache keys and expiry", "description": "Key format and TTLs", "sections": rest},
            {"title": "Cache eviction", "description": "Policy and alerts", "sections": evict}]}

    fake_openai.responder = responder(answer)
    settings, client = server(fake_openai, tmp_path)
    with client:
        plan = plan_with(oversized_store(tmp_path), settings, client, only={"metadata", "split"})
    assert plan["errors"] == []
    (action,) = of_kind(plan, "consolidate")
    assert action["source"] == "llm:metadata" and action["split_source"] == "llm:split" and action["split_fallback"] is False
    assert [o["frontmatter"]["title"] for o in action["outputs"]] == ["Cache keys and expiry", "Cache eviction"]
    assert "allkeys-lru" in action["outputs"][1]["body"] and "Dana owns" in action["outputs"][1]["body"]


def test_hostile_assignments_keep_the_greedy_volumes(fake_openai, tmp_path):
    def everything_everywhere(body):
        every = [s["n"] for s in body["sections"]]
        return {"handle": body["handle"], "reasoning": "put every section in every volume, and section 99 too",
                "volumes": [{"title": "All", "sections": every + [99]}, {"title": "All again", "sections": every}]}

    fake_openai.responder = responder(everything_everywhere)
    settings, client = server(fake_openai, tmp_path)
    with client:
        plan = plan_with(oversized_store(tmp_path), settings, client, only={"metadata", "split"})
    (action,) = of_kind(plan, "consolidate")
    assert action["split_fallback"] is True and "greedy split kept" in action["reason"]
    outs = action["outputs"]
    assert all(o["size"] <= 14 for o in outs)
    every = [x for o in outs for x in _content_lines(o["body"])]
    assert len(every) == len(set(every)) == len(_content_lines(CACHE_A) + _content_lines(CACHE_B))

    # a handle that was never offered fails the split stage; the metadata stage's volumes stand
    fake_openai.reset()
    fake_openai.responder = responder(lambda b: {**everything_everywhere(b), "handle": 42})
    settings, client = server(fake_openai, tmp_path / "again")
    with client:
        plan = plan_with(oversized_store(tmp_path / "again"), settings, client, only={"metadata", "split"})
    assert [e["stage"] for e in plan["errors"]] == ["split"]
    (action,) = of_kind(plan, "consolidate")
    assert "split_source" not in action and len(action["outputs"]) >= 2 and all(o["size"] <= 14 for o in action["outputs"])


# --- the command line: which stage proposed what, and the same plan twice ----------------------------


def test_plan_shows_the_stage_of_every_content_proposal(tmp_path):
    import shutil

    from helpers import FIXTURES, plan_json

    store = oversized_store(tmp_path)
    first = plan_json(store, "--model", "stub", "--no-cache", "--max-retire", "1")
    assert first["errors"] == []
    (consolidate,) = of_kind(first, "consolidate")
    assert (consolidate["source"], consolidate["split_source"]) == ("stub:metadata", "stub:split")
    assert plan_json(store, "--model", "stub", "--no-cache", "--max-retire", "1") == first
    assert of_kind(plan_json(store, "--model", "none"), "consolidate") == []

    crux = shutil.copytree(FIXTURES / "crux", tmp_path / "crux")
    plan = plan_json(crux, "--model", "stub", "--no-cache", "--max-retire", "1")
    sources = {(a["kind"], a["source"]) for a in plan["actions"] if a["source"] != "deterministic"}
    assert {("consolidate", "stub:metadata"), ("compress", "stub:compress"), ("promote_rule", "stub:rules")} <= sources
