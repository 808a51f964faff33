"""CRUX notation: the stub's compressed twin, the checks every twin must pass, and its front matter.

A twin is one `⟦CRUX:memory … ⟧` block, the notation of the store's own `.memory.crux.md` files:
labelled blocks (`Γ.steps{ … }` ordered steps, `R.rules{ … }` rules, `E.notes{ … }` facts and
examples) with symbols for the glue words (¬ not, ∀ every, → then, + and, | or, ≥ at least, ...).

Checks (`twin_problems`), all mechanical; a twin that fails one is never proposed:
- it is one `⟦CRUX:…⟧ … ⟧` block;
- its size (in `sizeUnit`) is within the cap and below the original's;
- every atom of the original is kept: numbers, dates, ids, paths, code, identifiers, names inside
  sentences (`text_facts.atoms`; a capitalised sentence opener is left to the rule check, since
  notation rewrites sentence openings);
- every rule sentence of the original (a directive word, or an imperative/modal) keeps at least
  half of its significant words (an abbreviation of 4+ letters counts), and a negative rule's
  closest twin line still carries a negation (¬, never, not, no, avoid, without, ...).

The stub writer keeps the original's structure: a `# title` becomes `Φ{…}`, every other heading a
block label, every list item and paragraph line one compacted line (articles out, glue words to
symbols, code spans and atoms untouched), fenced code verbatim. It keeps every word that carries
meaning, so it passes its own checks unless the original is too big for the cap.
"""

from __future__ import annotations

import math
import re
from typing import Any

from ..text.lines import ATX_HEADING
from ..rules.text import normalize
from .heuristics.text_facts import (
    CODE_SPAN,
    NEGATION_MARKS,
    is_negative,
    key_words,
    logical_lines,
    missing_atoms,
    sentence_coverage,
    word_kept,
)

OPEN, CLOSE = "⟦CRUX:memory", "⟧"
RULE_COVERAGE = 0.5
_HEADING = ATX_HEADING
_LIST_MARK = re.compile(r"^(?:[-*+]|(\d+)[.)])\s+")
_PROTECTED = re.compile(r"[\d/_.@$=()\[\]{}<>:]|[a-z][A-Z]|^[A-Z]{2,}")
# One-word and two-word glue, and what the notation writes instead ("" drops the word).
_PHRASES = {
    ("do", "not"): "¬", ("does", "not"): "¬", ("did", "not"): "¬", ("at", "least"): "≥", ("at", "most"): "≤",
    ("more", "than"): ">", ("greater", "than"): ">", ("less", "than"): "<", ("fewer", "than"): "<",
    ("leads", "to"): "→", ("results", "in"): "→", ("instead", "of"): "≠",
}
_WORDS = {
    "not": "¬", "never": "¬", "no": "¬", "don't": "¬", "dont": "¬", "cannot": "¬can", "can't": "¬can",
    "and": "+", "or": "|", "then": "→", "every": "∀", "each": "∀", "all": "∀",
    "the": "", "a": "", "an": "", "was": "", "were": "", "be": "", "been": "", "being": "", "that": "", "which": "",
    "this": "", "these": "", "those": "", "its": "", "very": "", "really": "", "just": "", "also": "", "of": "",
    "there": "", "with": "w/", "without": "w/o", "because": "∵", "therefore": "∴",
    "equals": "=", "is": "=", "are": "=",
}


def tokens_estimate(text: str) -> int:
    """Tokens as the store's `sizeUnit: tokens` counts them: four characters a token."""
    return math.ceil(len(text) / 4)


# --- the stub writer -----------------------------------------------------------------------------


def _compact_plain(segment: str) -> str:
    words = segment.split()
    out: list[str] = []
    i = 0
    pending_neg = False
    while i < len(words):
        raw = words[i]
        core = raw.strip(",;:.!?")
        low = core.lower()
        pair = (low, words[i + 1].strip(",;:.!?").lower()) if i + 1 < len(words) else None
        if pair in _PHRASES:
            sym = _PHRASES[pair]
            i += 2
        elif low in _WORDS and not _PROTECTED.search(core):
            sym = _WORDS[low]
            i += 1
        else:
            word = raw.rstrip(".") if i == len(words) - 1 else raw
            out.append(("¬" + word) if pending_neg else word)
            pending_neg = False
            i += 1
            continue
        if sym == "¬":
            pending_neg = True
        elif sym:
            out.append(sym)
    if pending_neg:
        out.append("¬")
    return " ".join(out)


