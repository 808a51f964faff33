"""Text a model wrote is data: made safe before it becomes part of a file, and checked for
instructions aimed at the next model that reads it.

`model_text(text, kind=..., limit=...)` is the one sanitizer every stage applies to what a model
(the stub included) writes:
- "line" (a description, a reason, a rule): one line, whitespace folded, control characters, ANSI
  escape sequences, bidi overrides, HTML comments and tags removed, bounded at a word;
- "title": a line that also cannot open a heading, quote or list, nor make a link (`[`, `]`
  become parentheses), since titles are written as `# title` and as `[title](file)` in MEMORY.md;
- "body" (a merged body, a compressed twin): lines kept, line ends normalized to `\\n`, control
  characters (tab kept), ANSI sequences and bidi overrides removed.
YAML-breaking characters need no handling here: the writers quote every value and check that it
reads back unchanged.

`injection(text)` names the first prompt-injection phrase in a text ("ignore previous
instructions", "disregard the above", chat-template and system-prompt markers), or None. The
stage runner makes every stage proposal whose text holds one need the user (`flag_injections`).
"""

from __future__ import annotations

import re
from typing import Any, Literal

from ..actions import ConsolidateAction, PromoteRuleAction, RebalanceVolumesAction, outputs_of
from ..model import Action
from .single_calls import one_line

Kind = Literal["line", "title", "body"]

# CSI (ESC [ ... final), OSC (ESC ] ... BEL or ESC \), and two-character escapes: removed whole,
# so no "[31m" is left behind.
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]|\x9b[0-?]*[ -/]*[@-~]")
# Bidi embeddings, overrides and isolates reorder what a reader sees (trojan-source style).
_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069]")
_LINE_BREAKS = re.compile("\r\n|[\r\n\v\f\x1c-\x1e\x85\u2028\u2029]")
# Tab and line feed are not in it: a body keeps both (a line has neither by then).
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# HTML comments hide what follows them; HTML elements render or run. Type parameters such as
# `Vec<String>` or `<T>` are not elements and stay.
_HTML_ELEMENTS = (
    "a|abbr|b|base|br|code|details|div|em|embed|form|h[1-6]|hr|i|iframe|img|input|kbd|li|link|math|meta|noscript|"
    "object|ol|p|pre|script|span|strong|style|sub|summary|sup|svg|table|td|template|th|tr|u|ul"
)
_HTML = re.compile(rf"<!--|--!?>|</?(?:{_HTML_ELEMENTS})(?:\s[^<>]*)?/?>", re.IGNORECASE)
# A title must not start a markdown block (heading, quote, list item, rule) where it is written
# as a line of its own.
_BLOCK_START = re.compile(r"^(?:[#>=|]+|[-*+](?=\s|$)|[-*_]{3,})\s*")


def model_text(text: str | None, *, kind: Kind = "line", limit: int | None = None) -> str:
    """`text` as it may be written into a memory, a plan or a report (see the module doc)."""
    out = _BIDI.sub("", _ANSI.sub("", text or ""))
    if kind == "body":
        out = _LINE_BREAKS.sub("\n", out)
        return _CONTROL.sub("", out)
    out = _HTML.sub(" ", _LINE_BREAKS.sub(" ", out).replace("\t", " "))
    out = _CONTROL.sub("", out)
    if kind == "title":
        out = out.replace("[", "(").replace("]", ")")
        previous = None
        while previous != out:
            previous, out = out, _BLOCK_START.sub("", out.strip())
    return one_line(out, limit) if limit is not None else " ".join(out.split())


_PHRASES = [
    r"ignore\s+(?:all\s+|any\s+)?(?:of\s+)?(?:the\s+|your\s+|my\s+)?(?:previous|prior|above|earlier|preceding|foregoing|former)\s+(?:instructions?|prompts?|messages?|rules?|directions?|context|text)",
    r"disregard\s+(?:all\s+|any\s+)?(?:of\s+)?(?:the\s+|your\s+)?(?:previous|prior|above|earlier|preceding|foregoing)(?:\s+(?:instructions?|prompts?|messages?|rules?|text|context))?",
    r"forget\s+(?:all\s+|everything\s+)?(?:about\s+)?(?:your|the|previous|prior|earlier)\s+(?:previous\s+|prior\s+)?(?:instructions?|prompts?|rules?)",
    r"(?:new|updated|override)\s+system\s+(?:prompt|instructions?)",
    r"you\s+are\s+now\s+(?:in\s+)?(?:developer|dan|jailbreak|god)\s+mode",
    r"<\|(?:im_start|im_end|system|user|assistant|endoftext|eot_id|start_header_id|end_header_id)\|>",
    r"\[/?INST\]",
    r"<</?SYS>>",
    r"</?(?:system|system-prompt|system_prompt)>",
    r"^[ \t]*(?:#+[ \t]*)?system[ \t]+prompt[ \t]*:",
    # an upper-case role line opening a turn ("System: Ubuntu 22.04" in a note is not one)
    r"(?-i:^[ \t]*(?:SYSTEM|ASSISTANT)[ \t]*:)",
]
_INJECTION = re.compile("|".join(f"(?:{p})" for p in _PHRASES), re.IGNORECASE | re.MULTILINE)


def injection(text: str | None) -> str | None:
    """The first prompt-injection phrase in `text` (whitespace folded), or None."""
    m = _INJECTION.search(text or "")
    return " ".join(m.group(0).split()) if m else None


def _written_texts(action: Action) -> list[str]:
    """What of a proposal ends up in a file or in front of the user: reason, rule, new files."""
    texts = [action.reason, str((action.rule if isinstance(action, PromoteRuleAction) else None) or "")]
    for out in outputs_of(action):
        if not isinstance(out, dict):
            continue
        texts.append(str(out.get("body") or ""))
        fm: Any = out.get("frontmatter") or {}
        if isinstance(fm, dict):
            texts.extend(str(fm.get(k) or "") for k in ("title", "name", "description"))
    return texts


def flag_injections(actions: list[Action]) -> list[Action]:
    """Stage proposals with a prompt-injection phrase in their text need the user, whatever
    --trust-model says: the phrase is named in the reason and in `flagged`. Deterministic
    proposals are left as they are (their text is the store's own)."""
    out = []
    for a in actions:
        found = None
        if a.source != "deterministic" or (isinstance(a, (ConsolidateAction, RebalanceVolumesAction)) and a.split_source):
            found = next((p for p in map(injection, _written_texts(a)) if p), None)
        if found is None or a.flagged:
            out.append(a)
            continue
        out.append(a.model_copy(update={
            "needs_user": True,
            "flagged": found,
            "reason": f"{a.reason}; model text flagged: it contains “{found}”, an instruction to whatever model reads "
                      "it next: review it before applying",
        }))
    return out
