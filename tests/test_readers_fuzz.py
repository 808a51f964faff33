"""Hostile stores for every reader: `plan` must report, never raise, never hang, never depend on the machine.

Hypothesis builds stores per layout out of odd YAML (bad dates, huge integers, alias bombs, deep
nesting, tabs, non-string keys, lists where strings belong), random bytes, `---` inside bodies, file
names with spaces, unicode and newlines, and symlink loops. The targeted tests below pin each defect
found this way.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from helpers import NOW, run_cli, snapshot
from helpers import calls_made, cpu_growth, fifo_watch, run_cli_process
from pipeline.config import LLMConfig, Settings
from pipeline.errors import ConfigError
from pipeline.plan import build_plan
from pipeline.render.plan import render_plan as render
from pipeline.layouts.registry import open_store
from pipeline.layouts.zylos.reader import HEADING

NOW_DATE = dt.date.fromisoformat(NOW)
FUZZ = settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)


def plan_bytes(root: Path, layout: str = "auto"):
    """The corpus, and the plan as the CLI prints it (JSON and report), encoded strictly as UTF-8.

    A strict encode is what a UTF-8 terminal without surrogateescape does: any lone surrogate that
    reaches the output would crash there, so it must crash here.
    """
    base = Settings(now=NOW_DATE, layout=layout, llm=LLMConfig(model="none"))
    corpus, resolved = open_store(root, base)
    plan = build_plan(corpus, resolved)
    text = json.dumps(plan.to_json_dict(), ensure_ascii=False, indent=2) + "\n" + render(plan)
    return corpus, plan, text.encode("utf-8")


def parse_errors(plan) -> dict[str, str]:
    return {t: f.reason for f in plan.findings if f.kind == "parse_error" for t in f.targets}


def write(path: Path, data: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)


def crux_base(root: Path) -> Path:
    write(root / ".crux/crux-memories.json", "{}")
    write(root / "memories/learning/base.memory.md", "---\ntitle: Base\ntype: learning\nstrength: 2\n---\nA base memory.\n")
    return root


def claude_base(root: Path) -> Path:
    write(root / ".claude/agent-memory/a/MEMORY.md", "# Index\n- [Base](base.md) — a base memory\n")
    write(root / ".claude/agent-memory/a/base.md", "---\nname: Base\ntype: project\n---\nA base memory.\n")
    return root


def zylos_base(root: Path) -> Path:
    write(root / "identity.md", "# Identity\n")
    write(root / "state.md", "# State\n")
    write(root / "references.md", "# References\n")
    write(root / "reference/decisions.md", "# Decisions\n\n### Base\n- **Decision:** keep a base\n")
    write(root / "sessions/current.md", "# Session Log: 2026-11-29\n")
    return root


def bank_base(root: Path) -> Path:
    write(root / "b/memories.jsonl", json.dumps({"id": "base", "text": "A base memory."}) + "\n")
    return root


# ------------------------------------------------------------------------------------------------
# strategies

_BOMB = "\n".join(
    [f"l0: &l0 [{', '.join(['x'] * 9)}]"]
    + [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, 9)]
)
# Deeper than the stack for PyYAML's pure-Python parser (yaml.safe_load, which reads the crux
# trackers and index; it gives up near 400 levels): a RecursionError, which
# test_yaml_nested_deeper_than_the_stack_is_a_parse_error pins. Deeper only costs more: at 3000
# levels one parse took 1.7 s of CPU (this 0.2 s), and a fuzz example can hold several.
DEEP_YAML = "deep: " + "[" * 600 + "]" * 600
YAML_LINES = [
    "title: Fine",
    "type: learning",
    "type: [learning, core]",
    "type: {a: 1}",
    "strength: 20",
    "strength: '7'",
    "strength: " + "9" * 5000,
    "strength: !!int nope",
    "x: !!float nope",
    "x: !!timestamp 2024-02-30",
    "created: 2024-13-45",
    "created: 2024-02-30",
    "modified: 2024-01-01 25:61:00",
    "modified: '2024-13-45'",
    "created: 0001-01-01",
    "created: 9999-12-31",
    "id: 0123",
    "id: 5" + " " * 50 + "# trailing comment",
    "id: [1, 2]",
    "tags: [a, [b, c], {d: e}, 3, null]",
    "tags: 5",
    "tags: 'a, b'",
    "title: {nested: [1, 2]}",
    "name: [a, b]",
    "description: !!binary aGVsbG8=",
    "source: [spec:x]",
    "source: spec:missing-unit",
    "consolidated_from: 7",
    "consolidated_from: [a, [b]]",
    "consolidation_part: [1]",
    "metadata: {type: [x], tags: 5}",
    "metadata: 3",
    "demoted_from: core",
    "pinned: yes",
    "1: one",
    "2.5: float key",
    "null: ~",
    "true: yes",
    "? [k, l]\n: v",
    "\tindented: tab",
    "key: value\n\tbad: tab",
    "anchor: &a {x: 1}\nalias: *a",
    "self: &s [*s]",
    "nested: " + "[" * 300 + "]" * 300,
    DEEP_YAML,
    "multi: |\n  line one\n  line two",
    "---",
    "...",
    "%YAML 1.1",
    _BOMB + "\ntags: *l8",
    _BOMB + "\ntitle: *l8",
    _BOMB + "\nsource: *l8",
    _BOMB + "\nconsolidated_from: *l8",
    _BOMB + "\nmetadata: {tags: *l8}",
]
BODY_PARTS = [
    "A plain body line.",
    "---",
    "---\nx: 1\n---",
    "```\n### not a heading\n```",
    "### Heading" + " " * 2000 + "#",
    "- **Status:** superseded",
    "- **Importance:** 1",
    "- **Decision:** use the thing",
    "# Session Log: 2024-13-45",
    "See `src/app/main.py` and run_migrations() in lib/db.py",
    "Never do this; avoid that.",
    "\u00e9t\u00e9 \u6f22\u5b57 \u2028 \u0085 \ufeff",
    "\r\n\r\n",
    " " * 3000 + "x",
]
NAME = st.text(
    alphabet=st.sampled_from(list("abcXYZ019 -_.é漢\n\t#[]()!'")), min_size=1, max_size=12
).filter(lambda s: s not in (".", "..") and not s.startswith("."))


@st.composite
def hostile_text(draw) -> bytes:
    kind = draw(st.sampled_from(["frontmatter", "frontmatter", "frontmatter", "bytes", "text", "empty"]))
    if kind == "bytes":
        return draw(st.binary(max_size=300))
    if kind == "empty":
        return b""
    body = "\n".join(draw(st.lists(st.sampled_from(BODY_PARTS), max_size=4)))
    body += draw(st.text(max_size=40))
    if kind == "text":
        return body.encode("utf-8", "surrogatepass")
    lines = draw(st.lists(st.sampled_from(YAML_LINES), min_size=1, max_size=5))
    return ("---\n" + "\n".join(lines) + "\n---\n" + body).encode("utf-8", "surrogatepass")


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
BANK_FIELDS = ["id", "text", "tags", "entities", "corroboration", "pinned", "created_at", "updated_at",
               "revision", "superseded_by", "invalid_at", "source", "confidence"]


@st.composite
def bank_line(draw) -> bytes:
    kind = draw(st.sampled_from(["record", "record", "record", "bytes", "deep", "json"]))
    if kind == "bytes":
        return draw(st.binary(max_size=80)).replace(b"\n", b" ")
    if kind == "deep":
        return b"[" * 100_000 + b"]" * 100_000
    if kind == "json":
        return json.dumps(draw(JSON_VALUES)).encode()
    rec = draw(st.dictionaries(st.sampled_from(BANK_FIELDS), JSON_VALUES, max_size=8))
    rec.setdefault("id", draw(st.sampled_from(["a", "b", 1, "x\udcff", "\ud800"])))
    rec.setdefault("text", draw(st.sampled_from(["same text", "Same text!", "text same", "other"])))
    return json.dumps(rec).encode()


def check_plan(root: Path, layout: str) -> None:
    """No exception, UTF-8 output, identical on a second run, nothing written."""
    before = snapshot(root)
    _, _, first = plan_bytes(root, layout)
    _, _, second = plan_bytes(root, layout)
    assert first == second
    assert snapshot(root) == before


def add_symlink_loops(folder: Path, suffix: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    os.symlink(folder / f"self{suffix}", folder / f"self{suffix}")
    os.symlink(folder / f"ping{suffix}", folder / f"pong{suffix}")
    os.symlink(folder / f"pong{suffix}", folder / f"ping{suffix}")


# ------------------------------------------------------------------------------------------------
# the fuzz, one test per layout


@FUZZ
@given(files=st.lists(st.tuples(NAME, hostile_text()), max_size=4), tracker=hostile_text(), index=hostile_text(),
       loops=st.booleans())
def test_fuzz_crux_store(files, tracker, index, loops):
    with tempfile.TemporaryDirectory() as tmp:
        root = crux_base(Path(tmp))
        for name, data in files:
            write(root / "memories/learning" / f"{name}.memory.md", data)
        write(root / ".crux/reference-tracking/base.refs.yml", tracker)
        write(root / ".crux/memory-index.yml", index)
        if loops:
            add_symlink_loops(root / "memories/core", ".memory.md")
        check_plan(root, "crux")


@FUZZ
@given(files=st.lists(st.tuples(NAME, hostile_text()), max_size=4), index=hostile_text(), loops=st.booleans())
def test_fuzz_claude_store(files, index, loops):
    with tempfile.TemporaryDirectory() as tmp:
        root = claude_base(Path(tmp))
        folder = root / ".claude/agent-memory/a"
        for name, data in files:
            write(folder / f"{name}.md", data)
        write(folder / "MEMORY.md", index)
        if loops:
            add_symlink_loops(folder, ".md")
        check_plan(root, "claude")


@FUZZ
@given(refs=st.lists(st.tuples(NAME, hostile_text()), max_size=3), sessions=st.lists(st.tuples(NAME, hostile_text()), max_size=2),
       core=hostile_text(), current=hostile_text(), loops=st.booleans())
def test_fuzz_zylos_store(refs, sessions, core, current, loops):
    with tempfile.TemporaryDirectory() as tmp:
        root = zylos_base(Path(tmp))
        for name, data in refs:
            write(root / "reference" / f"{name}.md", data)
        for name, data in sessions:
            write(root / "sessions" / f"{name}.md", data)
        write(root / "references.md", core)
        write(root / "sessions/current.md", current)
        if loops:
            add_symlink_loops(root / "sessions", ".md")
            os.symlink(root / "users", root / "users")
        check_plan(root, "zylos")


@FUZZ
@given(lines=st.lists(bank_line(), max_size=6), learned=hostile_text())
def test_fuzz_bank_store(lines, learned):
    with tempfile.TemporaryDirectory() as tmp:
        root = bank_base(Path(tmp))
        with open(root / "b/memories.jsonl", "ab") as fh:
            fh.write(b"\n".join(lines) + b"\n")
        write(root / "b/rules/learned.md", learned)
        check_plan(root, "bank")


# ------------------------------------------------------------------------------------------------
# defects found, one test each


BAD_SCALARS = {
    "impossible date": "created: 2024-13-45",
    "impossible day": "created: 2024-02-30",
    "impossible time": "modified: 2024-01-01 25:00:00",
    "5000-digit integer": "strength: " + "1" * 5000,
    "tagged float": "x: !!float nope",
    "tagged int": "x: !!int nope",
}


@pytest.mark.parametrize("line", BAD_SCALARS.values(), ids=list(BAD_SCALARS))
def test_yaml_values_python_cannot_build_are_parse_errors(tmp_path, line):
    """PyYAML raises ValueError (not YAMLError) when a date or int resolves but cannot be built."""
    crux = crux_base(tmp_path / "crux")
    write(crux / "memories/learning/bad.memory.md", f"---\ntitle: Bad\n{line}\n---\nbody\n")
    write(crux / "memories/learning/base.memory.md", "---\ntitle: Base\ntype: learning\n---\nA base memory.\n")
    write(crux / ".crux/reference-tracking/base.refs.yml", f"references: 3\n{line}\n")
    write(crux / ".crux/memory-index.yml", f"memories: []\n{line}\n")
    _, plan, _ = plan_bytes(crux)
    errors = parse_errors(plan)
    assert set(errors) >= {"memories/learning/bad.memory.md", ".crux/reference-tracking/base.refs.yml", ".crux/memory-index.yml"}
    assert "malformed YAML" in errors["memories/learning/bad.memory.md"]

    claude = claude_base(tmp_path / "claude")
    write(claude / ".claude/agent-memory/a/bad.md", f"---\nname: Bad\n{line}\n---\nbody\n")
    _, plan, _ = plan_bytes(claude)
    assert ".claude/agent-memory/a/bad.md" in parse_errors(plan)


@pytest.mark.parametrize("field", ["tags", "title", "source", "consolidated_from", "metadata: {tags"])
def test_yaml_alias_bomb_is_a_parse_error_not_a_hang(tmp_path, field):
    """Nine levels of nine aliases is 387 million leaves from 400 bytes; str() of it never ends."""
    line = "metadata: {tags: *l8}" if field.startswith("metadata") else f"{field}: *l8"
    crux = crux_base(tmp_path / "crux")
    write(crux / "memories/learning/bomb.memory.md", f"---\n{_BOMB}\n{line}\n---\nbody\n")
    write(crux / ".crux/reference-tracking/base.refs.yml", f"{_BOMB}\nrecent_references: *l8\n")
    claude = claude_base(tmp_path / "claude")
    write(claude / ".claude/agent-memory/a/bomb.md", f"---\n{_BOMB}\n{line}\n---\nbody\n")
    plans = {}
    bomb_work = calls_made(lambda: plans.update(crux=plan_bytes(crux)[1], claude=plan_bytes(claude)[1]))
    assert {"memories/learning/bomb.memory.md", ".crux/reference-tracking/base.refs.yml"} <= set(parse_errors(plans["crux"]))
    assert ".claude/agent-memory/a/bomb.md" in parse_errors(plans["claude"])
    # Not a hang, and no walk of the expansion either: planning the bombs is about as much work
    # as planning the same stores with the same YAML minus its aliases (nine lists of nine x's).
    plain_crux, plain_claude = crux_base(tmp_path / "plain-crux"), claude_base(tmp_path / "plain-claude")
    plain = re.sub(r"&l\d ", "", re.sub(r"\*l\d", "x", _BOMB))
    plain_line = re.sub(r"\*l8", "x", line)
    write(plain_crux / "memories/learning/bomb.memory.md", f"---\n{plain}\n{plain_line}\n---\nbody\n")
    write(plain_crux / ".crux/reference-tracking/base.refs.yml", f"{plain}\nrecent_references: x\n")
    write(plain_claude / ".claude/agent-memory/a/bomb.md", f"---\n{plain}\n{plain_line}\n---\nbody\n")
    plain_work = calls_made(lambda: (plan_bytes(plain_crux), plan_bytes(plain_claude)))
    assert bomb_work < 3 * plain_work, (bomb_work, plain_work)


def test_yaml_nested_deeper_than_the_stack_is_a_parse_error(tmp_path):
    """The pure-Python YAML parser recurses once per level and raises RecursionError past the stack;
    the trackers and the index are read with libyaml (no such limit), and the depth limit of
    text/yaml_load.py keeps such files parse errors."""
    import yaml

    with pytest.raises(RecursionError):  # the premise: this nesting is past the stack here
        yaml.safe_load(DEEP_YAML)
    crux = crux_base(tmp_path / "crux")
    write(crux / ".crux/reference-tracking/base.refs.yml", f"references: 3\n{DEEP_YAML}\n")
    write(crux / ".crux/memory-index.yml", f"memories: []\n{DEEP_YAML}\n")
    _, plan, _ = plan_bytes(crux)
    assert {".crux/reference-tracking/base.refs.yml", ".crux/memory-index.yml"} <= set(parse_errors(plan))


def test_front_matter_nested_past_the_depth_limit_is_a_parse_error(tmp_path):
    """libyaml parses any depth; whatever walks the value later recurses, so the reader refuses it."""
    crux = crux_base(tmp_path)
    write(crux / "memories/learning/deep.memory.md", "---\ntitle: Deep\n" + DEEP_YAML + "\n---\nbody\n")
    _, plan, _ = plan_bytes(crux)
    assert "memories/learning/deep.memory.md" in parse_errors(plan)


def test_recursive_yaml_alias_is_a_parse_error(tmp_path):
    """A self-referencing list loads fine but breaks every later JSON dump of the front matter."""
    crux = crux_base(tmp_path)
    write(crux / "memories/learning/loop.memory.md", "---\ntitle: Loop\nextra: &s [*s]\n---\nbody\n")
    _, plan, _ = plan_bytes(crux)
    assert "memories/learning/loop.memory.md" in parse_errors(plan)


@pytest.mark.parametrize("layout", ["crux", "claude", "zylos"])
def test_symlink_loop_is_a_parse_error(tmp_path, layout):
    """Path.resolve() raises RuntimeError on a loop in Python 3.11; it must not escape the reader."""
    if layout == "crux":
        root, folder, suffix = crux_base(tmp_path), tmp_path / "memories/learning", ".memory.md"
    elif layout == "claude":
        root, folder, suffix = claude_base(tmp_path), tmp_path / ".claude/agent-memory/a", ".md"
    else:
        root, folder, suffix = zylos_base(tmp_path), tmp_path / "sessions", ".md"
    add_symlink_loops(folder, suffix)
    _, plan, _ = plan_bytes(root)
    errors = parse_errors(plan)
    prefix = folder.relative_to(root).as_posix()
    for name in ("self", "ping", "pong"):
        assert errors.get(f"{prefix}/{name}{suffix}") == "symlink loop"


@pytest.mark.parametrize("layout", ["crux", "claude", "zylos", "bank"])
def test_symlinked_folder_leaving_the_store_is_not_read(tmp_path, layout):
    """Only a symlinked *file* was checked; a symlinked folder let the reader (and apply) leave the store."""
    outside = tmp_path / "outside"
    write(outside / "learning/secret.memory.md", "---\ntitle: Secret\n---\nsecret memory\n")
    write(outside / "a/secret.md", "---\nname: Secret\n---\nsecret memory\n")
    write(outside / "decisions.md", "### Secret\n- **Decision:** secret memory\n")
    write(outside / "memories.jsonl", json.dumps({"id": "secret", "text": "secret memory"}) + "\n")
    root = tmp_path / "store"
    if layout == "crux":
        crux_base(root)
        os.symlink(outside, root / "memories/agents")
    elif layout == "claude":
        claude_base(root)
        os.rename(root / ".claude/agent-memory", root / ".claude/agent-memory-real")
        os.symlink(outside, root / ".claude/agent-memory")
    elif layout == "zylos":
        zylos_base(root)
        os.rename(root / "reference", root / "reference-real")
        os.symlink(outside, root / "reference")
    else:
        bank_base(root)
        os.symlink(outside, root / "linked")
    corpus, plan, _ = plan_bytes(root)
    assert not [m.key for m in corpus.memories if "secret" in (m.body + m.key)]
    # a parse_error, or (claude: a symlinked folder is a place a store may be) a symlink_skipped finding
    assert any("outside the store" in f.reason for f in plan.findings if f.kind in ("parse_error", "symlink_skipped"))


NON_UTF8_PLACES = {
    "crux": ("memories/learning", ".memory.md"),
    "claude": (".claude/agent-memory/a", ".md"),
    "zylos": ("reference", ".md"),
}


@pytest.mark.parametrize("layout", sorted(NON_UTF8_PLACES))
def test_file_name_that_is_not_utf8_prints_as_valid_utf8(tmp_path, layout):
    """os.listdir gives lone surrogates for such names; the reader keeps them (apply can act on the file),
    so the plan must reach stdout as valid UTF-8 whatever the machine's locale."""
    root, names = non_utf8_store(tmp_path, layout)
    for encoding in ("utf-8", "utf-8:surrogateescape"):
        env = {**os.environ, "PYTHONIOENCODING": encoding}  # the streams the command starts with
        for args in (("--json",), ()):
            # run_cli decodes stdout strictly as UTF-8, as the original subprocess check did
            res = run_cli("plan", str(root), "--now", NOW, "--model", "none", *args, env=env)
            assert res.returncode == 0, res.stderr
            out = res.stdout
            if args:
                keys = {t.rsplit("/", 1)[-1] for item in json.loads(out)["findings"] + json.loads(out)["actions"] for t in item["targets"]}
                assert names & keys


