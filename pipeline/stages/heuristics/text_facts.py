"""The facts a rewritten text must keep, found mechanically: numbers, paths, names, code, rules.

Used by the metadata stage (does a merged body keep every member's insights?) and the compress
stage (does a compressed twin keep every rule, number, path and name?). A fact is checked against
the rewritten text case-insensitively with whitespace collapsed; numbers are compared with their
thousands separators removed.

Atoms of a text:
- code spans (`...`), whole;
- tokens with a digit: numbers with units, versions, dates, incident ids (`5s`, `v1.2`, `INC-2291`);
- paths and dotted names (`src/db/migrate.py`, `conftest.py`, `payments.fallback_provider`);
- identifiers: snake_case, CamelCase, ALLCAPS, `@decorator`, `--flag`, `$VAR`, `call()`;
- capitalised words inside a sentence (names, products: "Carol", "Postgres").
A capitalised word that opens a sentence is not an atom (it cannot be told from an ordinary word);
the sentence-coverage rule below still asks for most of that sentence's words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

from ...rules.text import STOPWORDS
from ...text.lines import LIST_MARKER

CODE_SPAN = re.compile(r"`([^`\n]+)`")
_TOKEN = re.compile(r"[^\s`]+")
_STRIP = ".,;:!?()[]{}\"'*<>“”‘’…"
_HAS_DIGIT = re.compile(r"\d")
_FILE_EXT = re.compile(r"\w\.[A-Za-z][A-Za-z0-9]{0,5}$")
_DOTTED = re.compile(r"^[A-Za-z_][\w-]*(?:\.[A-Za-z_][\w-]*)+$")
_CAMEL = re.compile(r"[a-z][A-Z]|^[A-Z][a-z]+[A-Z]")
_ALLCAPS = re.compile(r"^[A-Z][A-Z0-9]{1,}s?$")
_NAME = re.compile(r"^[A-Z][a-z][\w'-]*$")
_SENTENCE_END = re.compile(r"[.!?:]$")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+")
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?", re.UNICODE)
# A "," or "_" after a digit and before three: the separator is matched first and the digit behind
# it looked at after, so most places of a text fail on one character test, not on a look-behind.
_NUM_SEP = re.compile(r"[,_](?<=\d[,_])(?=\d{3}\b)")
# Words that make a sentence a rule (besides an imperative opening, which heuristics/standing_rules.py judges).
DIRECTIVE_WORDS = frozenset(
    """must never always should shall avoid only required require requires mandatory forbidden
    prohibited cannot don't dont prefer ensure""".split()
)
NEGATIVE_WORDS = frozenset("not never no don't dont cannot can't avoid without won't mustn't shouldn't".split())
# How a negation can be written in a compressed twin.
NEGATION_MARKS = ("¬", "never", "not ", "no ", "don't", "avoid", "without", "✗", "!=", "≠", "w/o", "cannot")


def squash(text: str) -> str:
    """Lowercase, thousands separators out, whitespace collapsed: the form facts are compared in."""
    # split() and join: every run of whitespace (`\s`, the same characters) to one space, none at the ends
    return " ".join(_NUM_SEP.sub("", text.casefold()).split())


def _clean(token: str) -> str:
    return token.strip(_STRIP)


# Written in capitals for emphasis, not names ("should NOT", "ALWAYS"); abbreviations with dots.
_EMPHASIS = frozenset("not no never always must only do don't all any none important note warning todo and or".split())
_ABBREVIATIONS = frozenset("e.g i.e etc vs cf a.k.a".split())
_EMPHASIS_STEMS = _EMPHASIS | {w.rstrip("s") for w in _EMPHASIS}  # made once, not per token


def _plain_word(token: str) -> bool:
    """Most tokens are plain lowercase words ("the", "service"): letters only, none of them upper
    case, so no digit, path, dot, identifier or name test of `_atom_shape` can hold."""
    return token.islower() and token.isalpha()


def _is_atom(token: str, sentence_start: bool) -> bool:
    if _plain_word(token):
        return False
    return _atom_shape(token, sentence_start)