def compact(unit: str) -> str:
    """One logical line in the notation: list marker out, code spans verbatim, glue to symbols."""
    m = _LIST_MARK.match(unit)
    prefix = f"{m.group(1)}." if m and m.group(1) else ""
    text = unit[m.end():] if m else unit
    parts = []
    last = 0
    for span in CODE_SPAN.finditer(text):
        parts.append(_compact_plain(text[last : span.start()]))
        parts.append(span.group(1))
        last = span.end()
    parts.append(_compact_plain(text[last:]))
    line = " ".join(p for p in parts if p)
    line = re.sub(r"\s+([,;:])", r"\1", line)
    line = re.sub(r"\s+\.(?:\s+|$)", "; ", line).strip().rstrip(";")
    return f"{prefix}{line}"


def _label(heading: str, units: list[str]) -> str:
    words = normalize(heading).split()[:2]
    name = "_".join(words) or "notes"
    if units and sum(1 for u in units if re.match(r"^\d+[.)]\s", u)) * 2 >= len(units):
        kind = "Γ"
    elif any(re.search(r"\b(must|never|always|should|only|do not|don't|avoid)\b", u, re.I) for u in units):
        kind = "R"
    else:
        kind = "E"
    return f"{kind}.{name}"


def stub_twin(body: str) -> str:
    blocks: list[tuple[str | None, int, list[str]]] = [(None, 0, [])]
    for unit in logical_lines(body):
        h = _HEADING.match(unit)
        if h and not unit.startswith("    "):
            blocks.append((h.group(2), len(h.group(1)), []))
        else:
            blocks[-1][2].append(unit)
    out = [OPEN]
    for heading, level, units in blocks:
        lines: list[str] = []
        fence = False
        for u in units:
            if u.strip().startswith(("```", "~~~")):
                fence = not fence
                lines.append(u.strip())
            elif fence:
                lines.append(u)
            else:
                c = compact(u)
                if c:
                    lines.append(c)
        if heading is None:
            out.extend(lines)
        elif level == 1 and not lines:
            out.append(f"Φ{{{compact(heading)}}}")
        else:
            out.append(f"{_label(heading, units)}{{{compact(heading) if level == 1 else ''}".rstrip())
            out.extend(f" {line}" for line in lines)
            out.append("}")
    out.append(CLOSE)
    return "\n".join(out) + "\n"


# --- checks --------------------------------------------------------------------------------------


def _best_line(sentence: str, twin_lines: list[str]) -> str:
    kws = key_words(sentence)
    best, score = "", -1
    for line in twin_lines:
        lw = key_words(line)
        prefixes = frozenset(w for w in lw if len(w) >= 4)
        s = sum(1 for w in kws if word_kept(w, lw, prefixes))
        if s > score:
            best, score = line, s
    return best


def twin_problems(original: str, twin: str, cap: int, size_of, original_size: int) -> list[str]:
    """Why a compressed twin cannot replace `original` (empty: it can)."""
    text = twin.strip()
    if not text.startswith("⟦CRUX:") or not text.endswith(CLOSE):
        return ["is not one ⟦CRUX:…⟧ block"]
    problems = []
    size = size_of(text + "\n")
    if size > cap:
        problems.append(f"is over the cap ({size} > {cap})")
    if size >= original_size > 0:
        problems.append(f"is not smaller than the original ({size} ≥ {original_size})")
    lost = missing_atoms(original, text, openers=False)
    if lost:
        problems.append(f"loses {', '.join(lost[:5])}{' …' if len(lost) > 5 else ''}")
    rules = sentence_coverage(original, text, only_directives=True)
    thin = [c for c in rules if c.share < RULE_COVERAGE]
    if thin:
        problems.append(f"loses the rule “{thin[0].sentence[:70]}”")
    lines = [line for line in text.splitlines() if line.strip()]
    for c in rules:
        if is_negative(c.sentence) and not any(mark in _best_line(c.sentence, lines).lower() for mark in NEGATION_MARKS):
            problems.append(f"drops the negation of “{c.sentence[:70]}”")
            break
    return problems


# --- front matter --------------------------------------------------------------------------------

COMPRESSION_KEYS = ("compressed", "compressionTarget", "beforeTokens", "afterTokens", "reducedBy", "compressedDate", "sourceArchive")


def twin_frontmatter(meta: dict[str, Any], *, new_id: str | None, target: int, before: int, after: int,
                     date: str, archive: str) -> dict[str, Any]:
    """The original's keys in order (an `id` first if it had none), then what real twins add."""
    fm: dict[str, Any] = {}
    if new_id and "id" not in meta:
        fm["id"] = new_id
    fm.update({k: v for k, v in meta.items() if k not in COMPRESSION_KEYS})
    reduced = max(0, round((1 - after / before) * 100)) if before else 0
    fm.update({
        "compressed": True,
        "compressionTarget": target,
        "beforeTokens": before,
        "afterTokens": after,
        "reducedBy": f"{reduced}%",
        "compressedDate": date,
        "sourceArchive": archive,
    })
    return fm