def non_utf8_store(tmp_path: Path, layout: str) -> tuple[Path, set[str]]:
    root = {"crux": crux_base, "claude": claude_base, "zylos": zylos_base}[layout](tmp_path)
    folder, suffix = NON_UTF8_PLACES[layout]
    text = b"---\ntitle: Odd\ntype: learning\nstrength: 20\n---\n### Odd\n- **Status:** superseded\nA base memory.\n"
    for stem in (b"odd\xff", b"odd\xfe"):
        with open(os.fsencode(root / folder) + b"/" + stem + suffix.encode(), "wb") as fh:
            fh.write(text)
    return root, {os.fsdecode(b"odd\xff" + suffix.encode()), os.fsdecode(b"odd\xfe" + suffix.encode())}


def test_file_name_that_is_not_utf8_prints_as_valid_utf8_from_the_module_in_its_own_process(tmp_path):
    """The same through `python -m pipeline` in a new interpreter with strict UTF-8 streams: the
    bytes it prints are valid UTF-8 and exactly what the in-process run prints."""
    root, _ = non_utf8_store(tmp_path, "crux")
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    args = ("plan", str(root), "--now", NOW, "--model", "none")
    res = run_cli_process(*args, env=env)  # stdout decoded strictly as UTF-8
    assert res.returncode == 0, res.stderr
    assert res.stdout == run_cli(*args, env=env).stdout