def _atom_shape(token: str, sentence_start: bool) -> bool:
    if len(token) < 2 and not token.isdigit():
        return False
    if _HAS_DIGIT.search(token):
        return True
    if "/" in token and len(token.strip("/")) > 1:
        return True
    if token.lower() in _ABBREVIATIONS:
        return False
    if _FILE_EXT.search(token) or _DOTTED.match(token):
        return True
    if _ALLCAPS.match(token) and token.lower().rstrip("s") in _EMPHASIS_STEMS:
        return False
    if "_" in token.strip("_") or _CAMEL.search(token) or _ALLCAPS.match(token):
        return True
    if token[0] in "@$" or token.startswith("--") or token.endswith("()") or "::" in token or "=" in token:
        return True
    return bool(_NAME.match(token)) and not sentence_start and token.lower() not in STOPWORDS


# Words that often open a sentence capitalised and are never names.
_OPENERS = frozenset(
    """this that these those when while once every each use we our they there here then also only
    without with since because until what why how where which who note see keep all some most both
    any none another other such many few first next last finally however otherwise instead later
    today yesterday tomorrow after before during you your its his her their my""".split()
)


def _title_case_runs(tokens: list[str]) -> set[int]:
    """Token positions inside Title Case runs ("What Gets Installed", a table header): not names."""
    alpha = [i for i, t in enumerate(tokens) if t[:1].isalpha()]
    if len(alpha) >= 2 and all(tokens[i][:1].isupper() for i in alpha):
        return set(alpha)
    out: set[int] = set()
    run: list[int] = []
    for i, t in enumerate(tokens + [""]):
        if t[:1].isupper() and _NAME.match(t):
            run.append(i)
            continue
        if len(run) >= 3:
            out.update(run)
        run = []
    return out


@lru_cache(maxsize=64)
def _lowercase_words(text: str) -> frozenset[str]:
    # Kept for the last few texts: a merge check reads every member against the same context.
    return frozenset(w for w in _WORD.findall(text) if w.islower())


def _probably_name(token: str, lowercase: frozenset[str]) -> bool:
    """A capitalised sentence opener that the texts never write in lowercase and that is not a
    common opener or an imperative verb: most likely a name ("Carol owns the list")."""
    from .standing_rules import IMPERATIVE_VERBS

    low = token.lower()
    return (
        bool(_NAME.match(token))
        and low not in lowercase
        and low not in STOPWORDS
        and low not in _OPENERS
        and low not in IMPERATIVE_VERBS
        and low not in DIRECTIVE_WORDS
        and stem(low) not in {stem(w) for w in lowercase if w[:3] == low[:3]}
    )


def atoms(text: str, context: str | None = None, keep: Callable[[str], bool] | None = None) -> list[str]:
    """The atoms of `text`, in order of first appearance, each once (compared in `squash` form)."""
    return [a for a, _ in atom_list(text, context, keep)]


def atom_list(text: str, context: str | None = None, keep: Callable[[str], bool] | None = None) -> list[tuple[str, bool]]:
    """(atom, soft) pairs: a soft atom is a capitalised sentence opener taken for a name, which a
    rewrite may also keep abbreviated (a prefix of four letters or more: "Implementation" → "impl").

    `context` (default: `text`) is what decides whether a capitalised sentence opener is a name: a
    word the context also writes in lowercase is an ordinary word.

    `keep`: only the atoms it holds for, as if the whole list were filtered by it (same order, same
    soft flags). A sentence opener it rules out is never judged a name, and the context's words are
    read only when an opener is judged: a merge check asks only about atoms its target lacks.
    """
    lowercase: frozenset[str] | None = None
    found: dict[str, bool] = {}
    unwanted: set[str] = set()

    def wanted(atom: str) -> bool:
        if atom in found or atom in unwanted:
            return False  # already in, or already ruled out: nothing to add either way
        if keep is None or keep(atom):
            return True
        unwanted.add(atom)
        return False

    for span in CODE_SPAN.findall(text):
        s = squash(span)
        if s and wanted(s):
            found[s] = False
    plain = CODE_SPAN.sub(" . ", text)
    for line in plain.splitlines():
        for atom, opener in _line_atoms(line):
            if not wanted(atom):
                continue
            if opener is None:
                found[atom] = False
                continue
            if lowercase is None:
                lowercase = _lowercase_words(context if context is not None else text)
            if _probably_name(opener, lowercase):
                found[atom] = True
    return list(found.items())


