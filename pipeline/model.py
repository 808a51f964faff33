"""Typed records shared by every part of the pipeline.

A store adapter turns files into a `Corpus`; rules and stages turn a `Corpus` into `Action`s and
`Finding`s; `plan.py` collects them into a `Plan` whose JSON form is the contract in DESIGN.md.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from typing import Any, Callable, Protocol, cast

from pydantic import BaseModel, ConfigDict, Field
from pydantic.fields import FieldInfo

# Re-exported: `Action` and `Finding` (and their payload classes) live in `actions.py`.
from .actions import Action as Action, AnyAction, AnyFinding, Finding as Finding

# A layout's name: one of the registry's (`pipeline.layouts.registry`), built-in or third-party.
LayoutName = str
PLAN_SCHEMA = "memconsolidate.plan/1"


class ReadOnlyDict(dict[Any, Any]):
    """A dict that refuses every change (TypeError): one object shared by many memories (a bank's
    empty `meta` and `read_shas`, its records' equal `extra`), which a write through one of them
    must never change for the others. Replace the field (an assignment) instead of mutating it.
    Equal to, dumped and shown as the plain dict it holds; copied and pickled as one."""

    __slots__ = ()

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("a shared read-only dict: assign a new one instead")

    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (dict(self),))


class ReadOnlyList(list[Any]):
    """`ReadOnlyDict`'s list: a list that refuses every change (TypeError)."""

    __slots__ = ()

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("a shared read-only list: assign a new one instead")

    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    append = extend = insert = pop = remove = clear = sort = reverse = _refuse

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (list(self),))


class Memory(BaseModel):
    """One memory: a file (crux, claude), an entry or tier file (zylos), or a record (bank)."""

    model_config = ConfigDict(frozen=False)

    key: str  # POSIX path relative to the store root, or "<bank>/<id>" for banks
    layout: LayoutName
    # What the memory says. `body` is the text the rules compare; for files it is the bytes after
    # the front matter, decoded, untouched.
    title: str = ""
    description: str = ""
    body: str = ""
    # What the memory is: crux type (idea, learning, ...), claude type (user, feedback, ...),
    # zylos tier (identity, state, reference, session, ...). None when the store does not say.
    type: str | None = None
    tags: list[str] = Field(default_factory=list)
    strength: int | None = None
    corroboration: int = 0
    pinned: bool = False
    created: dt.date | None = None
    modified: dt.date | None = None
    mtime: float | None = None  # file modification time (seconds since the epoch)
    source: str | None = None
    id: str | None = None
    # Memories are only compared with others in the same group: a claude folder, a bank, a crux
    # scope, the zylos store.
    group: str = ""
    # Front matter exactly as read: key order and unknown keys kept so a rewrite changes only what
    # it means to. Empty for files without front matter and for bank records.
    meta: dict[str, Any] = Field(default_factory=dict)
    has_frontmatter: bool = False
    # Layout specifics that rules read (crux scope and twin, zylos importance and status, ...).
    extra: dict[str, Any] = Field(default_factory=dict)
    # sha256 of what the reader built this memory from, by key: each file's bytes (a crux memory's
    # twin and tracker too, a zylos entry's whole file), a bank record's canonical JSON. The plan
    # hands them to the actions (`target_hashes`) so apply never acts on content it did not judge.
    # Empty until the plan is made for a bank's memories: their reader defers them (`defer_read_shas`;
    # `settle_read_shas` sets them), so read them only through a plan's `target_hashes`.
    read_shas: dict[str, str] = Field(default_factory=dict)

    @classmethod
    def trusted(cls, **values: Any) -> Memory:
        """A memory from values its reader has already checked (each of its field's type), unvalidated.

        The bulk path of a big store (a bank of 200k records), where validating costs as much as
        parsing the record and each validated memory carries its own field dict and fields-set. Here
        the fields are set one by one in declaration order into a bare instance's own dict, so CPython
        shares one key table among all such memories; the fields-set is one set for all of them that names every
        field, so an assignment (pydantic adds the field's name to it) never changes it. A field not
        given takes its default. Equal to `Memory(**values)` (tests/test_bench.py pins it).
        """
        m = cls.__new__(cls)
        fields = m.__dict__
        for name, default in _MEMORY_DEFAULTS:  # a required field not given: KeyError
            fields[name] = values[name] if default is None or name in values else default()
        # Its place taken in every trusted memory, deferred or not: CPython shares one key table among
        # the memories only while each adds its keys in the same order, and a key added in another (a
        # memo first) would give every memory a full dict of its own, several times the size.
        fields[_DEFERRED_SHAS] = None
        return _with_base_slots(m)

    @classmethod
    def template(cls, read_shas_from: ReadShaSource | None = None, **values: Any) -> dict[str, Any]:
        """The fields of `Memory.trusted(**values)` as a dict to copy, fill in and `adopt`, for a
        reader that makes many memories alike but for some fields: one `dict.copy` (C, and the copy
        shares the template's key table) and a store per field that differs cost a third of a call
        with keyword arguments. With `read_shas_from`, every memory made of it defers its read
        hashes to that source (`defer_read_shas`).

        The template's containers are shared by every copy: a field whose default is a new
        container (tags, meta, extra, read_shas) must be given a read-only one here or set in
        each copy."""
        m = cls.trusted(**values)
        if read_shas_from is not None:
            defer_read_shas(m, read_shas_from)
        return m.__dict__

    @classmethod
    def adopt(cls, fields: dict[str, Any]) -> Memory:
        """The memory whose fields are `fields`, unvalidated: a copy of a `template` with values
        replaced (no key added or removed), each already of its field's type."""
        m = cls.__new__(cls)
        object.__setattr__(m, "__dict__", fields)
        return _with_base_slots(m)

    @property
    def slug(self) -> str:
        """File name without its memory suffixes: the crux tracker key, the claude index target."""
        name = self.key.rsplit("/", 1)[-1]
        for suffix in (".memory.crux.md", ".memory.md", ".md", ".jsonl"):
            if name.endswith(suffix):
                return name[: -len(suffix)]
        return name

    @property
    def label(self) -> str:
        return self.title or self.slug