def test_bank_record_fields_of_the_wrong_shape_do_not_crash(tmp_path):
    root = bank_base(tmp_path)
    lines = [
        {"id": "t", "text": "tags as a number", "tags": 5},
        {"id": "e", "text": "entities as a float", "entities": 3.5},
        {"id": "d", "text": "tags as an object", "tags": {"a": 1}},
    ]
    write(root / "b/memories.jsonl", "".join(json.dumps(r) + "\n" for r in lines))
    corpus, _, _ = plan_bytes(root)
    by_id = {m.id: m for m in corpus.memories}
    assert set(by_id) == {"t", "e", "d"}
    assert by_id["t"].tags == [] and by_id["e"].extra["entities"] == []


def test_bank_deeply_nested_line_is_a_parse_error(tmp_path):
    root = bank_base(tmp_path)
    with open(root / "b/memories.jsonl", "ab") as fh:
        fh.write(b"[" * 100_000 + b"]" * 100_000 + b"\n")
        fh.write(json.dumps({"id": "after", "text": "still read"}).encode() + b"\n")
    corpus, plan, _ = plan_bytes(root)
    assert {m.id for m in corpus.memories} == {"base", "after"}
    assert "line 2: not valid JSON" in [f.reason for f in plan.findings if f.kind == "parse_error"]


