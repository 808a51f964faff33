"""The crux reader on small hand-made stores: twins, scopes, quirks, trackers, index, bad files."""

import json
import os
from pathlib import Path

from pipeline.config import Settings
from pipeline.layouts.crux import reader as adapter

CONFIG = {
    "flags": [{"enableMemories": "true"}],
    "cruxMemories": {"enabled": "${flags.enableMemories}", "storage": {"memoriesDir": "memories"}},
}


def fm(**fields) -> str:
    lines = ["---"]
    for k, v in fields.items():
        lines.append(f"{k}: {v}")
    lines.append("---")
    return "\n".join(lines) + "\n"


def make_store(root: Path, files: dict[str, str | bytes], config: dict | None = None) -> Path:
    (root / ".crux").mkdir(parents=True, exist_ok=True)
    (root / ".crux" / "crux-memories.json").write_text(json.dumps(config or CONFIG))
    for rel_path, content in files.items():
        p = root / rel_path
        p.parent.mkdir(parents=True, exist_ok=True)
        (p.write_bytes if isinstance(content, bytes) else p.write_text)(content)
    return root


def load(root: Path):
    settings = adapter.configure(root, Settings())
    return adapter.load(root, settings)


def errors(corpus):
    return {(f.targets[0], f.reason) for f in corpus.findings if f.kind == "parse_error"}


def test_twin_pair_is_one_memory_with_the_compressed_file_primary(tmp_path):
    root = make_store(tmp_path, {
        "memories/core/a.memory.md": fm(id='"1111111"', title='"A"', type='"core"', strength=2) + "\nlong original\nbody\n",
        "memories/core/a.memory.crux.md": fm(id='"1111111"', title='"A"', type='"core"', strength=2, reducedBy="69%", compressed="true") + "\n⟦CRUX:memory\nΩ{x}\n⟧\n",
    })
    c = load(root)
    [m] = c.memories
    assert m.key == "memories/core/a.memory.crux.md"
    assert m.extra["twin"] == "memories/core/a.memory.md"
    assert m.extra["compressed"] is True
    assert m.meta["reducedBy"] == "69%"
    assert m.extra["twin_body"] == "\nlong original\nbody\n"
    assert c.indexes[".crux/memory-index.yml"] == ["memories/core/a.memory.crux.md"]


def test_parse_error_in_the_twin_is_reported_and_the_memory_still_loads(tmp_path):
    root = make_store(tmp_path, {
        "memories/core/a.memory.md": "---\ntitle: [broken\n---\nbody\n",
        "memories/core/a.memory.crux.md": fm(title='"A"', type='"core"') + "crux body\n",
    })
    c = load(root)
    assert [m.key for m in c.memories] == ["memories/core/a.memory.crux.md"]
    assert [t for t, _ in errors(c)] == ["memories/core/a.memory.md"]


def test_unreadable_compressed_file_falls_back_to_the_original(tmp_path):
    root = make_store(tmp_path, {
        "memories/core/a.memory.md": fm(title='"A"', type='"core"') + "body\n",
        "memories/core/a.memory.crux.md": b"---\ntitle: \xff\xfe\n---\n",
    })
    c = load(root)
    [m] = c.memories
    assert m.key == "memories/core/a.memory.md" and m.extra["twin"] == "memories/core/a.memory.crux.md"
    assert [t for t, _ in errors(c)] == ["memories/core/a.memory.crux.md"]
    assert c.extra["crux"]["unreadable"] == ["memories/core/a.memory.crux.md"]


def test_same_slug_in_different_folders_are_different_memories(tmp_path):
    root = make_store(tmp_path, {
        "memories/core/a.memory.md": fm(type="core") + "one\n",
        "memories/learning/a.memory.crux.md": fm(type="learning") + "two\n",
    })
    assert [m.key for m in load(root).memories] == ["memories/core/a.memory.md", "memories/learning/a.memory.crux.md"]