# --- read hashes a reader deferred -------------------------------------------------------------
# The bulk path of a big bank: the canonical JSON a record's hash is taken of costs as much to build
# as parsing the record, and a plan needs the hashes of its actions' targets only. So the reader may
# leave `read_shas` empty and, beside the fields (a key of the memory's `__dict__`, which pydantic's
# dumps, equality and repr ignore), the `ReadShaSource` that computes them from what it read.
_DEFERRED_SHAS = "_deferred_read_shas"


# An entry kept inside a Markdown file (claude: `f/MEMORY.md#api/1`; zylos: `reference/decisions.md#slug`)
# is keyed `<file>.md#<anchor>`. Only a `#` right after `.md` starts the anchor: a folder or a file
# may have one in its name (`.claude/agent-memory/c#-dev/a.md`, `ci#cache.md`), which is no entry.
_ANCHOR = ".md#"


def file_of(key: str) -> str:
    """The file a memory is read from: its key up to an entry's anchor, else the whole key."""
    at = key.find(_ANCHOR)
    return key if at < 0 else key[: at + 3]


def is_entry(key: str) -> bool:
    """Whether the key is of an entry kept inside a file (`<file>.md#<anchor>`), not a file of its own."""
    return _ANCHOR in key


class ReadShaSource(Protocol):
    def read_shas(self, memories: list[Memory]) -> dict[str, dict[str, str]]:
        """The `read_shas` of each of these memories (all deferred to this source), by key: exactly
        what the reader would have set. Raises when that can no longer be known (`RunFailed`)."""
        ...


def defer_read_shas(memory: Memory, source: ReadShaSource) -> None:
    memory.__dict__[_DEFERRED_SHAS] = source  # a trusted memory's own place for it (Memory.trusted)


def settle_read_shas(memories: Iterable[Memory]) -> None:
    """Give each of these memories the `read_shas` its reader deferred, one call per source."""
    pending: dict[int, tuple[ReadShaSource, dict[str, Memory]]] = {}
    for m in memories:
        source = m.__dict__.get(_DEFERRED_SHAS)
        if source is not None and not m.read_shas:
            pending.setdefault(id(source), (source, {}))[1][m.key] = m
    for source, by_key in pending.values():
        shas = source.read_shas(list(by_key.values()))
        for key, m in by_key.items():
            m.read_shas = shas[key]


# For `Memory.trusted`: each field with a callable giving its default (None: required), and the
# shared fields-set.
def _default_of(f: FieldInfo) -> Callable[[], Any] | None:
    """A field's default as a function of nothing; None for a required field."""
    if f.is_required():
        return None
    if f.default_factory is not None:
        return cast(Callable[[], Any], f.default_factory)  # Memory's factories take no argument
    value = f.default
    return lambda: value