def test_bank_id_that_is_a_lone_surrogate_is_reported(tmp_path):
    """JSON may escape a lone surrogate (\\udcff); as a key it would reach the output and crash it."""
    root = bank_base(tmp_path)
    with open(root / "b/memories.jsonl", "a") as fh:
        fh.write('{"id": "x\\udcff", "text": "same text"}\n{"id": "y\\udcff", "text": "same text"}\n')
    corpus, plan, _ = plan_bytes(root)
    assert {m.id for m in corpus.memories} == {"base"}
    reasons = [f.reason for f in plan.findings if f.kind == "parse_error"]
    assert reasons == ["line 2: id is not valid Unicode", "line 3: id is not valid Unicode"]


@pytest.mark.parametrize("layout", ["crux", "bank"])
def test_deeply_nested_store_config_is_a_config_error(tmp_path, layout):
    """json.loads raises RecursionError, which became `internal error` and exit 1 instead of exit 2."""
    if layout == "crux":
        root = crux_base(tmp_path)
        write(root / ".crux/crux-memories.json", "[" * 100_000 + "]" * 100_000)
    else:
        root = bank_base(tmp_path)
        write(root / "memory-consolidate.json", "[" * 100_000 + "]" * 100_000)
    with pytest.raises(ConfigError):
        plan_bytes(root)
    res = run_cli("plan", str(root), "--now", NOW, "--model", "none")
    assert res.returncode == 2 and "internal error" not in res.stderr, res.stderr