def test_scope_group_and_type_from_folder(tmp_path):
    root = make_store(tmp_path, {
        "memories/agents/release-bot/learning/x.memory.md": fm(title='"X"') + "x\n",
        "memories/redflag/y.memory.md": fm(title='"Y"', type='"redflag"') + "y\n",
        "memories/idea/z.memory.md": "no front matter at all\n",
    })
    ms = {m.slug: m for m in load(root).memories}
    assert (ms["x"].group, ms["x"].extra["scope"], ms["x"].extra["agent"], ms["x"].type) == ("agent:release-bot", "agent", "release-bot", "learning")
    assert (ms["y"].group, ms["y"].extra["scope"], ms["y"].type) == ("base", "base", "redflag")
    assert ms["z"].type == "idea" and not ms["z"].has_frontmatter


def test_front_matter_quirks_of_the_real_store(tmp_path):
    text = (
        '---\ntitle: "Q"\ndescription: "d"\ntype: "learning"\nstrength: 2\ncreated: 2026-04-27\nmodified: 2026-05-24\n'
        '\nsource: "spec:20260425-crux-meditate"\ntags: [a, b]\nconsolidated_from: ["abc1234", "def5678"]\n'
        "compressionTarget: 33\n---\n\nbody\n"
    )
    root = make_store(tmp_path, {
        "memories/learning/q.memory.md": text,
        # created by the consolidation's day (q's `modified`): a member (without a date it would not be)
        "memories/learning/member.memory.md": fm(id='"abc1234"', type="learning", created="2026-04-27") + "member\n",
        "memories/learning/n.memory.md": fm(id="0123456", type="learning") + "n\n",
    })
    ms = {m.slug: m for m in load(root).memories}
    q = ms["q"]
    assert q.id is None and q.source == "spec:20260425-crux-meditate" and q.tags == ["a", "b"]
    assert str(q.created) == "2026-04-27" and q.strength == 2
    assert q.extra["consolidated_from"] == ["abc1234", "def5678"]
    assert list(q.meta) == ["title", "description", "type", "strength", "created", "modified", "source", "tags",
                            "consolidated_from", "compressionTarget"]
    assert q.body == "\nbody\n"
    assert ms["member"].extra["merged_into"] == "memories/learning/q.memory.md"
    # an unquoted id that YAML reads as an (octal) number keeps its written form
    assert ms["n"].id == "0123456"


def test_size_in_the_configured_unit(tmp_path):
    body = "\n" + "x" * 40 + "\n" + "y" * 40 + "\n"
    cfg = json.loads(json.dumps(CONFIG))
    for unit, expected in (("lines", 3), ("bytes", len(body.encode())), ("tokens", 21)):
        cfg["cruxMemories"]["sizeUnit"] = unit
        root = make_store(tmp_path / unit, {"memories/idea/a.memory.md": fm(type="idea") + body}, cfg)
        [m] = load(root).memories
        assert m.extra["size"] == expected, unit
        assert m.extra["lines"] == 3


def test_trackers_are_read_and_joined_by_slug(tmp_path):
    root = make_store(tmp_path, {
        "memories/core/a.memory.crux.md": fm(type="core", strength=3) + "a\n",
        ".crux/reference-tracking/a.refs.yml": "# managed\nslug: a\nreferences: 7\nlast_referenced: 2026-05-24\nstrength: 3\n"
        'recent_references:\n  - conversation_id: "c1"\n    count: 1\n    last: 2026-05-24\n',
        ".crux/reference-tracking/bad.refs.yml": "slug: bad\nreferences: [1\n",
        ".crux/reference-tracking/list.refs.yml": "- 1\n- 2\n",
    })
    c = load(root)
    [t] = c.trackers
    assert (t.slug, t.references, str(t.last_referenced), t.strength) == ("a", 7, "2026-05-24", 3)
    assert t.recent_references[0]["conversation_id"] == "c1"
    assert c.memories[0].extra["tracker"] == ".crux/reference-tracking/a.refs.yml"
    assert {k for k, _ in errors(c)} == {".crux/reference-tracking/bad.refs.yml", ".crux/reference-tracking/list.refs.yml"}


