"""The shortcuts the stub's crux work takes agree with the plain path they skip: the same atoms,
stems, readings and statements, on the fixtures' texts and on tokens made to sit on each edge."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.stages.heuristics import text_facts
from pipeline.stages.heuristics.conflicts.readings import Reading

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"

# Tokens on the edges of each shape test: lowercase words beside names, ids, paths and the like.
EDGE_TOKENS = """the a x é ß ǆ ǅ Ǆ ﬁ etc vs cf e.g i.e api API Apis APIs NOT Not not dont don't
    snake_case _private __dunder__ CamelCase camelCase iPhone Carol carol's Carol's v1.2 5s INC-2291
    src/db/migrate.py / // conftest.py payments.fallback_provider @decorator --flag $VAR call()
    a::b k=v naïve café Ωmega ωmega straße ﬀ ١٢ ²  œuvre Œuvre""".split()


def _fixture_tokens() -> set[str]:
    out: set[str] = set()
    for path in sorted(FIXTURES.rglob("*.md"))[:400]:
        for raw in text_facts._TOKEN.findall(path.read_text(encoding="utf-8", errors="replace")):
            out.add(text_facts._clean(raw))
    return {t for t in out if t}


@pytest.mark.parametrize("start", [False, True])
def test_atom_fast_path_agrees_with_the_shape_tests(start: bool) -> None:
    tokens = _fixture_tokens() | set(EDGE_TOKENS)
    assert len(tokens) > 200
    for token in tokens:
        assert text_facts._is_atom(token, start) == text_facts._atom_shape(token, start), token


def test_stem_shortcut_agrees_with_the_suffix_loop() -> None:
    def plain(word: str) -> str:
        for suffix in ("ing", "ies", "es", "ed", "s"):
            if word.endswith(suffix) and len(word) - len(suffix) >= 3:
                return word[: -len(suffix)]
        return word

    for word in _fixture_tokens() | set(EDGE_TOKENS) | {"is", "ties", "tries", "bed", "caching", "ss"}:
        assert text_facts.stem(word) == plain(word), word


# --- the conflict judge: readings and statements ---------------------------------------------------


def test_antonym_key_shortcut_agrees_with_the_suffix_loop() -> None:
    """A word that is not all letters skips the suffix loop: no spelling it tries is on the list."""
    from pipeline.stages.heuristics.conflicts import words

    def plain(w: str) -> str | None:
        if w in words.ANTONYM_OF:
            return w
        for suffix in ("ally", "ing", "ed", "es", "ly", "s", "d"):
            if w.endswith(suffix) and len(w) - len(suffix) >= 3:
                base = w[: -len(suffix)]
                for cand in (base, base + "e", base + "al", base[:-1] if len(base) > 3 and base[-1] == base[-2] else base):
                    if cand in words.ANTONYM_OF:
                        return cand
        return None

    made = {f"{w}{c}{s}" for w in words.ANTONYM_OF for c in ("1", "_", " ", "é", "11") for s in ("", "s", "ed", "ing", "ally")}
    made |= {f"{c}{w}" for w in words.ANTONYM_OF for c in ("1", "x-")}
    for word in _fixture_tokens() | set(EDGE_TOKENS) | made | {"e2e", "v2", "node js", "enabl3d"}:
        assert words._antonym_key.__wrapped__(word) == plain(word), word

ROOT = FIXTURES.parent

# Phrases on each pattern the readings skip when the clause lacks what it needs, in several cases,
# and with letters that case-insensitive matching folds but lower() does not ("ſ", "K").
EDGE_CLAUSES = """non-root NON-idempotent | 2026-01-02 | 117-feedback_plans | part 2 of the plan, R4, round 3 |
    raised from 10 MB to 50 MB | the job timed out | it TIMES OUT | a minute | Two Hours | twelve weeks |
    deploy on Tuesdays | we used to pin Node 16 | WE TRIED Jenkins | until 2019 | the legacy API |
    back then | In The Past | except for hotfixes | UNLESS asked | apart from CI | other than prod |
    use the staging bucket, not the production bucket | 3 replicas | Per user | 5 retries per job |
    every 5 minutes | EACH night | twice a day | NIGHTLY | on Sundays | 60 seconds | 2.5h | 10 ms |
    ſeconds a ſecond | a Kelvin day | non-ſtop | we uſed to | EXCEPT fOR CI | ﬀ 3 ſtaff |
    use SQLite instead of Postgres | GraphQL WAS REJECTED | kept in our own table, NOT LaunchDarkly |
    we Moved the nightly jobs over from Jenkins | Stopped Using Travis | no longer uses Redis |
    Kafka has been deprecated | rather than k8s | migrated off Heroku | never used Mongo""".split("|")


def _texts() -> list[str]:
    import json

    out: list[str] = []

    def strings(value: object) -> None:
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, dict):
            for v in value.values():
                strings(v)
        elif isinstance(value, list):
            for v in value:
                strings(v)

    for path in sorted([*ROOT.glob("evals/*/*.jsonl"), ROOT / "tests" / "data" / "conflict_precision.jsonl"]):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                strings(json.loads(line))
    out += [p.read_text(encoding="utf-8", errors="replace") for p in sorted(FIXTURES.rglob("*.md"))[:400]]
    return out + [c.strip() for c in EDGE_CLAUSES]


def test_readings_agree_with_every_pattern_tried(monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.stages.heuristics.conflict_statements import statements
    from pipeline.stages.heuristics.conflicts import quantities, readings

    found = {c for t in _texts() for c in readings.clauses(statements(t))} | {c for t in _texts() for c in readings.clauses(t)}
    assert len(found) > 1000
    fast = {c: readings.read.__wrapped__(c) for c in found}
    for module, test in [(readings, "may_have"), (readings, "may_have_word"), (readings, "may_match"), (readings, "has_digit"),
                         (readings, "has_number"), (quantities, "may_have_word"), (quantities, "has_number")]:
        monkeypatch.setattr(module, test, lambda *args: True)
    for clause, reading in fast.items():
        assert readings.read.__wrapped__(clause) == reading, clause


def test_rejected_words_agree_with_every_pattern_tried(monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.stages.heuristics.conflicts import rejected

    texts = set(_texts())
    fast = {t: rejected._rejected_words.__wrapped__(t) for t in texts}
    assert sum(bool(words) for words in fast.values()) > 20
    monkeypatch.setattr(rejected, "may_have", lambda text, needles: True)
    for text, words in fast.items():
        assert rejected._rejected_words.__wrapped__(text) == words, text


def _line_statement_plain(line: str) -> str:
    """`_line_statement` with every pattern applied to every line, as it was before its shortcuts."""
    from pipeline.stages.heuristics import conflict_statements as cs

    if cs._ONLY_LINKS.match(line):
        return ""
    line = cs._BULLET.sub("", line)
    line = cs._WIKILINK.sub(" ", line)
    line = cs._PLACEHOLDER.sub(" ", line)
    line = cs._LINK.sub(lambda m: m.group(1), line)
    line = cs._URL.sub(" ", line)
    line = cs._EMPHASIS.sub(lambda m: m.group(2), line)
    line = cs._INLINE_CODE.sub(" ", line)
    line = " ".join(line.split())
    if cs._KEY_VALUE.match(line) or len(cs._WORD.findall(line)) < 2:
        return ""
    return line


def _statement_lines_plain(text: str) -> list[str]:
    from pipeline.stages.heuristics import conflict_statements as cs

    text = cs._FRONT_MATTER.sub("", text.replace("\r\n", "\n"))
    text = cs.FENCED_BLOCK.sub("\n", text)
    text = cs._HTML_COMMENT.sub(" ", text)
    text = cs._TABLE_ROW.sub("", text)
    text = cs._HEADING.sub("", text)
    return [s for s in (_line_statement_plain(line) for line in text.split("\n")) if s]


def test_statement_lines_agree_with_every_pattern_tried() -> None:
    from pipeline.stages.heuristics import conflict_statements as cs

    texts = _texts() + [
        "---\ntitle: x\n---\nBody line one here.\n```py\ncode here\n```\n<!-- a comment -->\n| a | b |\n|---|---|\n"
        "# Heading\nSetext heading\n===\nAnother one\n---\n~~~\nfenced\n~~~\nThe end of it.",
        "no front matter ---\nstill text\n-- not a rule\n=== nor this",
    ]
    for text in texts:
        assert cs.statement_lines(text) == _statement_lines_plain(text), text

    lines = {line for t in _texts() for line in t.split("\n")} | {
        "- [a](a.md) — [b](b.md)", "see [[Other note]] and {{name}}", "<PLACEHOLDER> stays [TODO] out",
        "**bold** and _snake_case_ with `code` at https://example.com/x", "1. step one ${VAR}", "a ]( b",
    }
    assert len(lines) > 1000
    for line in lines:
        assert cs._line_statement(line) == _line_statement_plain(line), line


def test_a_stub_plan_without_a_cache_imports_no_diskcache_nor_asyncio() -> None:
    """diskcache (and with it sqlite3 and pickle) loads with the first reply cache, not with the
    client; asyncio with the first call that needs the event loop, which a stub's never do."""
    import subprocess
    import sys

    code = (
        "import sys\nfrom pipeline.cli import main\n"
        f"sys.argv = ['memconsolidate', 'plan', {str(FIXTURES / 'crux')!r}, '--model', 'stub', '--json', '--now', '2026-11-29', '--no-cache']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('diskcache', 'sqlite3', 'pickle', 'asyncio', 'logging') if m in sys.modules), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.stderr.strip().splitlines()[-1] == "[]", done.stderr[-500:]


def test_file_name_is_the_paths_name() -> None:
    from pathlib import PurePosixPath

    from pipeline.stages.consolidate.stage import _file_name

    keys = ["a.md", "memories/learning/x.memory.md", "a/./b.md", "a//b.md", "a/b/", "a/b/.", "a/..", ".", "", "/", "x/.hidden",
            "memories/idea/über-idee.memory.crux.md", "a/b/c"]
    for key in keys:
        assert _file_name(key) == PurePosixPath(key).name, key


@pytest.mark.parametrize("fixture", ["crux", "bank", "claude", "zylos"])
def test_stub_plans_are_the_same_without_the_event_loop(fixture: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The stub's calls answered on the caller's thread give the plan the event loop gives."""
    from helpers import plan_json

    from pipeline.llm.client import LLMClient

    here = plan_json(FIXTURES / fixture, "--model", "stub", "--no-cache")
    monkeypatch.setattr(LLMClient, "_in_process", lambda self: False)
    assert plan_json(FIXTURES / fixture, "--model", "stub", "--no-cache") == here


def test_in_process_calls_keep_order_budget_and_progress(monkeypatch: pytest.MonkeyPatch) -> None:
    """Results in order, the budget stopping the same calls, `on_result` after each: as on the loop."""
    from pydantic import BaseModel

    from pipeline.config import LLMConfig
    from pipeline.llm import make_client, register_stub
    from pipeline.llm.client import LLMClient
    from pipeline.llm.stub import STUBS

    class Ask(BaseModel):
        n: int

    class Said(BaseModel):
        n: int

    @register_stub("t_in_process")
    def _stub(payload: Ask) -> Said:
        if payload.n == 2:
            raise ValueError("two")
        return Said(n=payload.n * 10)

    prompt = LLMClient.prompt
    monkeypatch.setattr(LLMClient, "prompt", lambda self, stage: prompt(self, "conflicts"))  # any stage's prompt

    def run() -> tuple[list[object], list[int], int]:
        heard: list[int] = []
        with make_client(LLMConfig(model="stub", max_calls=4)) as client:  # type: ignore[union-attr]
            got = client.structured_many("t_in_process", [Ask(n=i) for i in range(6)], Said, heard.append)
            shown = [r.n if isinstance(r, Said) else f"{type(r).__name__}: {r.reason}" for r in got]
            return shown, heard, client.stats.llm_calls

    try:
        here = run()
        monkeypatch.setattr(LLMClient, "_in_process", lambda self: False)
        assert run() == here
    finally:
        STUBS.pop("t_in_process", None)
    assert here[1] == [1, 2, 3, 4, 5, 6] and here[2] == 4
    assert here[0][:2] == [0, 10] and "BudgetExceeded" in str(here[0][4])


def _atom_list_plain(text: str, context: str | None = None) -> list[tuple[str, bool]]:
    """`text_facts.atom_list` as it was before its lines were kept: every line tokenized in place."""
    tf = text_facts
    lowercase = tf._lowercase_words(context if context is not None else text)
    found: dict[str, bool] = {}
    for span in tf.CODE_SPAN.findall(text):
        s = tf.squash(span)
        if s:
            found.setdefault(s, False)
    for line in tf.CODE_SPAN.sub(" . ", text).splitlines():
        line = tf._HEADING.sub("", tf.LIST_MARKER.sub("", line))
        raws = tf._TOKEN.findall(line)
        tokens = [tf._clean(r) for r in raws]
        title_case = tf._title_case_runs(tokens)
        start = True
        for i, (raw, token) in enumerate(zip(raws, tokens)):
            label = raw.startswith(("**", "__")) or raw.endswith(("**:", "__:"))
            if token and tf._is_atom(token, start or label or i in title_case):
                found.setdefault(tf.squash(token), False)
            elif token and start and not label and i not in title_case and tf._probably_name(token, lowercase):
                found.setdefault(tf.squash(token), True)
            start = bool(tf._SENTENCE_END.search(raw)) or raw in ("-", "—", "–", "|")
    return list(found.items())


def test_atom_list_with_kept_lines_agrees_with_the_plain_tokenizing() -> None:
    texts = _texts() + [
        "Carol owns the list.\nCarol's team: Postgres and `src/db.py`\n# What Gets Installed\n- **Note**: use v1.2\r\nInc-2291 Fixed",
        "Implementation details. Implementation is slow\u2028`a\rb` Redis\x0cRedis here",
    ]
    assert sum(any(soft for _, soft in _atom_list_plain(t)) for t in texts) > 5  # names among them
    for i, text in enumerate(texts):
        context = texts[i - 1] + "\n" + text  # a context other than the text, as a merge check gives
        assert text_facts.atom_list(text) == _atom_list_plain(text), text
        assert text_facts.atom_list(text, context) == _atom_list_plain(text, context), text


def test_clause_breaks_spelled_out_split_as_the_short_form() -> None:
    import re

    from pipeline.stages.heuristics.conflict_statements import statements
    from pipeline.stages.heuristics.conflicts import readings

    short = re.compile(
        r";|—| because | since | which | so that | so |,? like |,? such as |,? for example |,? e\.g\. |[.!?:]\s+|\n",
        re.IGNORECASE,
    )
    texts = _texts() + [statements(t) for t in _texts()] + [
        "A, LIKE b; c — d BECAUSE e, Such As f, for EXAMPLE g, E.G. h e.g. i. J! K? L: m\nn so that o SO p",
        "ſo ſince ,like , like x ,  such as y.\tz:\u2028w",
    ]
    for text in texts:
        assert readings._CLAUSE_BREAK.split(" " + text + " ") == short.split(" " + text + " "), text
        assert readings._clause_split(" " + text + " ") == short.split(" " + text + " "), text  # the marks alone, if no word


def _clause_readings() -> list[Reading]:
    """Readings of clauses that clash in every way: the eval pairs' and fixtures' clauses, and each
    turned around (negated, an antonym swapped, a number changed, a choice replaced)."""
    import re

    from pipeline.stages.heuristics.conflict_statements import statements
    from pipeline.stages.heuristics.conflicts import readings

    found = sorted({c.strip() for t in _texts() for c in readings.clauses(statements(t))[:6] if 2 < len(c.split()) < 30})
    turned = [re.sub(r"\b(always|never|before|after|enable|disable|use|avoid|Postgres|\d+)\b", lambda m: {
        "always": "never", "never": "always", "before": "after", "after": "before", "enable": "disable",
        "disable": "enable", "use": "avoid", "avoid": "use", "Postgres": "MySQL"}.get(m.group(1), "7"), c, count=1) for c in found]
    return [readings.read(c) for c in found + turned + [f"do not {c}" for c in found[::3]]]


def test_may_oppose_holds_for_every_opposing_verdict() -> None:
    """The later clauses' pairs skip `_judge_clauses` unless `_may_oppose`: it must hold wherever the
    verdict is opposing advice (the only one counted there)."""
    from pipeline.stages.heuristics.conflicts.clash import _judge_clauses, _may_oppose

    found = _clause_readings()
    by_word: dict[str, list[int]] = {}
    for i, r in enumerate(found):
        for w in r.content:
            by_word.setdefault(w, []).append(i)
    pairs = {(i, j) for ids in by_word.values() for i in ids[:40] for j in ids[:40] if i != j}
    opposing = [(found[i], found[j]) for i, j in sorted(pairs) if _judge_clauses(found[i], found[j])[1] == "opposing_advice"]
    assert len(opposing) > 500
    assert all(_may_oppose(a, b) for a, b in opposing)


def test_substitution_agrees_with_the_alignment_made_for_every_pair() -> None:
    """`_substitution` aligns two clauses only when the words they do not share are few enough for a
    substitution; the same answer as aligning every pair, as `_judge_clauses` used to."""
    from pipeline.stages.heuristics.conflicts import clash

    Choices = tuple[tuple[str, ...], tuple[str, ...]]

    def plain(a: Reading, b: Reading, shared: frozenset[str], only_a: frozenset[str], only_b: frozenset[str]) -> Choices | None:
        slots = clash._slots(a.seq, b.seq)
        differing = [(x, y) for x, y in slots or [] if x != y]
        if (slots is not None and len(differing) == 1 and differing[0][0] and differing[0][1]
                and len(differing[0][0]) <= 3 and len(differing[0][1]) <= 4 and a.negative == b.negative
                and a.numbers == b.numbers and clash._chosen(a, differing[0][0]) and clash._chosen(b, differing[0][1])):
            return differing[0]
        moved = slots is None or all(not x or not y for x, y in differing)
        if moved and 0 < len(only_a) <= 3 and 0 < len(only_b) <= 3:
            xa, xb = tuple(w for w in a.seq if w in only_a), tuple(w for w in b.seq if w in only_b)
            if (a.negative == b.negative and a.numbers == b.numbers and len(shared) >= 3 and clash._contiguous(a, xa)
                    and clash._contiguous(b, xb) and clash._chosen(a, xa) and clash._chosen(b, xb)):
                return xa, xb
        return None

    found = _clause_readings()
    seen = 0
    for i, a in enumerate(found):
        for b in found[i + 1 : i + 60]:
            shared = a.content & b.content
            if len(shared) < 2:
                continue
            only_a, only_b = a.content - b.content, b.content - a.content
            got = clash._substitution(a, b, shared, only_a, only_b)
            assert got == plain(a, b, shared, only_a, only_b), (a, b)
            seen += got is not None
    assert seen > 20


def test_steps_agree_with_the_sequence_pattern_tried_on_every_sentence(monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.stages.heuristics.conflicts import order

    texts = _texts() + ["Drain, then upgrade. Upgrade FIRST, and then drain", "tag BEFORE merge; deploy only ONCE green",
                        "merge After review", "ſtart firſt, then go"]
    fast = {t: order._steps.__wrapped__(t) for t in texts}
    assert sum(bool(s) for s in fast.values()) > 20
    monkeypatch.setattr(order, "may_have", lambda text, needles: True)
    for text, found in fast.items():
        assert order._steps.__wrapped__(text) == found, text