def test_duplicate_survivor_does_not_depend_on_the_machine_time_zone(tmp_path, monkeypatch):
    """Oldest-first compared mtimes as *local* dates: across midnight UTC the survivor changed with TZ."""
    root = claude_base(tmp_path)
    folder = root / ".claude/agent-memory/a"
    write(folder / "a.md", "---\nname: A\n---\nSame text here\n")
    write(folder / "b.md", "---\nname: B\n---\nSame text here\n")
    a_time = dt.datetime(2026, 1, 2, 0, 30, tzinfo=dt.timezone.utc).timestamp()
    b_time = dt.datetime(2026, 1, 1, 23, 30, tzinfo=dt.timezone.utc).timestamp()
    os.utime(folder / "a.md", (a_time, a_time))
    os.utime(folder / "b.md", (b_time, b_time))
    outputs = set()
    try:
        for zone in ("UTC", "America/Adak", "Pacific/Kiritimati"):
            monkeypatch.setenv("TZ", zone)
            time.tzset()
            _, plan, data = plan_bytes(root)
            assert [a.survivor for a in plan.actions if a.kind == "merge_duplicate"] == [".claude/agent-memory/a/b.md"]
            outputs.add(data)
    finally:
        monkeypatch.undo()
        time.tzset()
    assert len(outputs) == 1