@lru_cache(maxsize=4096)
def _line_atoms(line: str) -> tuple[tuple[str, str | None], ...]:
    """A line's atoms in order, squashed, each with None, and among them its capitalised sentence
    openers that may be names, each with the token `_probably_name` is to judge against the text's
    context. Kept per line: a merged body repeats its members' lines, and a merge check reads both."""
    line = _HEADING.sub("", LIST_MARKER.sub("", line))
    raws = _TOKEN.findall(line)
    tokens = [_clean(r) for r in raws]
    title_case: set[int] | None = None  # made when a token first needs it
    out: list[tuple[str, str | None]] = []
    start = True
    for i, (raw, token) in enumerate(zip(raws, tokens)):
        # A plain word is no atom and no name (`_NAME` wants a capital): the tests are for the others.
        if token and not _plain_word(token):
            if title_case is None:
                title_case = _title_case_runs(tokens)
            label = raw.startswith(("**", "__")) or raw.endswith(("**:", "__:"))
            if _is_atom(token, start or label or i in title_case):
                out.append((_squash_token(token), None))
            elif start and not label and i not in title_case and _NAME.match(token):
                out.append((_squash_token(token), token))  # a name only if `_probably_name` says so (it needs _NAME too)
        # `_SENTENCE_END` without the regex: a token holds no line break, its end is the string's
        start = raw.endswith((".", "!", "?", ":")) or raw in ("-", "—", "–", "|")
    return tuple(out)


def _squash_token(token: str) -> str:
    """`squash` of a token: it holds no whitespace and casefolding makes none, so only a thousands
    separator can go (and only where there is a "," or "_")."""
    folded = token.casefold()
    return _NUM_SEP.sub("", folded) if "," in folded or "_" in folded else folded


_DIGITS = frozenset("0123456789")
_ALNUM = frozenset("0123456789abcdefghijklmnopqrstuvwxyz")


def _boundary(ch: str) -> frozenset[str]:
    """The characters that may not touch an atom on the side where it has `ch`: a digit must not
    run on into a digit, a letter or digit not into a letter or digit; punctuation may touch."""
    return _DIGITS if ch.isdigit() else _ALNUM if ch.isalnum() else frozenset()


def _on_boundaries(haystack: str, atom: str) -> bool:
    # A plain search with the two edge checks: compiling a regex per atom cost more than the search
    # (a merged body has a hundred atoms, each seen once).
    left, right = _boundary(atom[0]), _boundary(atom[-1])
    start = haystack.find(atom)
    while start != -1:
        end = start + len(atom)
        if (start == 0 or haystack[start - 1] not in left) and (end == len(haystack) or haystack[end] not in right):
            return True
        start = haystack.find(atom, start + 1)
    return False


def has_atom(haystack_squashed: str, atom: str, haystack_nospace: str | None = None) -> bool:
    """`atom` (squashed) occurs in the squashed text on word boundaries, or with spaces ignored."""
    if atom and _on_boundaries(haystack_squashed, atom):
        return True
    nospace = haystack_nospace if haystack_nospace is not None else haystack_squashed.replace(" ", "")
    return atom.replace(" ", "") in nospace


@lru_cache(maxsize=16)
def _target_forms(target: str) -> tuple[str, str, frozenset[str]]:
    """A rewrite as atoms are looked up in it: squashed, squashed without spaces, its words of four
    letters or more. Kept for the last few: a merge check looks up every member in the same body."""
    hay = squash(target)
    return hay, hay.replace(" ", ""), frozenset(w.casefold() for w in _WORD.findall(target) if len(w) >= 4)


