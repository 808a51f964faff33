"""Bad files in every layout: a parse_error finding each, the run goes on, nothing is written."""

import os

import pytest

from helpers import FIXTURES, NOW, copy_store, run_cli, snapshot

# Where a memory file of each layout lives, so the bad files are read as memories.
MEMORY_DIRS = {
    "crux": "memories/learning",
    "claude": ".claude/agent-memory/backend-architect",
    "zylos": "reference",
}
SUFFIX = {"crux": ".memory.md", "claude": ".md", "zylos": ".md"}


@pytest.mark.parametrize("layout", sorted(MEMORY_DIRS))
def test_bad_files_are_reported_and_skipped(layout, tmp_path):
    store = copy_store(FIXTURES / layout, tmp_path / layout)
    folder = store / MEMORY_DIRS[layout]
    sfx = SUFFIX[layout]
    (folder / f"bad-binary{sfx}").write_bytes(b"---\ntitle: x\n---\n\x00\x01\x02")
    (folder / f"bad-latin1{sfx}").write_bytes("---\ntitle: caf\xe9\n---\nbody\n".encode("latin-1"))
    (folder / f"bad-huge{sfx}").write_bytes(b"---\ntitle: big\n---\n" + b"x" * (5 * 1024 * 1024))
    outside = tmp_path / "secret.md"
    outside.write_text("---\ntitle: outside\n---\nnot part of the store\n")
    os.symlink(outside, folder / f"bad-link{sfx}")
    if layout != "zylos":
        (folder / f"bad-yaml{sfx}").write_text("---\ntitle: [unclosed\n---\nbody\n")
    before = snapshot(store)
    res = run_cli("plan", str(store), "--json", "--now", NOW, "--model", "none")
    assert res.returncode == 0, res.stderr
    assert "Traceback" not in res.stderr
    import json

    plan = json.loads(res.stdout)
    reported = {t for f in plan["findings"] if f["kind"] == "parse_error" for t in f["targets"]}
    names = {p.rsplit("/", 1)[-1] for p in reported}
    expected = {f"bad-binary{sfx}", f"bad-latin1{sfx}", f"bad-huge{sfx}", f"bad-link{sfx}"}
    if layout != "zylos":
        expected.add(f"bad-yaml{sfx}")
    assert expected <= names, names
    # none of them is acted on, and plan wrote nothing
    acted = {t for a in plan["actions"] for t in a["targets"]}
    assert not {t for t in acted if t.rsplit("/", 1)[-1].startswith("bad-")}
    assert snapshot(store) == before


def test_bad_bank_lines_are_reported_and_the_rest_loads(tmp_path):
    store = copy_store(FIXTURES / "bank", tmp_path / "bank")
    with open(store / "ops" / "memories.jsonl", "ab") as fh:
        fh.write(b'\xff\xfe not utf8\n')
    res = run_cli("plan", str(store), "--json", "--now", NOW, "--model", "none")
    assert res.returncode == 0
    import json

    plan = json.loads(res.stdout)
    assert any(f["kind"] == "parse_error" and f["targets"] == ["ops/memories.jsonl"] and "not UTF-8" in f["reason"] for f in plan["findings"])
    assert plan["memories"] == 23  # one bad line is reported; every other record still loads