WHITESPACE_RUN = 200_000
# Linear work on a 4x larger input costs at most about 4x; the quadratic patterns these tests pin
# cost about 16x (and minutes at WHITESPACE_RUN).
GROWTH_LIMIT = 8


def plans_linearly(make_store, small: int, large: int):
    """Plan the stores `make_store(n)` builds for n = small and large (4x); check the CPU time
    grows linearly, not quadratically, and return the larger store's corpus."""
    roots = {n: make_store(n) for n in (small, large)}
    out = {}

    def plan(n: int) -> None:
        out[n] = plan_bytes(roots[n])[0]

    growth = cpu_growth(plan, small, large)
    assert growth < GROWTH_LIMIT, f"planning {large} instead of {small} took {growth:.1f}x the CPU time"
    return out[large]


def test_long_whitespace_in_a_memory_index_line_does_not_hang(tmp_path):
    def store(n: int) -> Path:
        root = claude_base(tmp_path / str(n))
        write(root / ".claude/agent-memory/a/MEMORY.md", "- [Base](base.md) — hook" + " " * n + "end  \n")
        return root

    corpus = plans_linearly(store, WHITESPACE_RUN // 4, WHITESPACE_RUN)
    assert [(e.target, e.hook) for e in corpus.index_entries] == [
        (".claude/agent-memory/a/base.md", "hook" + " " * WHITESPACE_RUN + "end")
    ]


def test_long_whitespace_in_a_zylos_heading_does_not_hang(tmp_path):
    def store(n: int) -> Path:
        root = zylos_base(tmp_path / str(n))
        write(root / "reference/decisions.md", "### Use C#" + " " * n + "now ##  \n- **Decision:** x\n")
        return root

    corpus = plans_linearly(store, WHITESPACE_RUN // 4, WHITESPACE_RUN)
    entry = next(m for m in corpus.memories if m.key.startswith("reference/decisions.md#"))
    assert entry.title == "Use C#" + " " * WHITESPACE_RUN + "now"


def test_long_whitespace_in_a_memory_index_heading_does_not_hang(tmp_path):
    """MEMORY.md's heading pattern backtracked cubically on a run of blanks before a last character:
    2,000 spaces took 20 s (found by test_fuzz_claude_store, whose example ran for two minutes)."""
    def store(n: int) -> Path:
        root = claude_base(tmp_path / str(n))
        write(root / ".claude/agent-memory/a/MEMORY.md", "### Index" + " " * n + "#x\n- [Base](base.md) — a base memory\n")
        return root

    corpus = plans_linearly(store, 400, 1_600)
    assert [e.target for e in corpus.index_entries] == [".claude/agent-memory/a/base.md"]


def test_long_whitespace_after_a_numeric_crux_id_does_not_hang(tmp_path):
    def store(n: int) -> Path:
        root = crux_base(tmp_path / str(n))
        write(root / "memories/learning/n.memory.md", "---\nid: 0123" + " " * n + "# c\n---\nbody\n")
        return root

    corpus = plans_linearly(store, WHITESPACE_RUN // 4, WHITESPACE_RUN)
    assert next(m for m in corpus.memories if m.key.endswith("n.memory.md")).id == "0123"


# MEMORY.md's heading pattern as it was (pipeline/layouts/claude/memory_md.py).
OLD_INDEX_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("# \t\u00a0\x1cab\r")), max_size=14))
def test_memory_index_heading_reads_as_before(line):
    """The linear heading reader gives every line the level and text the old pattern gave it."""
    from pipeline.layouts.claude.memory_md import heading

    old = OLD_INDEX_HEADING.match(line)
    assert heading(line) == ((len(old.group(1)), old.group(2)) if old else None)