def missing_atoms(source: str, target: str, context: str | None = None, *, openers: bool = True) -> list[str]:
    """Atoms of `source` that `target` does not keep (`openers`: also the soft ones)."""
    hay, nospace, words = _target_forms(target)
    lost = []
    # Only the atoms the target lacks: most are there, and are then never judged (`atom_list`'s keep).
    for atom, soft in atom_list(source, context, keep=lambda a: not has_atom(hay, a, nospace)):
        if soft and not openers:
            continue
        if soft and any(atom.startswith(w) for w in words):
            continue
        lost.append(atom)
    return lost


# --- sentences and words -------------------------------------------------------------------------


_SUFFIXES = ("ing", "ies", "es", "ed", "s")


def stem(word: str) -> str:
    if not word.endswith(_SUFFIXES):  # one test for the many words with no suffix to take off
        return word
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def words(text: str) -> list[str]:
    return [w.casefold() for w in _WORD.findall(CODE_SPAN.sub(" ", text))]


@lru_cache(maxsize=256)
def key_words(text: str) -> frozenset[str]:
    """Significant words (dream's stopwords out, longer than two letters), stemmed. Kept for the
    last few texts: a merge check asks for the merged body's once per member."""
    # Each distinct word once: a body says its words many times over.
    return frozenset(stem(w) for w in set(words(text)) - STOPWORDS if len(w) > 2 and not w.isdigit())


def sentences(text: str) -> list[str]:
    """Logical sentences: list items and paragraph lines joined, then split at . ! ? followed by a space."""
    out: list[str] = []
    for unit in logical_lines(text):
        for part in re.split(r"(?<=[.!?])\s+(?=[A-Z`\"(])", unit):
            part = part.strip()
            if part:
                out.append(part)
    return out


def logical_lines(text: str) -> list[str]:
    """Lines with wrapped continuations joined: a list item or a paragraph line is one unit.

    Headings, list items and fenced code lines start units; a plain line right after a non-empty
    line continues it.
    """
    units: list[str] = []
    in_fence = False
    joinable = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            in_fence = not in_fence
            units.append(stripped)
            joinable = False
            continue
        if in_fence:
            units.append(line.rstrip())
            continue
        if not stripped:
            joinable = False
            continue
        starts_unit = bool(_HEADING.match(line) or LIST_MARKER.match(line)) or stripped.startswith(("|", ">", "⟦", "⟧", "}"))
        if joinable and not starts_unit:
            units[-1] = f"{units[-1]} {stripped}"
        else:
            units.append(stripped)
        joinable = not _HEADING.match(line)
    return units


def is_directive(sentence: str) -> bool:
    """A sentence that states a rule: a directive word, or an imperative/modal the rule judge sees."""
    ws = set(words(sentence))
    if ws & DIRECTIVE_WORDS or "do not" in sentence.casefold():
        return True
    from .standing_rules import judge_rule

    return judge_rule(LIST_MARKER.sub("", sentence))[0]


def is_negative(sentence: str) -> bool:
    return bool(set(words(sentence)) & NEGATIVE_WORDS) or "do not" in sentence.casefold()


def word_kept(word: str, target_words: frozenset[str], target_prefixes: frozenset[str]) -> bool:
    """A stemmed word is kept when the target has it, or an abbreviation of it (a prefix of 4+ letters)."""
    if word in target_words:
        return True
    return any(word.startswith(p) for p in target_prefixes if len(p) >= 4 and len(p) < len(word))


@dataclass(frozen=True)
class Coverage:
    sentence: str
    share: float


def sentence_coverage(source: str, target: str, *, only_directives: bool = False) -> list[Coverage]:
    """For each sentence of `source` (or each rule sentence), the share of its key words `target` keeps."""
    target_words = key_words(target)
    prefixes: frozenset[str] | None = None  # the abbreviations a word may be kept as: made when one is missing
    out = []
    for s in sentences(source):
        if only_directives and not is_directive(s):
            continue
        kws = key_words(s)
        if not kws:
            continue
        missing = kws - target_words  # `word_kept` keeps the others: only these need its prefix test
        kept = len(kws) - len(missing)
        if missing:
            if prefixes is None:
                prefixes = frozenset(w for w in target_words if len(w) >= 4)
            kept += sum(1 for w in missing if word_kept(w, target_words, prefixes))
        out.append(Coverage(s, kept / len(kws)))
    return out
