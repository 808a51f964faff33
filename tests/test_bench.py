"""The bulk path of a big store (issue 14, item 1): what it changed must not change a plan.

The bank reader builds memories unvalidated (copies of one `Memory.template`) as it reads the lines, the rules
carry each body's normal form on its memory (`normalized_body`) instead of a shared cache, the
reorder rule keys on a word-set string instead of a frozenset, and the collector is paused while the
store is read and the deterministic pass runs. Each is checked against the plain way here; the
benchmark itself is run once, small, for its output's shape (no time is asserted anywhere).
"""

from __future__ import annotations

import copy
import datetime as dt
import gc
import io
import math
import json
import pickle
from pathlib import Path

import pytest

from pipeline import bench
from pipeline.config import Settings
from pipeline.layouts.bank import reader
from pipeline.layouts.registry import open_store
from pipeline.errors import RunFailed
from pipeline.storage.files import as_date
from pipeline.model import Corpus, Memory, settle_read_shas
from pipeline.plan import build_plan, run_rules
from pipeline.rules import absolutize_dates, duplicates
from pipeline.rules.relative_dates import prefilter
from pipeline.rules.text import normalize, normalized_body, normalized_text
from pipeline.storage.gc_pause import gc_paused, reading_for_a_plan

NOW = dt.date(2026, 11, 29)

BODIES = [
    "Deploy runs nightly",
    "deploy   RUNS, nightly!!",
    "already normalized text",
    "",
    "   ",
    "Ünïcödé ＦＵＬＬＷＩＤＴＨ ﬁ ligature straße",
    "snake_case and-dashes / slashes\tand\nnewlines",
    "\ud800 lone surrogate",
    "数字 123 and ½",
]


@pytest.mark.parametrize("body", BODIES)
def test_the_carried_normal_form_is_normalize_of_the_body(body):
    m = Memory(key="b/1", layout="bank", body=body)
    assert normalized_body(m) == normalize(body) == normalized_text(body)
    assert normalized_body(m) == normalize(body)  # the second answer comes from the memo


def test_the_memo_never_answers_for_another_body_and_is_invisible_to_pydantic():
    m = Memory(key="b/1", layout="bank", body="Alpha, Beta")
    plain = m.model_copy()
    assert normalized_body(m) == "alpha beta"
    # a copy with a new body, and an assignment, carry the old memo along: it must not be used
    other = m.model_copy(update={"body": "Gamma-Delta"})
    assert normalized_body(other) == "gamma delta"
    m.body = "Epsilon"
    assert normalized_body(m) == "epsilon"
    # dumps, equality and repr read the declared fields only
    assert m.model_copy(update={"body": plain.body}) == plain
    assert m.model_dump() == Memory(key="b/1", layout="bank", body="Epsilon").model_dump()
    assert "_normalized" not in repr(m) and "_normalized" not in m.model_dump_json()


RECORDS = [
    {"id": "odd", "text": "x", "tags": [True, 1.5, "a", 2, ["n"]], "entities": "no", "corroboration": -3, "pinned": 1,
     "source": None, "created_at": 20260101, "updated_at": "2026-13-40", "revision": -2, "confidence": None},
    {"id": "a", "text": "Deploy runs nightly", "tags": ["ops", 3, None, {"x": 1}], "entities": ["svc"],
     "corroboration": 4, "pinned": True, "source": "chat", "created_at": "2026-03-04T10:00:00Z",
     "updated_at": "2026-03-05", "revision": 2, "confidence": 0.7},
    {"id": 17, "text": None, "tags": "not-a-list", "corroboration": True, "pinned": "yes",
     "created_at": "not a date", "updated_at": 12, "revision": True},
    {"id": "c", "text": "x", "corroboration": 2**70, "source": 5, "created_at": None, "confidence": {"odd": []}},
    {"id": "d"},
]


@pytest.mark.parametrize("rec", RECORDS + [
    {"z": [1, 2.5, -0.0, 1e300, float("nan"), float("inf")], "a": {"é": "ü\u2028\ud800", "b": None}, "m": 10**40},
    {"nested": [[{"k": [True, False]}]], "": ""},
], ids=lambda r: str(r.get("id", sorted(r)[0])))
def test_the_canonical_json_is_json_dumps_sorted_and_ascii(rec):
    assert reader.canonical_json(rec) == json.dumps(rec, sort_keys=True, ensure_ascii=True)