# The heading pattern as it was: lazy title, then optional closing run, then trailing blanks.
OLD_HEADING = re.compile(r"^(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("# \tab\r\n")), max_size=14))
def test_zylos_heading_pattern_matches_as_before(line):
    """zylos_write shares HEADING: the linear pattern must split every line exactly as the old one did."""
    old, new = OLD_HEADING.match(line), HEADING.match(line)
    assert (old is None) == (new is None)
    if old and new:
        assert old.groups() == new.groups()


def test_many_entries_with_one_title_do_not_take_quadratic_time(tmp_path):
    """Each repeated title re-walked -2, -3, ... from the start: 30,000 repeats took minutes."""
    def store(n: int) -> Path:
        root = zylos_base(tmp_path / str(n))
        write(root / "reference/decisions.md", "### Same-3\n" + "### Same\n" * n)
        return root

    corpus = plans_linearly(store, 1_000, 4_000)
    keys = [m.key for m in corpus.memories if m.key.startswith("reference/decisions.md#")]
    assert len(keys) == len(set(keys)) == 4_001
    assert {"reference/decisions.md#same-3", "reference/decisions.md#same", "reference/decisions.md#same-2",
            "reference/decisions.md#same-4", "reference/decisions.md#same-4001"} <= set(keys)
    assert "reference/decisions.md#same-4002" not in keys


def test_a_field_with_many_continuation_lines_does_not_take_quadratic_time(tmp_path):
    """Each continuation line rebuilt the whole value string."""
    word = "x" * 40  # long lines: a copy per line shows (grows 16x) long before the per-line work does

    def store(n: int) -> Path:
        root = zylos_base(tmp_path / str(n))
        write(root / "reference/decisions.md", "### T\n- **Decision:** first\n" + f"  {word}\n" * n + "- **Decision:** last\n")
        return root

    corpus = plans_linearly(store, 10_000, 40_000)
    entry = next(m for m in corpus.memories if m.key == "reference/decisions.md#t")
    assert entry.body == "first " + f"{word} " * 40_000 + "last"


@pytest.mark.parametrize("layout", ["crux", "claude", "zylos"])
def test_a_named_pipe_in_the_store_is_a_parse_error_not_a_hang(tmp_path, layout):
    """st_size of a FIFO is 0, so the size cap let read_bytes() block forever on it."""
    if layout == "crux":
        root, fifo = crux_base(tmp_path), tmp_path / "memories/learning/pipe.memory.md"
    elif layout == "claude":
        root, fifo = claude_base(tmp_path), tmp_path / ".claude/agent-memory/a/pipe.md"
        os.mkfifo(tmp_path / "pipe-target")
        os.symlink(tmp_path / "pipe-target", fifo)  # a plain FIFO is not listed; a symlink to one is
        fifo = None
    else:
        root, fifo = zylos_base(tmp_path), tmp_path / "references.md"
        fifo.unlink()
    if fifo is not None:
        os.mkfifo(fifo)
    with fifo_watch(fifo or tmp_path / "pipe-target") as opened:
        _, plan, _ = plan_bytes(root)
    assert opened == []  # never opened, so never waited on
    assert "not a regular file" in str(sorted(parse_errors(plan).items()))


def test_consult_log_timestamps_at_the_end_of_the_calendar_are_skipped(tmp_path):
    """Converting 9999-12-31T23:59-01:00 to UTC overflows the date range (OverflowError, not ValueError)."""
    root = claude_base(tmp_path)
    write(root / "src/main.py", "")  # a project with code
    write(root / ".claude/agent-memory/a/old.md", "---\nname: old\ntype: project\nmodified: 2020-01-01\n---\nSee src/gone.py\n")
    write(root / ".claude/logs/memory-consult.jsonl", "".join(json.dumps({"ts": ts, "names": ["old"]}) + "\n" for ts in (
        "9999-12-31T23:59:59-01:00", "0001-01-01T00:00:00+01:00")))
    _, plan, _ = plan_bytes(root)
    assert [a.targets for a in plan.actions if a.kind == "prune_stale"] == [[".claude/agent-memory/a/old.md"]]


def test_bank_config_that_is_a_named_pipe_is_a_config_error_not_a_hang(tmp_path):
    """The bank config was read with Path.read_text, outside the size cap, symlink and file-type checks."""
    root = bank_base(tmp_path)
    os.mkfifo(root / "memory-consolidate.json")
    with fifo_watch(root / "memory-consolidate.json") as opened:
        res = run_cli("plan", str(root), "--now", NOW, "--model", "none")
    assert opened == []  # never opened, so never waited on
    assert res.returncode == 2 and "not a regular file" in res.stderr, res.stderr
