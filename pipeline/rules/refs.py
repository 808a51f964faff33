"""File and symbol references in a memory's text, and the scope of each file reference.

dream (seed 001, STEP 2a/2b) checks every path and symbol a memory names against the repository.
Extraction here is deliberately conservative: a false "missing" can get a memory pruned, a missed
reference only keeps it. So:

- file refs: paths with a `/` and a known extension anywhere in the text (code fences included:
  a config listing paths names real files); in inline code also a bare file name with a known
  extension (`hooks.json`, `run-hook.mjs:141`, not a kind of file's suffix such as `.test.ts`,
  which is what the glob `*.test.ts` names) and any path with a `/` (`src/hooks/`, a folder).
  Line suffixes (`:186`, `:140-150`, `#L10`) are dropped. URLs are kept as refs only so the report
  can say they were not checked.
- symbol refs (outside fenced code, whose snippets quote library APIs as illustration):
  `name()` anywhere; `def name`, `function name`, `class Name`, ... when the name looks like code;
  and in inline code an identifier or dotted chain whose parts look like code (`SessionStore`,
  `run_migrations`, `tool_input.subagent_type`, `DEBT_SCAN_EXTENSIONS`) or a call `name(...)`.
  Plain words never count as symbols: "Promise" or "hooks" prove nothing about the repository. A
  plain word called on its own (`run()`, `Agent()`) does; called as a method (`history.back()`,
  `page.route()`) it is the method of countless objects, so it does not.
  Nor does a framework's own vocabulary, which any project using the framework contains: the test
  runners' globals and matchers (`expect`, `beforeEach`, `toBe`, `expect.objectContaining`), their
  mock helpers (`vi.spyOn`, `jest.useFakeTimers`, `mockRestore`), Testing Library's queries
  (`getByText`), React's built-in hooks (`useMemo`). It is the name that decides, never the object
  it is called on: a project's own `screen.redrawStatusBar()` or `cy.loginAs()` is its own symbol.

`scope()` is dream's scope step: what lies outside the repository (`~`, `/`, `$`, URLs, a first
segment that is not a top-level folder of the repository, `..`, template placeholders, folders the
index does not read such as node_modules) is UNVERIFIABLE and never counts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from ..text.lines import FENCED_BLOCK

KNOWN_EXTENSIONS = frozenset(
    """py pyi ts tsx js jsx mjs cjs json jsonl json5 md mdx yaml yml sh bash zsh toml go rs java kt
    kts rb php c h cc cpp hpp cs swift css scss sass less html vue svelte sql txt cfg ini conf lock
    xml env proto graphql""".split()
)
_EXT_ALT = "|".join(sorted(KNOWN_EXTENSIONS, key=len, reverse=True))

REPO_RELATIVE = "REPO_RELATIVE"
UNVERIFIABLE = "UNVERIFIABLE"

# Folders the repository index never reads: a ref into one of them cannot be checked.
UNINDEXED_DIRS = frozenset({".git", "node_modules", "__pycache__", ".venv", ".memconsolidate", ".archive"})

_URL = re.compile(r"\b(?:https?|ftp|file)://[^\s<>`'\")\]]+", re.IGNORECASE)
_INLINE_CODE = re.compile(r"`([^`\n]+)`")
_LINE_SUFFIX = re.compile(r"(?::\d+(?:[-:]\d+)*|#L\d+(?:-L?\d+)?)$")
_PATH = re.compile(
    r"(?<![\w.@/~$*-])"
    r"((?:~|\$\{?\w+\}?|\.{1,2})?/?(?:[\w.@+*-]+/)+[\w.@+*-]*\.(?:" + _EXT_ALT + r"))"
    r"(?![\w-])",
)
_TOKEN_SPLIT = re.compile(r"[\s'\"=(),;\[\]]+")
_PATHLIKE = re.compile(r"^[\w.@+*~$/{}<>:#-]+$")
_IDENT_CHAIN = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*(?:\(\))?$", re.ASCII)
# group 1: the receiver chain with its final dot ("" for a call on its own), group 2: the name called
_EMPTY_CALL = re.compile(r"(?<![\w.])((?:[A-Za-z_]\w*\.)*)([A-Za-z_]\w*)\(\)", re.ASCII)
_CALL = re.compile(r"(?<![\w.])((?:[A-Za-z_]\w*\.)*)([A-Za-z_]\w*)\(", re.ASCII)
_DEFINITION = re.compile(
    r"\b(def|class|function|func|fn|interface|struct|enum|trait)\s+([A-Za-z_]\w*)(\()?", re.ASCII
)
_DOTTED_CALL = re.compile(r"(?<![\w./])[A-Za-z_][\w.]*\.[A-Za-z_]\w*\(", re.ASCII)
_HUMP = re.compile(r"[a-z0-9][A-Z]")
# "Next.js", "Node.js": framework names, not files.
_FRAMEWORK_JS = re.compile(r"^[A-Z][A-Za-z0-9]*\.js$")
# `.test.ts`, `.module.css`, `.d.ts`: the suffix a kind of file is named by, as the glob `*.test.ts`
# names it (`.tsx`/`.test.ts` files), never one file. A dotfile's own name (`.eslintrc.json`) is one.
_KIND_SUFFIXES = frozenset("test spec module d stories story min e2e bench".split())
# `process.env`, `res.json`, `os.environ`, `sys.path`: an attribute of a runtime object, not a file,
# though the last part may look like an extension. (`config.json`, `app.py` stay files.)
_RUNTIME_OBJECTS = frozenset(
    """process import meta os sys window document globalThis self this module exports require console
    Deno Bun Math JSON Object Array Promise req res request response ctx context event err error""".split()
)


# A framework's vocabulary, as grammars of closed families (the APIs' own names, not words seen in
# memories): test runners' globals, matchers (`toBe...`, `expect.objectContaining`) and mock helpers
# (vitest's `vi.*` and jest's `jest.*`, a mock's `mock...` methods), Testing Library's queries,
# React's built-in hooks.
_FRAMEWORK_SYMBOL = re.compile(
    r"(?:describe|it|test|expect|beforeEach|afterEach|beforeAll|afterAll|vi|jest"
    r"|to(?:Be|Equal|StrictEqual|Contain|Match|Have|Throw|Resolve|Reject|Satisfy)(?:[A-Z]\w*)?"
    r"|(?:object|array|string)Containing|stringMatching|closeTo|hasAssertions|addSnapshotSerializer"
    r"|spyOn|unmock|doUnmock|doMock|(?:import|require)(?:Actual|Mock)|isMockFunction|(?:clear|reset|restore)AllMocks"
    r"|use(?:Fake|Real)Timers|(?:run|advance)(?:All|Only|OnlyPending)?Timers\w*|clearAllTimers|getTimerCount"
    r"|(?:set|getReal|getMocked)SystemTime|(?:stub|unstubAll)(?:Global|Env)s?|resetModules|isolateModules"
    r"|mock(?:ReturnValue|ResolvedValue|RejectedValue|Implementation)(?:Once)?|mock(?:Clear|Reset|Restore|Name)"
    r"|(?:get|query|find)(?:All)?By(?:Role|Text|LabelText|PlaceholderText|TestId|DisplayValue|AltText|Title)"
    r"|use(?:State|Effect|LayoutEffect|InsertionEffect|Memo|Callback|Ref|Context|Reducer|Transition"
    r"|DeferredValue|Id|ImperativeHandle|SyncExternalStore|DebugValue|Optimistic|ActionState|FormStatus|EffectEvent))",
    re.ASCII,
)


@dataclass(frozen=True)
class Refs:
    files: tuple[str, ...]  # sorted, unique; URLs included (they are always UNVERIFIABLE)
    symbols: tuple[str, ...]  # sorted, unique identifiers


def code_like(name: str) -> bool:
    """An identifier no prose word looks like: snake_case, SCREAMING_SNAKE, camelCase, PascalCase humps."""
    core = name.strip("_")
    if len(core) < 3:
        return False
    return "_" in core or bool(_HUMP.search(core))


def _clean_path(raw: str) -> str:
    ref = raw.strip().rstrip(".,;:!?)]}'\"")
    ref = _LINE_SUFFIX.sub("", ref)
    while ref.startswith("./"):
        ref = ref[2:]
    return ref


def _kind_suffix(token: str) -> bool:
    parts = token.split(".")
    return len(parts) >= 3 and parts[0] == "" and parts[1].lower() in _KIND_SUFFIXES


def _is_bare_file(token: str) -> bool:
    if "/" in token or any(c in token for c in "*?[<>{}") or _kind_suffix(token):
        return False
    stem, dot, ext = token.rpartition(".")
    if stem.split(".", 1)[0] in _RUNTIME_OBJECTS:
        return False
    return bool(stem) and bool(dot) and ext in KNOWN_EXTENSIONS and not _FRAMEWORK_JS.match(token)


def _inline_token_ref(token: str) -> str | None:
    """A path-like token from inline code, or None."""
    token = _clean_path(token)
    if not token or token.startswith("-") or not _PATHLIKE.match(token):
        return None
    if "/" in token:
        return token if any(c.isalnum() for c in token) and not token.startswith("//") else None
    return token if _is_bare_file(token) else None


def framework_symbol(name: str) -> bool:
    """A name any project using a test runner, Testing Library or React contains: no evidence."""
    return bool(_FRAMEWORK_SYMBOL.fullmatch(name))


def _call_symbol(receiver: str, name: str, plain_ok: bool) -> str | None:
    """The symbol a call `receiver.name(` names, or None. `receiver` ends with its dot ("" for a call
    on its own); `plain_ok`: a plain word may count, called on its own. (A framework's own names,
    `vi.spyOn(`, are dropped by name in `extract_refs`, whatever they are called on.)"""
    if code_like(name) or (plain_ok and not receiver and len(name) >= 2):
        return name
    return None


def _symbols_from_inline(code: str) -> set[str]:
    found: set[str] = set()
    code = code.strip()
    if _IDENT_CHAIN.match(code) and not _is_bare_file(code):
        called = code.endswith("()")
        parts = code.removesuffix("()").split(".")
        for part in parts:
            # a plain word counts when called on its own (`run()`), not as a method (`history.back()`)
            if code_like(part) or (called and len(parts) == 1 and len(part) >= 2):
                found.add(part)
        return found
    for m in _CALL.finditer(code):
        name = _call_symbol(m.group(1), m.group(2), plain_ok=False)
        if name:
            found.add(name)
    return found | _symbols_from_prose(code)


def _symbols_from_prose(text: str) -> set[str]:
    found: set[str] = set()
    for m in _EMPTY_CALL.finditer(text):
        name = _call_symbol(m.group(1), m.group(2), plain_ok=True)
        if name:
            found.add(name)
    for m in _DEFINITION.finditer(text):
        keyword, name, paren = m.group(1), m.group(2), m.group(3)
        if code_like(name) or paren or (keyword == "class" and name[0].isupper() and len(name) >= 3):
            found.add(name)
    return found


def extract_refs(text: str) -> Refs:
    files: set[str] = set()
    symbols: set[str] = set()
    for m in _URL.finditer(text):
        files.add(m.group(0).rstrip(".,;:!?"))
    text = _URL.sub(" ", text)
    for m in _PATH.finditer(text):
        ref = _clean_path(m.group(1))
        if ref:
            files.add(ref)
    prose = FENCED_BLOCK.sub("\n", text)
    for m in _INLINE_CODE.finditer(prose):
        code = m.group(1)
        called = {c.group(0)[:-1] for c in _DOTTED_CALL.finditer(code)}
        for token in _TOKEN_SPLIT.split(code):
            inline = _inline_token_ref(token)
            if inline and token not in called:  # `foo.bar()`, `res.json()`: a call, not a file
                files.add(inline)
        symbols |= _symbols_from_inline(code)
    symbols |= _symbols_from_prose(_INLINE_CODE.sub(" ", prose))
    symbols = {s for s in symbols if not framework_symbol(s)}
    return Refs(files=tuple(sorted(files)), symbols=tuple(sorted(symbols)))


def is_url(ref: str) -> bool:
    return bool(re.match(r"^[a-z][a-z0-9+.-]*://", ref, re.IGNORECASE))


def scope(ref: str, top_dirs: frozenset[str] | set[str]) -> tuple[str, str]:
    """(REPO_RELATIVE or UNVERIFIABLE, why) for a file ref, given the repository's top-level folders."""
    if is_url(ref):
        return UNVERIFIABLE, "URL"
    if ref.startswith(("~", "/", "$", "%")):
        return UNVERIFIABLE, "outside the repository"
    if any(c in ref for c in "<>{}"):
        return UNVERIFIABLE, "template placeholder"
    segments = [s for s in ref.split("/") if s]
    if ".." in segments:
        return UNVERIFIABLE, "outside the repository"
    if any(s in UNINDEXED_DIRS for s in segments[:-1]) or (ref.endswith("/") and segments and segments[-1] in UNINDEXED_DIRS):
        return UNVERIFIABLE, "in a folder that is not indexed"
    if "/" in ref and segments and segments[0] not in top_dirs:
        return UNVERIFIABLE, f"no top-level folder {segments[0]!r} in the repository"
    return REPO_RELATIVE, ""