def test_index_entries_and_expected_files(tmp_path):
    root = make_store(tmp_path, {
        "memories/core/a.memory.md": fm(type="core") + "a\n",
        "memories/core/a.memory.crux.md": fm(type="core") + "a\n",
        "memories/idea/b.memory.md": fm(type="idea") + "b\n",
        ".crux/memory-index.yml": "# generated\n\nmemories:\n- slug: a\n  title: A\n  file: memories/core/a.memory.crux.md\n"
        "- slug: gone\n  file: memories/idea/gone.memory.md\n- slug: nofile\n",
    })
    c = load(root)
    assert [e.target for e in c.index_entries] == [
        "memories/core/a.memory.crux.md", "memories/idea/gone.memory.md", "(entry without file: nofile)"]
    assert c.indexes == {".crux/memory-index.yml": ["memories/core/a.memory.crux.md", "memories/idea/b.memory.md"]}
    assert c.extra["index_present"] == {".crux/memory-index.yml": True}


def test_missing_and_malformed_index(tmp_path):
    root = make_store(tmp_path / "missing", {"memories/idea/b.memory.md": fm(type="idea") + "b\n"})
    assert load(root).extra["index_present"] == {".crux/memory-index.yml": False}
    root = make_store(tmp_path / "bad", {"memories/idea/b.memory.md": fm(type="idea") + "b\n",
                                         ".crux/memory-index.yml": "memories: [\n"})
    c = load(root)
    assert [k for k, _ in errors(c)] == [".crux/memory-index.yml"] and c.index_entries == []


def test_bad_files_become_parse_errors_and_the_run_goes_on(tmp_path):
    outside = tmp_path / "secret.memory.md"
    outside.write_text(fm(type="core") + "outside the store\n")
    root = make_store(tmp_path / "store", {
        "memories/core/ok.memory.md": fm(type="core") + "fine\n",
        "memories/core/latin1.memory.md": "---\ntitle: caf\xe9\n---\n".encode("latin-1"),
        "memories/core/binary.memory.md": b"\x00\x01\x02",
        "memories/core/list.memory.md": "---\n- a\n- b\n---\nbody\n",
    })
    os.symlink(outside, root / "memories/core/link.memory.md")
    c = load(root)
    assert [m.slug for m in c.memories] == ["ok"]
    assert {k for k, _ in errors(c)} == {
        "memories/core/latin1.memory.md", "memories/core/binary.memory.md",
        "memories/core/list.memory.md", "memories/core/link.memory.md"}


def test_storage_folders_from_config(tmp_path):
    cfg = {"cruxMemories": {"storage": {"memoriesDir": "mem", "agentMemoriesDir": "agent-mem", "indexFile": "idx.yml"},
                            "referenceTracking": {"trackingDir": "refs"}}}
    root = make_store(tmp_path, {
        "mem/core/a.memory.md": fm(type="core") + "a\n",
        "agent-mem/bot/idea/b.memory.md": fm(type="idea") + "b\n",
        "memories/core/ignored.memory.md": fm(type="core") + "not in memoriesDir\n",
        "refs/a.refs.yml": "slug: a\nreferences: 1\n",
    }, cfg)
    c = load(root)
    assert [(m.key, m.group) for m in c.memories] == [("agent-mem/bot/idea/b.memory.md", "agent:bot"), ("mem/core/a.memory.md", "base")]
    assert [t.key for t in c.trackers] == ["refs/a.refs.yml"]
    assert list(c.indexes) == ["idx.yml"]


def test_units_of_work_are_listed_from_work_dir_and_archive(tmp_path):
    root = make_store(tmp_path, {
        "memories/idea/a.memory.md": fm(type="idea") + "a\n",
        "specs/20261102-x/spec.md": "x",
        ".ai-ignored/executed/20260903-y/report.md": "y",
    })
    store = load(root).extra["crux"]
    assert store["work_dir_exists"] and store["units"] == ["20260903-y", "20261102-x"]
    root2 = make_store(tmp_path / "nospecs", {"memories/idea/a.memory.md": fm(type="idea") + "a\n"})
    assert load(root2).extra["crux"]["work_dir_exists"] is False