_MEMORY_DEFAULTS = tuple((name, _default_of(f)) for name, f in Memory.model_fields.items())
_MEMORY_FIELDS = set(Memory.model_fields)
_SET_FIELDS_SET = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_SET_EXTRA = BaseModel.__dict__["__pydantic_extra__"].__set__
_SET_PRIVATE = BaseModel.__dict__["__pydantic_private__"].__set__


def _with_base_slots(m: Memory) -> Memory:
    """An unvalidated memory (`Memory.trusted`, `Memory.adopt`) given BaseModel's own slots: every
    field set (one shared set), no extra, no private. Set through their descriptors: a third of
    `object.__setattr__`'s cost."""
    _SET_FIELDS_SET(m, _MEMORY_FIELDS)
    _SET_EXTRA(m, None)
    _SET_PRIVATE(m, None)
    return m


class Tracker(BaseModel):
    """A crux reference tracker (`.refs.yml`)."""

    key: str  # path relative to the store root
    slug: str
    references: int = 0
    last_referenced: dt.date | None = None
    strength: int | None = None
    recent_references: list[dict[str, Any]] = Field(default_factory=list)
    meta: dict[str, Any] = Field(default_factory=dict)
    read_sha: str | None = None  # sha256 of the file's bytes as read


class IndexEntry(BaseModel):
    """One line of MEMORY.md or one entry of `.crux/memory-index.yml`."""

    index: str  # key of the index file
    target: str  # key of the memory it points at (may not exist)
    title: str = ""
    hook: str = ""


class StageError(BaseModel):
    stage: str
    message: str


class Stats(BaseModel):
    llm_calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0


class Corpus(BaseModel):
    """Everything a store adapter read, ready for the rules. Reading never writes."""

    layout: LayoutName
    root: str  # absolute path
    memories: list[Memory] = Field(default_factory=list)
    trackers: list[Tracker] = Field(default_factory=list)
    index_entries: list[IndexEntry] = Field(default_factory=list)
    # Index files the store should have (key -> the memory keys it should list).
    indexes: dict[str, list[str]] = Field(default_factory=dict)
    # Each index file as read: the sha256 of its bytes, or `absent` (journal.ABSENT) when there was
    # none; and the listing of each folder an index is rebuilt from (`since_plan.listing_key`:
    # `<folder>/` -> `listing_state` of its files' names). What an action on an index, or one editing
    # it, is judged on: the plan hands it to the action (`target_hashes`), so apply never rebuilds an
    # index changed since the plan read it, nor from files added or removed since.
    index_shas: dict[str, str] = Field(default_factory=dict)
    # Problems found while reading: parse errors, config issues. They go straight into the plan.
    findings: list[Finding] = Field(default_factory=list)
    # Layout specifics: the crux config, zylos session files, bank rule files, consult log, ...
    extra: dict[str, Any] = Field(default_factory=dict)

    def by_key(self) -> dict[str, Memory]:
        return {m.key: m for m in self.memories}


class Plan(BaseModel):
    schema_: str = Field(default=PLAN_SCHEMA, alias="schema")
    layout: LayoutName
    root: str
    now: dt.date
    model: str
    memories: int
    # Read back through the unions: each kind's payload class, a misspelled field refused.
    actions: list[AnyAction] = Field(default_factory=list)
    findings: list[AnyFinding] = Field(default_factory=list)
    errors: list[StageError] = Field(default_factory=list)
    stats: Stats = Field(default_factory=Stats)

    model_config = ConfigDict(populate_by_name=True)

    def to_json_dict(self) -> dict[str, Any]:
        """The contract shape: aliases (`schema`, `class`), no empty optional fields, and last in
        each action its `fingerprint` (the code `apply --select N=CODE` checks)."""
        out: dict[str, Any] = {
            "schema": self.schema_,
            "layout": self.layout,
            "root": self.root,
            "now": self.now.isoformat(),
            "model": self.model,
            "memories": self.memories,
            "actions": [a.plan_json() for a in self.actions],
            "findings": [_compact(f.model_dump(by_alias=True, mode="json")) for f in self.findings],
            "errors": [e.model_dump(mode="json") for e in self.errors],
            "stats": self.stats.model_dump(mode="json"),
        }
        return out


def _compact(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}