def _validated(bank: str, rec: dict) -> Memory:
    """What the reader built before the bulk path, written out on its own (not through the reader's
    template), through pydantic's validation: each record field to its memory field."""
    def scalars(value):
        return [str(v) for v in value if isinstance(v, (str, int))] if isinstance(value, list) else []

    text, corroboration, source, revision = rec.get("text"), rec.get("corroboration"), rec.get("source"), rec.get("revision")
    key = f"{bank}/{rec['id']}"
    return Memory(
        key=key, layout="bank", id=str(rec["id"]), title="", body=text if isinstance(text, str) else "",
        tags=scalars(rec.get("tags")),
        corroboration=corroboration if isinstance(corroboration, int) and not isinstance(corroboration, bool) else 0,
        pinned=rec.get("pinned") is True, created=as_date(rec.get("created_at")), modified=as_date(rec.get("updated_at")),
        source=source if isinstance(source, str) else None, group=bank, meta={},
        extra={"entities": scalars(rec.get("entities")), "revision": revision if isinstance(revision, int) else 0,
               "confidence": rec.get("confidence")},
        read_shas={key: reader.record_sha(rec)},
    )


@pytest.mark.parametrize("rec", RECORDS, ids=lambda r: str(r["id"]))
def test_a_trusted_memory_equals_the_validated_one(rec):
    trusted = _memory_of("blog", json.loads(json.dumps(rec)))
    validated = _validated("blog", json.loads(json.dumps(rec)))
    assert trusted == validated
    assert trusted.model_dump(mode="json") == validated.model_dump(mode="json")
    assert repr(trusted) == repr(validated)
    assert list(trusted.__dict__) == [*Memory.model_fields, "_deferred_read_shas"]


def test_trusted_memories_share_a_fields_set_no_assignment_changes():
    a = _memory_of("blog", {"id": "a", "text": "x"})
    b = _memory_of("blog", {"id": "b", "text": "y"})
    before = set(a.model_fields_set)
    a.type = "fact"
    a.meta = {"k": 1}  # a field is replaced, never its shared container changed
    assert a.model_fields_set == before == set(Memory.model_fields)
    assert b.type is None and b.meta == {}


def _memory_of(bank: str, rec: dict) -> Memory:
    """The reader's memory of one live record, its read hash taken when made."""
    return reader._Pool(bank).memory(rec, str(rec["id"]))


def _deferring_pool() -> reader._Pool:
    """A pool whose memories defer their read hashes (as a bank read from its file does)."""
    return reader._Pool("blog", reader._ReadHashes(Path("/nonexistent"), Path("/nonexistent/blog/memories.jsonl"), 1))


def test_a_bank_memorys_shared_containers_refuse_every_change():
    pool = _deferring_pool()
    a = pool.memory({"id": "a", "text": "x", "revision": 1, "confidence": 0.8}, "a")
    b = pool.memory({"id": "b", "text": "y", "revision": 1, "confidence": 0.8}, "b")
    assert a.meta is b.meta and a.extra is b.extra and a.read_shas is b.read_shas  # what makes them cheap
    changes = [
        lambda: a.meta.__setitem__("k", 1), lambda: a.meta.update(k=1), lambda: a.meta.setdefault("k", 1),
        lambda: a.extra.pop("revision"), lambda: a.extra.clear(), lambda: a.extra.__delitem__("confidence"),
        lambda: a.extra["entities"].append("svc"), lambda: a.extra["entities"].extend(["svc"]),
        lambda: a.read_shas.__setitem__("blog/a", "0" * 64), lambda: a.read_shas.popitem(),
    ]
    for change in changes:
        with pytest.raises(TypeError):
            change()
    assert b.meta == {} and b.read_shas == {} and b.extra == {"entities": [], "revision": 1, "confidence": 0.8}
    assert copy.deepcopy(b.extra) == b.extra and pickle.loads(pickle.dumps(b.extra)) == b.extra


@pytest.mark.parametrize("first, second", [
    (1, 1.0), (1, True), (0.0, -0.0), (float("nan"), float("nan")), (0, 0.0), (None, 0),
])
def test_extras_are_shared_only_between_the_same_json(first, second):
    pool = _deferring_pool()
    a = pool.memory({"id": "a", "revision": 2, "confidence": first}, "a")
    b = pool.memory({"id": "b", "revision": 2, "confidence": second}, "b")
    assert a.extra is not b.extra
    assert json.dumps(a.extra["confidence"]) == json.dumps(first) and json.dumps(b.extra["confidence"]) == json.dumps(second)
    revised = pool.memory({"id": "c", "revision": True, "confidence": 0.5}, "c")
    assert pool.memory({"id": "d", "revision": 1, "confidence": 0.5}, "d").extra is not revised.extra
    with pytest.raises(KeyError):
        Memory.trusted(layout="bank")  # a required field is still required


def _write_bank(tmp_path: Path, lines: list[bytes]) -> Path:
    bank = tmp_path / "store" / "blog"
    bank.mkdir(parents=True)
    (bank / "memories.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    return tmp_path / "store"


def test_reading_as_the_lines_come_gives_what_parse_records_gives(tmp_path):
    lines = [
        "\ufeff".encode() + json.dumps({"id": "a", "text": "first", "revision": 1}).encode(),
        json.dumps({"id": "b", "text": "kept", "revision": 3}).encode(),
        b"\xff\xfe not utf-8",
        b"{not json",
        json.dumps({"id": "b", "text": "older revision, later line", "revision": 2}).encode(),
        json.dumps({"id": "a", "text": "same revision, later line wins", "revision": 1}).encode(),
        json.dumps({"text": "no id"}).encode(),
        json.dumps({"id": "c", "text": "retired", "superseded_by": "a"}).encode(),
        json.dumps({"id": "d", "text": "invalid", "invalid_at": "2026-01-01"}).encode(),
        json.dumps({"id": "e", "text": "bool revision", "revision": True}).encode(),
        json.dumps({"id": "e", "text": "no revision wins over a bool one (both -1), later line"}).encode(),
        b"\xc3\x28",
        json.dumps({"id": 7, "text": "int id"}).encode(),
        json.dumps({"id": "\ud800"}).encode(),
        b"   ",
    ]
    root = _write_bank(tmp_path, lines)
    data = (root / "blog" / "memories.jsonl").read_bytes()
    old, new = Corpus(layout="bank", root=str(root)), Corpus(layout="bank", root=str(root))
    records = reader.parse_records("blog/memories.jsonl", data, old)
    live = [_memory_of("blog", r) for r in records.values() if not r.get("superseded_by") and not r.get("invalid_at")]
    count, memories = reader.current_memories("blog", "blog/memories.jsonl", data.split(b"\n"), new)
    assert count == len(records) == 6
    assert memories == live and [m.body for m in memories] == [m.body for m in live]
    assert [m.body for m in memories if m.id in ("a", "e")] == [
        "same revision, later line wins", "no revision wins over a bool one (both -1), later line"]
    assert new.findings == old.findings
    assert [f.reason for f in new.findings] == [
        "line 3: not UTF-8", "line 12: not UTF-8", "line 4: not valid JSON", "line 7: record without an id",
        "line 14: id is not valid Unicode"]


def test_the_reorder_key_groups_exactly_as_frozensets_do(tmp_path):
    root = bench.synthetic_bank(tmp_path, 2000)
    corpus, _ = open_store(root, Settings(now=NOW))
    reps = [g[0] for g in duplicates.text_groups(corpus.memories).duplicates] + corpus.memories
    by_string = duplicates._groups(reps, duplicates._word_set)
    by_frozenset = duplicates._groups(reps, lambda m: frozenset(normalize(m.body).split()))
    assert by_string == by_frozenset and by_string


def _eager(root: Path) -> Corpus:
    """The bank as the reader read it before the bulk path: every memory validated, its read hash taken."""
    corpus, _ = open_store(root, Settings(now=NOW))
    settle_read_shas(corpus.memories)
    return corpus.model_copy(update={"memories": [Memory(**m.model_dump()) for m in corpus.memories]})


def test_the_plan_of_a_synthetic_bank_is_the_plan_of_validated_memories(tmp_path):
    root = bench.synthetic_bank(tmp_path, 2000)
    corpus, settings = open_store(root, Settings(now=NOW))
    assert all(m.read_shas == {} for m in corpus.memories)  # deferred
    fast = build_plan(corpus, settings).to_json_dict()
    slow = build_plan(_eager(root), settings).to_json_dict()
    assert fast == slow
    assert fast["actions"] and all(a["target_hashes"] for a in fast["actions"] if a["kind"] == "merge_duplicate")
    # only the targets of actions judged on content were hashed
    targets = {t for a in fast["actions"] for t in a["targets"]}
    assert {m.key for m in corpus.memories if m.read_shas} <= targets < {m.key for m in corpus.memories}
    assert {a["kind"] for a in fast["actions"]} >= {"merge_duplicate"}
    assert any(f["kind"] == "reorder_candidate" for f in fast["findings"])


@pytest.mark.parametrize("enabled", [True, False])
def test_the_collector_comes_back_as_it_was(tmp_path, enabled):
    root = bench.synthetic_bank(tmp_path, 50)
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        corpus, settings = open_store(root, Settings(now=NOW))
        assert gc.isenabled() is enabled
        run_rules(corpus, settings)
        assert gc.isenabled() is enabled
        with pytest.raises(RuntimeError), gc_paused():
            assert not gc.isenabled()
            raise RuntimeError("the window closes on an error too")
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


def test_the_benchmark_prints_both_cpu_figures_their_ratio_and_bytes_per_memory(capsys):
    bench.main(["200"])
    header, line = capsys.readouterr().out.splitlines()
    assert header == bench.HEADER
    n, plan_cpu, base_cpu, ratio, peak_mib, per_memory, actions, _wall = line.split()
    assert int(n) == 200 and float(plan_cpu) > 0 and float(base_cpu) > 0
    plan_s, base_s = float(plan_cpu), float(base_cpu)  # printed to 0.01 s: the ratio within that rounding
    assert (plan_s - 0.005) / (base_s + 0.005) <= float(ratio) <= (plan_s + 0.005) / (base_s - 0.005)
    assert int(per_memory) == pytest.approx(float(peak_mib) * 2**20 / 200, rel=0.01)
    assert int(actions) >= 0


def test_the_benchmark_repeated_prints_a_row_a_round_and_their_median(capsys):
    bench.main(["100", "--repeat", "3"])
    header, *rounds, summary = capsys.readouterr().out.splitlines()
    assert header == bench.HEADER and len(rounds) == 3
    ratios = sorted(float(line.split()[3]) for line in rounds)
    words = summary.split()
    assert words[:3] == ["100", "median", "ratio"] and words[4:7] == ["of", "3", "rounds"]
    assert abs(float(words[3]) - ratios[1]) <= 0.011  # each printed ratio is rounded to 0.01


STREAMED_LINES = [
    "\ufeff".encode() + json.dumps({"id": "a", "text": "BOM on the first line", "revision": 1}).encode() + b"\r",
    json.dumps({"id": "b", "text": "CRLF line"}).encode() + b"\r",
    b"\xff not utf-8",
    b"{torn",
    b"",
    json.dumps({"id": "c", "text": "line 6"}).encode(),
    b"[1, 2]",
    "\ufeff".encode() + json.dumps({"id": "d", "text": "a BOM past line 1 is not dropped"}).encode(),
    json.dumps({"id": "e", "text": "no final newline"}).encode(),
]


def _bank_file(tmp_path: Path, data: bytes) -> Path:
    bank = tmp_path / "store" / "blog"
    bank.mkdir(parents=True)
    (bank / "memories.jsonl").write_bytes(data)
    return tmp_path / "store"


@pytest.mark.parametrize("tail", [b"", b"\n", b"\r\n"])
def test_a_bank_read_as_it_streams_gives_what_its_bytes_gave(tmp_path, tail):
    data = b"\n".join(STREAMED_LINES) + tail
    root = _bank_file(tmp_path, data)
    streamed, _ = open_store(root, Settings(now=NOW))
    settle_read_shas(streamed.memories)
    whole = Corpus(layout="bank", root=str(root))
    count, memories = reader.current_memories("blog", "blog/memories.jsonl", data.split(b"\n"), whole)
    assert streamed.memories == sorted(memories, key=lambda m: m.key)
    assert [m.body for m in streamed.memories] == ["BOM on the first line", "CRLF line", "line 6", "no final newline"]
    assert streamed.findings == whole.findings
    assert [f.reason for f in streamed.findings] == [
        "line 3: not UTF-8", "line 4: not valid JSON", "line 7: record without an id", "line 8: not valid JSON"]
    assert streamed.extra["banks"]["blog"]["records"] == count == 4


def test_lines_are_bounded_by_the_cap_as_the_whole_read_was():
    assert list(reader._file_lines(io.BytesIO(b"ab\ncd\n"), 6)) == [b"ab", b"cd", b""]
    with pytest.raises(reader.Unreadable, match=r"^file too large \(over 5 bytes\)$"):
        list(reader._file_lines(io.BytesIO(b"ab\ncd\n"), 5))

    class Endless(io.RawIOBase):  # one line that never ends: never read whole
        def readable(self):
            return True

        def readinto(self, b):
            b[:] = b"x" * len(b)
            return len(b)

    with pytest.raises(reader.Unreadable, match="over 1000 bytes"):
        next(reader._file_lines(io.BufferedReader(Endless()), 1000))


def test_a_line_longer_than_many_chunks_is_read_in_linear_time(monkeypatch):
    """Its pieces are joined once, at its end (joining at every chunk copied the line so far again:
    a 255 MiB line took 28 s). Counted, not timed: bytes handed to b"".join."""
    monkeypatch.setattr(reader, "_CHUNK", 16)
    joined: list[int] = []

    def counted(parts: list[bytes]) -> bytes:
        joined.append(sum(map(len, parts)))
        return b"".join(parts)

    monkeypatch.setattr(reader, "_join", counted)
    data = b"x" * 16_000 + b"\nshort\n" + b"y" * 800
    assert list(reader._file_lines(io.BytesIO(data), len(data))) == data.split(b"\n")
    assert sum(joined) <= 2 * len(data)


def test_lines_read_a_chunk_at_a_time_are_the_split_bytes(monkeypatch):
    """Lines that go on across chunks (and chunks of one line's middle) are put together whole, and
    the digest taken while reading is of exactly the bytes read."""
    import hashlib
    import random

    rng = random.Random(17)
    for chunk in (1, 2, 3, 7):
        monkeypatch.setattr(reader, "_CHUNK", chunk)
        for _ in range(200):
            data = bytes(rng.choice(b"ab\n\r") for _ in range(rng.randint(0, 30)))
            shas = reader._ReadHashes(Path("/nonexistent"), Path("/nonexistent/x"), len(data))
            assert list(reader._file_lines(io.BytesIO(data), len(data), shas)) == data.split(b"\n"), (chunk, data)
            assert (shas.size, shas.digest.digest()) == (len(data), hashlib.sha256(data).digest())


def test_a_bank_passing_the_cap_while_read_is_one_error_and_no_memory(tmp_path, monkeypatch):
    """The file grew past the cap after its size was checked: what its early lines said is taken back."""
    root = _bank_file(tmp_path, b"\n".join(STREAMED_LINES) + b"\n")
    grown = b"\n".join(STREAMED_LINES) + b"\n" + b"x" * 64
    settings = Settings(now=NOW)
    monkeypatch.setattr(settings, "max_file_bytes", (len(grown) - 10) // 64)
    cap = settings.max_file_bytes * 64
    assert len(grown) > cap >= len(b"\n".join(STREAMED_LINES) + b"\n")
    monkeypatch.setattr(reader, "open_checked", lambda root, path, max_bytes: io.BytesIO(grown))
    corpus = reader.load(root, settings)
    assert corpus.memories == []
    assert [(f.kind, f.targets, f.reason) for f in corpus.findings] == [
        ("parse_error", ["blog/memories.jsonl"], f"file too large (over {cap} bytes)")]
    assert corpus.extra["banks"]["blog"]["records"] == 0


def test_deferred_read_hashes_are_the_hashes_of_the_records_read(tmp_path):
    lines = [
        "\ufeff".encode() + json.dumps({"id": "a", "text": "BOM", "z": 1, "b": [1.5, "é"]}).encode() + b"\r",
        json.dumps({"id": "b", "text": "old", "revision": 1}).encode(),
        b"{torn",
        json.dumps({"id": "b", "text": "new", "revision": 2}, ensure_ascii=False).encode(),
        json.dumps({"id": "c", "text": "retired", "superseded_by": "a"}).encode(),
        json.dumps({"id": 7, "text": "unsorted keys, odd spacing"}, separators=(",", ":")).encode() + b"\r",
    ]
    root = _bank_file(tmp_path, b"\n".join(lines) + b"\n")
    corpus, _ = open_store(root, Settings(now=NOW))
    records = reader.parse_records("blog/memories.jsonl", (root / "blog" / "memories.jsonl").read_bytes(), Corpus(layout="bank", root=str(root)))
    settle_read_shas(corpus.memories)
    assert {m.key: m.read_shas for m in corpus.memories} == {
        f"blog/{rid}": {f"blog/{rid}": reader.record_sha(rec)} for rid, rec in records.items() if rid != "c"}


def test_a_bank_rewritten_while_planned_fails_the_plan_appended_to_does_not(tmp_path):
    root = bench.synthetic_bank(tmp_path, 300)
    path = root / "bench" / "memories.jsonl"
    corpus, settings = open_store(root, Settings(now=NOW))
    expected = build_plan(_eager(root), settings).to_json_dict()
    with path.open("ab") as fh:  # iii appends: the lines read are where they were
        fh.write(json.dumps({"id": "late", "text": "written after the read"}).encode() + b"\n")
    assert build_plan(corpus, settings).to_json_dict() == expected

    corpus, settings = open_store(root, Settings(now=NOW))
    path.write_bytes(path.read_bytes().replace(b'"confidence": 0.8', b'"confidence": 0.9'))  # same lengths
    with pytest.raises(RunFailed, match=r"^bench/memories.jsonl: changed since it was read while the plan was made; plan again$"):
        build_plan(corpus, settings)
    corpus, settings = open_store(root, Settings(now=NOW))
    lines = path.read_bytes().split(b"\n")
    lines[-3] = lines[-3].replace(b'"bench"', b'"bank!"')  # one line no action targets, same length
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(RunFailed, match=r"changed since it was read while the plan was made; plan again$"):
        build_plan(corpus, settings)  # the bytes the plan was made of are no longer there
    corpus, settings = open_store(root, Settings(now=NOW))
    path.unlink()
    with pytest.raises(RunFailed, match=r"^bench/memories.jsonl: cannot stat"):
        build_plan(corpus, settings)


def test_a_last_line_given_its_newline_after_the_read_does_not_fail_the_plan(tmp_path):
    """The bank's last line read before its writer wrote the newline (a record, then b"\n", or the
    next record's leading one): the record is the same bytes, only the line's end came later."""
    line = lambda i: json.dumps({"id": f"m{i}", "text": "Staging runs Node 20 and Postgres 15", "created_at": f"2026-01-0{i}"})  # noqa: E731
    root = _bank_file(tmp_path, f"{line(1)}\n{line(2)}".encode())
    corpus, settings = open_store(root, Settings(now=NOW))
    expected = build_plan(_eager(root), settings).to_json_dict()
    assert [a["targets"] for a in expected["actions"] if a["kind"] == "merge_duplicate"] == [["blog/m1", "blog/m2"]]
    with (root / "blog" / "memories.jsonl").open("ab") as fh:
        fh.write(b"\n" + json.dumps({"id": "late", "text": "written after the read"}).encode() + b"\n")
    assert build_plan(corpus, settings).to_json_dict() == expected


def test_bytes_written_after_the_read_on_its_last_line_do_not_change_what_was_judged(tmp_path):
    """The last line read had no end yet, and a writer put more on it (not a well-formed append): the
    bytes the plan judged are still there, so the plan stands on them; apply checks the record again."""
    line = lambda i: json.dumps({"id": f"m{i}", "text": "Staging runs Node 20 and Postgres 15"})  # noqa: E731
    root = _bank_file(tmp_path, f"{line(1)}\n{line(2)}".encode())
    corpus, settings = open_store(root, Settings(now=NOW))
    expected = build_plan(_eager(root), settings).to_json_dict()
    with (root / "blog" / "memories.jsonl").open("ab") as fh:
        fh.write(b' garbage, "on": the same line}\n')
    assert build_plan(corpus, settings).to_json_dict() == expected


def _tuple_keyed_groups(memories, key_fn):
    """The grouping as it was before the per-group dicts: one (group, key) tuple per memory."""
    first, more = {}, {}
    for m in memories:
        key = (m.group, key_fn(m))
        if key not in first:
            first[key] = m
        elif key in more:
            more[key].append(m)
        else:
            more[key] = [first[key], m]
    return [sorted(more[key], key=duplicates.survivor_key) for key in first if key in more]


def _tuple_keyed_reorders(memories):
    representatives = {}
    for m in memories:
        if duplicates.comparable(m):
            key = (m.group, normalized_body(m))
            held = representatives.get(key)
            if held is None or duplicates.survivor_key(m) < duplicates.survivor_key(held):
                representatives[key] = m
    return _tuple_keyed_groups(representatives.values(), duplicates._word_set)


def _interleaved_groups(tmp_path: Path) -> list[Memory]:
    """A synthetic bank's memories spread over three groups, interleaved, so order across groups counts."""
    corpus, _ = open_store(bench.synthetic_bank(tmp_path, 3000), Settings(now=NOW))
    return [m.model_copy(update={"group": f"g{i % 3}", "key": f"g{i % 3}/{m.id}"}) for i, m in enumerate(corpus.memories)]


def test_grouping_by_group_dicts_gives_the_groups_and_order_of_tuple_keys(tmp_path):
    memories = _interleaved_groups(tmp_path)
    keys = lambda groups: [[m.key for m in g] for g in groups]  # noqa: E731
    dups = duplicates.text_groups(memories).duplicates
    assert keys(dups) == keys(_tuple_keyed_groups([m for m in memories if duplicates.comparable(m)], normalized_body))
    reorders = duplicates.reorder_groups(memories)
    assert keys(reorders) == keys(_tuple_keyed_reorders(memories))
    assert len(dups) > 20 and len(reorders) > 20 and len({g[0].group for g in reorders}) == 3


def test_a_word_set_hash_shared_by_different_sets_still_groups_exactly(tmp_path, monkeypatch):
    memories = _interleaved_groups(tmp_path)
    expected = [[m.key for m in g] for g in _tuple_keyed_reorders(memories)]
    # The prefilter's hash of (group, word set) colliding everywhere: every representative is let
    # through, and the exact grouping alone decides.
    monkeypatch.setattr(duplicates, "hash", lambda key: 0, raising=False)
    assert [[m.key for m in g] for g in duplicates.reorder_groups(memories)] == expected


def test_the_pool_shares_equal_floats_but_keeps_what_is_not_the_same_json():
    pool = reader._Pool("blog")
    a, b = pool.number(float("0.8")), pool.number(float("0.8"))
    assert a is b and a == 0.8
    neg = pool.number(-0.0)
    assert math.copysign(1, neg) == -1 and math.copysign(1, pool.number(0.0)) == 1
    assert math.isnan(pool.number(float("nan")))
    assert pool.number(1) == 1 and type(pool.number(1)) is int and pool.number(True) is True
    assert pool.number(None) is None and pool.number("0.8") == "0.8"


def test_a_bank_memory_keeps_a_shared_key_dict_through_the_plan(tmp_path):
    """The reader's memories keep CPython's compact shared-key `__dict__` through a whole plan (a key
    added in another order would give each a full dict of its own, several times the size). In a
    fresh process, as a plan runs: which instances came before decides what CPython shares."""
    import subprocess
    import sys

    root = bench.synthetic_bank(tmp_path, 200)
    script = (
        "import sys, datetime; from pathlib import Path; from pipeline.config import Settings; "
        "from pipeline.layouts.registry import open_store; from pipeline.plan import build_plan; "
        "corpus, settings = open_store(Path(sys.argv[1]), Settings(now=datetime.date(2026, 11, 29))); "
        "build_plan(corpus, settings); m = corpus.memories[0]; "
        "print(sys.getsizeof(m.__dict__), sys.getsizeof(dict(m.__dict__)), '_normalized_body' in m.__dict__)"
    )
    out = subprocess.run([sys.executable, "-c", script, str(root)], capture_output=True, text=True, check=True).stdout
    shared, full, memo = out.split()
    assert memo == "True" and int(shared) < int(full) / 2


def test_a_big_store_read_is_frozen_for_the_collector_until_the_rules_are_done(tmp_path):
    root = bench.synthetic_bank(tmp_path, 50)
    gc.unfreeze()
    with reading_for_a_plan():  # as every command reads a store for its plan
        corpus, settings = open_store(root, Settings(now=NOW))
        assert gc.get_freeze_count() > len(corpus.memories)  # the memories and what they hold: not walked
        run_rules(corpus, settings)
        assert gc.get_freeze_count() == 0  # the collector's again: cyclic garbage frozen with them is still found


def _substituted(text: str) -> str:
    """The normal form as it was computed before: every run between words replaced, then trimmed."""
    import re
    import unicodedata

    return re.sub(r"[\W_]+", " ", unicodedata.normalize("NFKC", text).casefold()).strip()


_ODD = "aZ09_ -\t\n\r\x00\x7f.,;!?ÄßİıΣσς\u0301\u00a0\u2028\u3000ＦＵ１２ﬁ½²٣\U0001d400\ud800\u200b"


@pytest.mark.parametrize("text", BODIES + ["_", "__a__b__", " a ", "ǅ", "ﬀ_x", "\u0130\u0307", "a\u00a0b", ""])
def test_the_normal_form_found_word_by_word_is_the_substituted_one(text):
    assert normalized_text(text) == _substituted(text)


def test_the_normal_form_matches_on_random_text():
    import random

    rng = random.Random(14)
    for _ in range(3000):
        text = "".join(rng.choice(_ODD) for _ in range(rng.randint(0, 12)))
        assert normalized_text(text) == _substituted(text), repr(text)


def test_the_ascii_normal_form_matches_on_every_ascii_character():
    # the ASCII path translates bytes: each of the 128 characters alone, between words, and at random
    import random

    for c in map(chr, range(128)):
        for text in (c, f"Ab{c}Cd", f"{c}x{c}{c}Y9{c}"):
            assert normalized_text(text) == _substituted(text), repr(text)
    rng = random.Random(15)
    for _ in range(3000):
        text = "".join(chr(rng.randrange(128)) for _ in range(rng.randint(0, 20)))
        assert normalized_text(text) == _substituted(text), repr(text)


@pytest.mark.parametrize("text", [
    *(f"It rotates {k} again" for k in prefilter._STRONG), *(k.upper() for k in prefilter._STRONG),
    "nothing here", "", "knowledge", "in 3 days", "next Monday", "ago", "the other  day",
])
def test_the_written_out_prefilter_is_the_keyword_scan(text):
    low = text.lower()
    # the prefilter as it was, with the keyword tuple scanned by a generator
    expected = (any(k in low for k in prefilter._STRONG) or ("now" in low and bool(prefilter._NOW.search(low)))
                or bool(prefilter._RELATIVE_WORD.search(low)) or (" day" in low and bool(prefilter._IN_DAYS.search(low))))
    assert prefilter.might_have_dates(text) is expected


_PREFILTERED = [
    Memory(key="a", layout="bank", body="Deploys yesterday"), Memory(key="b", layout="bank", body="Deploys nightly"),
    Memory(key="c", layout="bank", description="due tomorrow", body="x"),
    Memory(key="d", layout="crux", body="x", extra={"twin_body": "shipped last week"}),
    Memory(key="e", layout="crux", body="x", extra={"twin_body": 3}),
    Memory(key="f", layout="zylos", body="today", extra={"entries": [1]}), Memory(key="g", layout="bank"),
    Memory(key="h", layout="bank", description="İstanbul now", body="ǅ ΣΑΣ in 3 days"),
]


@pytest.mark.parametrize("memories", [_PREFILTERED, _PREFILTERED[::-1], _PREFILTERED[1:2], []], ids=["all", "reversed", "one", "none"])
def test_worth_scanning_is_the_prefilter_over_the_field_texts(memories):
    expected = [i for i, m in enumerate(memories) if any(prefilter.might_have_dates(t) for _, t in absolutize_dates.field_texts(m))]
    assert absolutize_dates._worth_scanning(memories) == expected


_DATE_BITS = ["now", "know", "this week", "this", "last", "next monday", "in 3 days", " day", "days", "ago", " ago",
              "Today", "TOMORROW", "other day", "earlier", "soon", "İ", "ß", "Σ", "\x00", "\n", " ", "x", "ǅ", "ﬁ"]


def test_the_prefilter_over_many_texts_answers_as_it_does_text_by_text(monkeypatch):
    import random

    monkeypatch.setattr(prefilter, "_JOINED", 5)  # several joined slices in most cases

    rng = random.Random(16)
    for _ in range(400):
        texts = ["".join(rng.choice(_DATE_BITS) for _ in range(rng.randint(0, 5))) for _ in range(rng.randint(0, 12))]
        expected = [i for i, t in enumerate(texts) if prefilter.might_have_dates(t)]
        assert prefilter.texts_might_have_dates(texts) == expected, texts


@pytest.mark.parametrize("line", [
    '{"id": "a", "text": "x"}\n', '  {"id": "a"}\n', '{"id": "a"} \t\r\n', '{"id": "a"}', '{"id": "a"} x\n',
    '{"id": "a"}{"id": "b"}\n', '\ufeff{"id": "a"}\n', '{"id": "a", "n": NaN}\n', '{"id": "a"\n', '[1]\n', '"a"\n',
    "[" * 100000 + "\n", '{"id": "a", "id": "b"}\n', '\u2028{"id": "a"}\n', '{"id": "a"}\u00a0\n',
], ids=repr)
def test_the_direct_scan_reads_each_line_as_json_loads_does(line):
    """The reader's scan-first parse (`_records`) against json.loads itself, on lines json.loads
    takes with whitespace around them, refuses (extra data, not JSON, too deep) or reads oddly."""
    try:
        expected: object = json.loads(line)
    except (ValueError, RecursionError):
        expected = ValueError
    data = b'{"id": "first"}\n' + line.encode("utf-8")  # the second line: no BOM stripping there
    corpus = Corpus(layout="bank", root="/")
    got = [rec for _, _, rec, _ in reader._records("k", data.split(b"\n"), corpus)][1:]
    if expected is ValueError:
        assert got == [] and [f.reason for f in corpus.findings] == ["line 2: not valid JSON"]
    elif isinstance(expected, dict):
        assert got == [expected] and corpus.findings == []
    else:
        assert got == [] and [f.reason for f in corpus.findings] == ["line 2: record without an id"]


def test_significant_words_of_an_ascii_normal_form_are_the_plain_filter():
    # the ASCII path subtracts one set (stopwords, every word of one or two letters or digits)
    import random

    from pipeline.rules.text import STOPWORDS, significant_of_normalized

    rng = random.Random(19)
    words = [*STOPWORDS, "a", "z9", "9", "abc", "ab", "deploy", "x1y", "12", "123", "naïve", "ü", "üb", "über"]
    for _ in range(2000):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(0, 8)))
        expected = frozenset(w for w in text.split() if w not in STOPWORDS and len(w) > 2)
        assert significant_of_normalized(text) == expected, text


def test_the_exit_freeze_is_registered_once_however_often_asked(monkeypatch):
    import atexit

    from pipeline.storage import gc_pause

    registered: list[object] = []
    monkeypatch.setattr(gc_pause, "_frozen_at_exit", False)
    monkeypatch.setattr(atexit, "register", registered.append)
    for _ in range(3):
        gc_pause.freeze_at_exit()
    assert registered == [gc.freeze]


def test_a_memory_listed_twice_groups_as_the_loop_groups_it():
    """The one-group fast path of text_groups goes by place, not identity: a reader that lists a
    memory twice gets the one group the per-memory loop made of it (and no second merge)."""
    a = Memory(key="b/a", layout="bank", body="Deploy runs nightly", group="b")
    b = Memory(key="b/b", layout="bank", body="deploy RUNS nightly!", group="b")
    for memories in ([a, a], [a, b, a], [b, a, a, b]):
        one = duplicates.text_groups(memories)
        two = duplicates.text_groups(memories + [Memory(key="x/z", layout="bank", body="other", group="x")])  # the loop
        assert [[m.key for m in g] for g in one.duplicates] == [[m.key for m in g] for g in two.duplicates]
        assert len(one.duplicates) == 1
