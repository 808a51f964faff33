"""`crux` layout (CRUX memories): `.crux/crux-memories.json`, `memories/{type}/*.memory[.crux].md`.

Agent-scoped memories live in `{agentMemoriesDir}/<agent>/<type>/`. A `.memory.md` and a
`.memory.crux.md` with the same slug in the same folder are one memory: the compressed file is the
live one (it is what the store's own index lists), the other is its twin. Reference trackers are
`{trackingDir}/<slug>.refs.yml`; the index is `storage.indexFile`.

The real store's quirks are handled here, not reported: `flags` as a list of one-key objects,
`${flags.x}` placeholders, `id` missing, `reducedBy: 69%` unquoted, snake_case `consolidated_from`
beside camelCase keys, blank lines inside front matter, originals beside compressed twins, merged
members still present.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Callable, Collection, Iterable, Mapping

from pydantic import ValidationError

from ...text.lines import line_count
from ...text.yaml_load import safe_load
from ...kinds import FindingKind
from ...config import CruxConfig, Settings, store_relative
from ...errors import ConfigError, UsageError
from ...journal import ABSENT
from ...storage.since_plan import listing_key, listing_state
from ...model import Corpus, Finding, IndexEntry, Memory, Tracker
from .members import ARCHIVED_COPY, DECLARED_TYPE, absorbed, effective_type, link_merged_members
from ...storage.files import (
    SKIP_DIRS,
    YAML_ERRORS,
    Unreadable,
    as_date,
    as_int,
    as_tags,
    decode_text,
    expands_within,
    memory_from_bytes,
    mtime_of,
    parse_error,
    read_memory_file,
    read_text,
    read_text_sha,
    rel,
    walk_files,
)

LAYOUT = "crux"
CONFIG_FILE = ".crux/crux-memories.json"
CRUX_SUFFIX = ".memory.crux.md"
PLAIN_SUFFIX = ".memory.md"
MEMORY_SUFFIXES = (CRUX_SUFFIX, PLAIN_SUFFIX)
TRACKER_SUFFIX = ".refs.yml"
DEFAULT_WORK_DIR = "specs"
DEFAULT_UNIT_OF_WORK = "spec"
KNOWN_FLAGS = ("enableMemories", "enableMemoryCompression", "enableMemoryConsolidation")
# The `cruxMemories` keys that repeat a flag through a placeholder ("enabled": "${flags.enableMemories}").
FLAG_ALIASES = {"enableMemories": "enabled", "enableMemoryCompression": "compression",
                "enableMemoryConsolidation": "consolidation"}
_PLACEHOLDER = re.compile(r"\$\{flags\.([A-Za-z0-9_.-]+)\}")
# Greedy, trailing blanks stripped in code: a lazy group before `[ \t]*$` is quadratic in a run of blanks.
_ID_LINE = re.compile(r"^id:[ \t]*(.*)$", re.MULTILINE)
_MISSING = object()


def detect(root: Path) -> bool:
    return (root / CONFIG_FILE).is_file()


# ------------------------------------------------------------------------------------------------
# config


@dataclass
class StoreConfig:
    """What the adapter needs beyond `CruxConfig`: where units of work live, for stale sources."""

    crux: CruxConfig
    work_dir: str = DEFAULT_WORK_DIR
    unit_of_work: str = DEFAULT_UNIT_OF_WORK
    flags: dict[str, Any] = field(default_factory=dict)


def _fail(message: str) -> ConfigError:
    return ConfigError(f"{CONFIG_FILE}: {message}")


def _as_bool(value: Any) -> Any:
    """"true"/"false" strings as booleans (the real config quotes them); anything else unchanged."""
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return value


def read_flags(raw: Any) -> dict[str, Any]:
    """`flags` as a dict, whether the file writes an object or a list of one-key objects."""
    if raw is None:
        return {}
    pairs: list[tuple[Any, Any]] = []
    if isinstance(raw, dict):
        pairs = list(raw.items())
    elif isinstance(raw, list):
        for i, item in enumerate(raw):
            if not isinstance(item, dict):
                raise _fail(f'flags[{i}] must be an object like {{"enableMemories": "true"}}')
            pairs.extend(item.items())
    else:
        raise _fail("flags must be an object or a list of one-key objects")
    flags = {str(k): _as_bool(v) for k, v in pairs}
    for name in KNOWN_FLAGS:
        if name in flags and not isinstance(flags[name], bool):
            raise _fail(f'flags.{name} must be "true" or "false", not {flags[name]!r}')
    return flags


def resolve_placeholders(value: Any, flags: dict[str, Any]) -> Any:
    """Replace `${flags.x}` everywhere; a whole-string placeholder takes the flag's value itself.

    A placeholder naming a flag the file does not set resolves to None (absent), never to the text.
    """
    if isinstance(value, str):
        whole = _PLACEHOLDER.fullmatch(value.strip())
        if whole:
            return flags.get(whole.group(1))

        def text(m: re.Match[str]) -> str:
            v = flags.get(m.group(1))
            return "" if v is None else (str(v).lower() if isinstance(v, bool) else str(v))

        return _PLACEHOLDER.sub(text, value)
    if isinstance(value, dict):
        return {k: resolve_placeholders(v, flags) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve_placeholders(v, flags) for v in value]
    return value


def _section(parent: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    value = parent.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _fail(f"{where} must be an object")
    return value


def _switch(flags: dict[str, Any], section: dict[str, Any], flag: str) -> bool | None:
    """A feature switch: the flag when present, else the `cruxMemories` alias, else None (absent)."""
    if flag in flags:
        return flags[flag]
    alias = _as_bool(section.get(FLAG_ALIASES[flag]))
    if alias is None:
        return None
    if not isinstance(alias, bool):
        raise _fail(f'cruxMemories.{FLAG_ALIASES[flag]} must be "true" or "false", not {alias!r}')
    return alias


def _relative_dir(value: Any, where: str) -> str:
    """A store-relative folder; absolute paths and `..` would let the reader leave the store."""
    if not isinstance(value, str) or not value.strip():
        raise _fail(f"{where} must be a non-empty string")
    try:
        return store_relative(value)  # the rule every path setting keeps, from any config
    except ValueError:
        raise _fail(f"{where} must be a folder inside the store, not {value!r}") from None


# Where each CruxConfig field sits in the file, for error messages and reading.
_TOP_LEVEL_FIELDS = (
    "typePriority", "typeTransitions", "demoteAfterDaysUnreferenced", "archiveAfterDaysUnreferenced",
    "sizeUnit", "compressionMinLines", "maxMemorySize", "maxConsolidatedSize", "compressionTarget",
)
_TRACKING_FIELDS = ("trackingDir", "promotionToRuleThreshold", "maxReferencesStored")
_COUNT_FIELDS = (
    "demoteAfterDaysUnreferenced", "archiveAfterDaysUnreferenced", "promotionToRuleThreshold",
    "maxReferencesStored", "compressionMinLines", "maxMemorySize", "maxConsolidatedSize", "compressionTarget",
)


def _where(name: str) -> str:
    if name in _TRACKING_FIELDS:
        return f"cruxMemories.referenceTracking.{name}"
    if name == "storage" or name in _TOP_LEVEL_FIELDS:
        return f"cruxMemories.{name}"
    return name


def parse_config(data: Any, base: CruxConfig) -> StoreConfig:
    """The store config from the file's JSON value; values verbatim, `base` for what it omits."""
    if not isinstance(data, dict):
        raise _fail("must be a JSON object")
    flags = read_flags(data.get("flags"))
    cm = resolve_placeholders(_section(data, "cruxMemories", "cruxMemories"), flags)

    enabled = _switch(flags, cm, "enableMemories")
    if enabled is False:
        source = "flags.enableMemories" if "enableMemories" in flags else "cruxMemories.enabled"
        raise UsageError(f"memories are disabled by {source} in {CONFIG_FILE}")

    update: dict[str, Any] = {
        "enableMemories": True,
        "enableMemoryCompression": bool(_switch(flags, cm, "enableMemoryCompression")),
        "enableMemoryConsolidation": bool(_switch(flags, cm, "enableMemoryConsolidation")),
    }
    storage = _section(cm, "storage", "cruxMemories.storage")
    merged_storage = base.storage.model_dump()
    for key in merged_storage:
        if key in storage:
            merged_storage[key] = _relative_dir(storage[key], f"cruxMemories.storage.{key}")
    update["storage"] = merged_storage
    tracking = _section(cm, "referenceTracking", "cruxMemories.referenceTracking")
    for key in _TRACKING_FIELDS:
        if key in tracking:
            update[key] = tracking[key]
    for key in _TOP_LEVEL_FIELDS:
        if key in cm:
            update[key] = cm[key]
    if "trackingDir" in update:
        update["trackingDir"] = _relative_dir(update["trackingDir"], _where("trackingDir"))
    for key in _COUNT_FIELDS:
        value = update.get(key, _MISSING)
        if value is _MISSING:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise _fail(f"{_where(key)} must be a whole number ≥ 0, not {value!r}")
    if "typeTransitions" in update:
        transitions = update["typeTransitions"]
        if not isinstance(transitions, dict) or not all(isinstance(v, dict) for v in transitions.values()):
            raise _fail('cruxMemories.typeTransitions must map each type to {"promoteAt": n, "promoteTo": type}')
        for name, t in transitions.items():
            at = t.get("promoteAt")
            if at is not None and (isinstance(at, bool) or not isinstance(at, int) or at < 0):
                raise _fail(f"cruxMemories.typeTransitions.{name}.promoteAt must be a whole number or null, not {at!r}")
    try:
        crux = CruxConfig.model_validate({**base.model_dump(), **update})
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = [str(x) for x in first["loc"]]
        where = ".".join([_where(loc[0]), *loc[1:]]) if loc else "cruxMemories"
        raise _fail(f"{where}: {first['msg']}") from None

    dream = _section(cm, "dream", "cruxMemories.dream")
    work_dir = _relative_dir(dream["workDir"], "cruxMemories.dream.workDir") if "workDir" in dream else DEFAULT_WORK_DIR
    unit = cm.get("unitOfWork", DEFAULT_UNIT_OF_WORK)
    if not isinstance(unit, str) or not unit.strip():
        raise _fail("cruxMemories.unitOfWork must be a non-empty string")
    return StoreConfig(crux=crux, work_dir=work_dir, unit_of_work=unit.strip(), flags=flags)


def read_config(root: Path, settings: Settings) -> StoreConfig:
    path = root / CONFIG_FILE
    try:
        text = read_text(root, path, settings.max_file_bytes)
    except Unreadable as exc:
        raise ConfigError(f"cannot read {CONFIG_FILE}: {exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{CONFIG_FILE} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except (ValueError, RecursionError) as exc:  # a 5000-digit number, nesting deeper than the stack
        raise ConfigError(f"{CONFIG_FILE} is not usable JSON: {type(exc).__name__}") from None
    return parse_config(data, settings.crux)


def configure(root: Path, settings: Settings) -> Settings:
    return settings.model_copy(update={"crux": read_config(root, settings).crux})


# ------------------------------------------------------------------------------------------------
# memories


@dataclass
class Parsed:
    key: str
    meta: dict[str, Any]
    present: bool
    body: str
    raw: str
    mtime: float | None
    sha: str = ""


# The store's files as bytes, by key, when the reader reads from memory instead of the disk: the
# writer's view of the store as it will be after its run (`crux_after`).
Files = Mapping[str, bytes]


def slug_of(name: str) -> str:
    """A memory file's name without its memory suffix: the slug its tracker is keyed by."""
    for suffix in MEMORY_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def twin_path(path: str) -> str:
    """The path the other file of a twin pair (`x.memory.md`, `x.memory.crux.md`) would have."""
    if path.endswith(CRUX_SUFFIX):
        return path.removesuffix(CRUX_SUFFIX) + PLAIN_SUFFIX
    return path.removesuffix(PLAIN_SUFFIX) + CRUX_SUFFIX


def _parse(root: Path, key: str, settings: Settings, corpus: Corpus, files: Files | None) -> Parsed | None:
    if files is None:
        fm = read_memory_file(root, root / key, settings.max_file_bytes, corpus.findings)
        mtime = mtime_of(root / key)
    else:
        fm = memory_from_bytes(key, files[key], settings.max_file_bytes, corpus.findings)
        mtime = None
    if fm is None:
        return None
    return Parsed(key=key, meta=fm.meta, present=fm.present, body=fm.body, raw=fm.raw, mtime=mtime, sha=fm.sha)


def body_size(body: str, unit: str) -> int:
    """Body size in the store's `sizeUnit`; tokens are estimated at four characters each."""
    if unit == "bytes":
        return len(body.encode("utf-8"))
    if unit == "tokens":
        return math.ceil(len(body) / 4)
    return line_count(body)


def _memory_id(parsed: Parsed) -> str | None:
    """The id as written: YAML turns an unquoted `0123456` into a number, so re-read the raw text."""
    value = parsed.meta.get("id")
    if value is None:
        return None
    if isinstance(value, str):
        return value.strip() or None
    m = _ID_LINE.search(parsed.raw)
    if not m:
        return str(value)
    # A non-string scalar cannot contain " #", so what follows one is a YAML comment, not the id.
    return m.group(1).split(" #", 1)[0].split("\t#", 1)[0].rstrip(" \t").strip("\"'")


def _text(value: Any) -> str:
    return "" if value is None else str(value).strip()


def _id_list(value: Any) -> list[str]:
    if isinstance(value, list):
        return [str(v).strip() for v in value if str(v).strip()]
    if isinstance(value, str) and value.strip():
        return as_tags(value)
    return []


@dataclass
class Place:
    scope: str  # "base" or "agent"
    agent: str | None
    folder_type: str | None


def place_of(key: str, crux: CruxConfig) -> Place:
    """Scope and type folder from a memory's path (the seed's "resolve scope" step)."""
    parts = PurePosixPath(key).parts
    agents = PurePosixPath(crux.storage.agentMemoriesDir).parts
    if len(parts) > len(agents) + 1 and parts[: len(agents)] == agents:
        rest = parts[len(agents) :]
        return Place("agent", rest[0], rest[1] if len(rest) >= 3 else None)
    base = PurePosixPath(crux.storage.memoriesDir).parts
    rest = parts[len(base) :] if parts[: len(base)] == base else parts
    return Place("base", None, rest[0] if len(rest) >= 2 else None)


def _to_memory(primary: Parsed, twin: Parsed | None, twin_key: str | None, settings: Settings) -> Memory:
    crux = settings.crux
    meta = primary.meta
    where = place_of(primary.key, crux)
    declared = meta.get("type")
    mtype = declared.strip() if isinstance(declared, str) and declared.strip() else where.folder_type
    extra: dict[str, Any] = {
        "scope": where.scope,
        "agent": where.agent,
        "folder_type": where.folder_type,
        DECLARED_TYPE: mtype,  # the `type_mismatch` finding and `is_archived` read the field itself
        "twin": twin_key,
        "compressed": primary.key.endswith(CRUX_SUFFIX) or meta.get("compressed") is True,
        "tracker": None,
        "size": body_size(primary.body, crux.sizeUnit),
        "lines": line_count(primary.body),
        "consolidated_from": _id_list(meta.get("consolidated_from", meta.get("consolidatedFrom"))),
        "consolidation_topic": _text(meta.get("consolidation_topic", meta.get("consolidationTopic"))) or None,
        "consolidation_part": as_int(meta.get("consolidation_part", meta.get("consolidationPart"))),
    }
    read_shas = {primary.key: primary.sha}
    if twin is not None:
        # The uncompressed original: what a consolidation or recompression starts from.
        extra["twin_body"] = twin.body
        extra["twin_lines"] = line_count(twin.body)
        read_shas[twin.key] = twin.sha
    return Memory(
        key=primary.key,
        layout="crux",
        id=_memory_id(primary),
        title=_text(meta.get("title")),
        description=_text(meta.get("description")),
        body=primary.body,
        # The type every consumer reads: the folder's where the field disagrees (`members.type_of`).
        type=effective_type(mtype, where.folder_type, crux),
        tags=as_tags(meta.get("tags")),
        strength=as_int(meta.get("strength")),
        created=as_date(meta.get("created")),
        modified=as_date(meta.get("modified")),
        mtime=primary.mtime,
        source=_text(meta.get("source")) or None,
        group="base" if where.scope == "base" else f"agent:{where.agent}",
        meta=dict(meta),
        has_frontmatter=primary.present,
        extra=extra,
        read_shas=read_shas,
    )


def memory_folders(crux: CruxConfig) -> list[str]:
    """The folders memories are read from: memoriesDir and agentMemoriesDir (once when they are one)."""
    return list(dict.fromkeys((crux.storage.memoriesDir, crux.storage.agentMemoriesDir)))


def _names_under(folder: Path, paths: Iterable[Path]) -> list[str]:
    return [p.relative_to(folder).as_posix() for p in paths]


@dataclass
class MemoryFolders:
    """One walk of each folder memories are read from (`memory_folders`): the files a load reads and
    reports, each folder's listing a rebuild is judged on, and the symlinked folders not followed."""

    root: Path
    walked: dict[str, list[Path]]  # folder -> the memory files `walk_files` finds under it
    not_followed: list[Path]

    def files(self) -> list[Path]:
        """Every memory file, once (agentMemoriesDir usually lies inside memoriesDir), sorted by key."""
        found: dict[str, Path] = {}
        for paths in self.walked.values():
            for path in paths:
                found.setdefault(rel(self.root, path), path)
        return [found[k] for k in sorted(found)]

    def listings(self) -> dict[str, str]:
        """Each folder (`listing_key`) -> the state of its listing: which files the rebuilt index
        lists, so one added or removed since the plan is a change of what a rebuild does. The names
        are `memory_names`', the writer's lister's, for the same walk."""
        return {listing_key(folder): listing_state(_names_under(self.root / folder, paths))
                for folder, paths in self.walked.items()}


def walk_memory_folders(root: Path, crux: CruxConfig) -> MemoryFolders:
    not_followed: list[Path] = []
    walked = {folder: list(walk_files(root, root / folder, MEMORY_SUFFIXES, not_followed)) for folder in memory_folders(crux)}
    return MemoryFolders(root, walked, not_followed)


def memory_files(root: Path, crux: CruxConfig) -> list[Path]:
    """Every `*.memory.md` / `*.memory.crux.md` under memoriesDir and agentMemoriesDir, sorted."""
    return walk_memory_folders(root, crux).files()


def memory_names(folder: Path) -> list[str]:
    """The memory files under `folder` (as `walk_memory_folders` walks it), relative to it: the
    listing a rebuild of the index is judged on (`listing_state`; the writer's `DiskReads` lister)."""
    return _names_under(folder, walk_files(folder, folder, MEMORY_SUFFIXES))


def under(path: str, folder: str) -> bool:
    return folder in (".", "") or PurePosixPath(folder) in PurePosixPath(path).parents


def keys_in(files: Files, folders: list[str], suffixes: tuple[str, ...]) -> list[str]:
    """The keys `walk_files` would find under `folders` if `files` were the disk."""
    out: set[str] = set()
    for key in files:
        if not key.endswith(suffixes):
            continue
        for folder in folders:
            below = PurePosixPath(key).parts[len(PurePosixPath(folder).parts) : -1]
            if under(key, folder) and not SKIP_DIRS & set(below):
                out.add(key)
    return sorted(out)


def memory_keys_in(files: Files, crux: CruxConfig) -> list[str]:
    """The memory files `walk_memory_folders` would find if `files` were the disk."""
    return keys_in(files, memory_folders(crux), MEMORY_SUFFIXES)


def load_memories(root: Path, settings: Settings, corpus: Corpus, keys: list[str], files: Files | None = None,
                  archive: Callable[[], Files] | None = None) -> list[str]:
    """Read the memory files `keys` into `corpus.memories`; returns the primary file keys. `keys`: the
    files on disk (`walk_memory_folders`), or in `files`, when given (`memory_keys_in`): then
    nothing is read from the disk. `archive`, when given, gives the files to look for archived
    copies in instead of `files` (`archived_copies`); like the disk's, it is asked for only when a
    memory lists members (`consolidated_from`)."""
    pairs: dict[tuple[str, str], dict[str, str]] = {}
    for key in keys:
        p = PurePosixPath(key)
        kind = "crux" if p.name.endswith(CRUX_SUFFIX) else "plain"
        pairs.setdefault((p.parent.as_posix(), slug_of(p.name)), {})[kind] = key
    primaries: list[str] = []
    for _, pair in sorted(pairs.items()):
        crux_key, plain_key = pair.get("crux"), pair.get("plain")
        crux_doc = _parse(root, crux_key, settings, corpus, files) if crux_key else None
        plain_doc = _parse(root, plain_key, settings, corpus, files) if plain_key else None
        primary = crux_key or plain_key
        assert primary is not None
        primaries.append(primary)
        if crux_doc is not None:
            corpus.memories.append(_to_memory(crux_doc, plain_doc, plain_key, settings))
        elif plain_doc is not None:
            # The compressed file is unreadable (reported): the original still carries the memory.
            corpus.memories.append(_to_memory(plain_doc, None, crux_key, settings))
    corpus.memories.sort(key=lambda m: m.key)
    holders = any(m.extra["consolidated_from"] for m in corpus.memories)
    copies = archived_copies(root, settings, archive() if archive else files) if holders else []
    link_merged_members(corpus.memories, copies)
    return sorted(primaries)


def archive_is_apart(crux: CruxConfig) -> bool:
    """Whether `compressionSourceArchive` is a folder of its own, not (inside) a working folder
    (whose files are read as memories already)."""
    folder = crux.storage.compressionSourceArchive
    working = (crux.storage.memoriesDir, crux.storage.agentMemoriesDir)
    return folder not in (".", "") and not any(folder == w or under(folder, w) for w in working)


def archived_copies(root: Path, settings: Settings, files: Files | None = None) -> list[Memory]:
    """The memory files in `compressionSourceArchive` (members of finished consolidations, sources of
    compressions), read only for the names they answer to (`members.py`): a name an archived member
    answers to links no live memory. What cannot be read is passed over (it names nothing)."""
    crux = settings.crux
    if not archive_is_apart(crux):
        return []
    folder = crux.storage.compressionSourceArchive
    if files is None:
        keys = [rel(root, p) for p in walk_files(root, root / folder, MEMORY_SUFFIXES)]
    else:
        keys = keys_in(files, [folder], MEMORY_SUFFIXES)
    scratch = Corpus(layout="crux", root=str(root))  # its findings: not the store's to report
    out = []
    for key in keys:
        parsed = _parse(root, key, settings, scratch, files)
        if parsed is not None:
            out.append(Memory(key=key, layout="crux", id=_memory_id(parsed), title=_text(parsed.meta.get("title")),
                              extra={ARCHIVED_COPY: True, "sha": parsed.sha}))
    return out


def index_keys(memories: list[Memory], primaries: list[str], listed: Collection[str]) -> list[str]:
    """The primary files the index should list: every one, but a member a live consolidation already
    holds (`members.py`) only when the index lists it. About such a member the owner's index is left
    as it is: not missing when left out (the seed's consolidation takes it out), not extra when
    listed (it is still a file, and its archive waits for the user), so no rebuild adds or drops it."""
    held = {f for m in memories if absorbed(m) for f in (m.key, m.extra.get("twin")) if f}
    return [k for k in primaries if k not in held or k in listed]


# ------------------------------------------------------------------------------------------------
# trackers and index


def _tracker(key: str, data: dict[str, Any], read_sha: str | None = None) -> Tracker:
    recent = data.get("recent_references")
    return Tracker(
        key=key,
        slug=PurePosixPath(key).name[: -len(TRACKER_SUFFIX)],
        references=as_int(data.get("references")) or 0,
        last_referenced=as_date(data.get("last_referenced")),
        strength=as_int(data.get("strength")),
        recent_references=[r for r in recent if isinstance(r, dict)] if isinstance(recent, list) else [],
        meta={str(k): v for k, v in data.items()},
        read_sha=read_sha,
    )


def _read_yaml(root: Path, key: str, settings: Settings, corpus: Corpus, files: Files | None = None) -> tuple[bool, Any, str]:
    """(parsed, the YAML value, sha256 of the bytes: "" when unreadable) of a store file, from the
    disk or `files`."""
    try:
        if files is None:
            text, digest = read_text_sha(root, root / key, settings.max_file_bytes)
        else:
            data = files[key]
            if len(data) > settings.max_file_bytes:
                raise Unreadable(f"file too large ({len(data)} bytes > {settings.max_file_bytes})")
            text, digest = decode_text(data), hashlib.sha256(data).hexdigest()
    except Unreadable as exc:
        corpus.findings.append(parse_error(key, str(exc)))
        return False, None, ""
    try:
        data = safe_load(text)
    except YAML_ERRORS as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        corpus.findings.append(parse_error(key, f"malformed YAML{where}"))
        return False, None, digest
    if not expands_within(data, len(text)):
        corpus.findings.append(parse_error(key, "malformed YAML: aliases expand too far (alias bomb or self-reference)"))
        return False, None, digest
    return True, data, digest


def load_trackers(root: Path, settings: Settings, corpus: Corpus, files: Files | None = None) -> None:
    folder = settings.crux.trackingDir
    if files is None:
        keys = [rel(root, p) for p in walk_files(root, root / folder, (TRACKER_SUFFIX,))]
    else:
        keys = keys_in(files, [folder], (TRACKER_SUFFIX,))
    for key in keys:
        ok, data, digest = _read_yaml(root, key, settings, corpus, files)
        if not ok:
            continue
        if not isinstance(data, dict):
            corpus.findings.append(parse_error(key, "tracker is not a YAML mapping"))
            continue
        corpus.trackers.append(_tracker(key, data, digest or None))
    corpus.trackers.sort(key=lambda t: t.key)
    by_slug: dict[str, Tracker] = {}
    for t in corpus.trackers:
        by_slug.setdefault(t.slug, t)
    for m in corpus.memories:
        found = by_slug.get(m.slug)
        m.extra["tracker"] = found.key if found else None
        if found is not None and found.read_sha:
            m.read_shas[found.key] = found.read_sha  # its references decide promotions, demotions, merges


def load_index(root: Path, settings: Settings, corpus: Corpus, primaries: list[str]) -> None:
    index = settings.crux.storage.indexFile
    corpus.indexes[index] = primaries
    path = root / index
    corpus.extra["index_present"] = {index: path.is_file()}
    if not path.is_file():
        if not (path.exists() or path.is_symlink()):
            corpus.index_shas[index] = ABSENT  # what a rebuild creating it is judged on: none written since
        return
    ok, data, digest = _read_yaml(root, index, settings, corpus)
    if digest:
        corpus.index_shas[index] = digest  # what a rebuild_index is judged on (plan.with_target_hashes)
    if not ok:
        return
    entries = data.get("memories") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        corpus.findings.append(parse_error(index, "index has no `memories:` list"))
        return
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        target = entry.get("file")
        if not isinstance(target, str) or not target.strip():
            slug = entry.get("slug")
            target = f"(entry without file: {slug})" if slug else "(entry without file)"
        corpus.index_entries.append(
            IndexEntry(index=index, target=target.strip(), title=_text(entry.get("title")), hook=_text(entry.get("description")))
        )


def _units_present(root: Path, folders: list[str]) -> list[str]:
    """Names of the units of work (spec folders or files) in the work dir and its archive."""
    names: set[str] = set()
    for folder in folders:
        try:
            names.update(p.name for p in (root / folder).iterdir())
        except OSError:
            continue
    return sorted(names)


def load(root: Path, settings: Settings) -> Corpus:
    store = read_config(root, settings)
    corpus = Corpus(layout="crux", root=str(root))
    folders = walk_memory_folders(root, settings.crux)  # once: what is read, reported and indexed
    on_disk = [rel(root, p) for p in folders.files()]
    primaries = load_memories(root, settings, corpus, on_disk)
    load_trackers(root, settings, corpus)
    load_index(root, settings, corpus, primaries)
    index = settings.crux.storage.indexFile
    listed = {e.target for e in corpus.index_entries if e.index == index}
    corpus.indexes[index] = index_keys(corpus.memories, primaries, listed)
    corpus.index_shas.update(folders.listings())  # what a rebuild_index indexes (CruxLayout.depends_on)
    links = sorted(set(folders.not_followed))
    for link in links:  # said: a type folder linked elsewhere is not silently a smaller store
        corpus.findings.append(Finding(kind=FindingKind.SYMLINK_SKIPPED, targets=[rel(root, link)],
                                       reason="a symlinked folder: not followed (its memories are not read, nothing is moved into it)"))
    failed = {t for f in corpus.findings if f.kind == FindingKind.PARSE_ERROR for t in f.targets}
    work_dir_exists = (root / store.work_dir).is_dir()
    corpus.extra["crux"] = {
        "config_file": CONFIG_FILE,
        "work_dir": store.work_dir,
        "work_dir_exists": work_dir_exists,
        "archive_dir": settings.crux.storage.archiveDir,
        "unit_of_work": store.unit_of_work,
        # Executed units move from the work dir to archiveDir: either place means the source exists.
        "units": _units_present(root, [store.work_dir, settings.crux.storage.archiveDir]) if work_dir_exists else [],
        "memory_files": on_disk,
        "unreadable": sorted(k for k in on_disk if k in failed),
        # The symlinked folders not followed whose memories are read nowhere else (a link to a memory
        # folder the walk reads by its real path is only another name for it): a tracker may belong
        # to a memory behind one of these (rules.consistency.orphan_trackers).
        "unread_folders": _unread(root, links, settings.crux),
    }
    return corpus


def _unread(root: Path, links: list[Path], crux: CruxConfig) -> list[str]:
    """Of the symlinked folders not followed, those pointing nowhere inside a memory folder the walk
    reads (a link to one is only another name for it), as keys."""
    if not links:
        return []
    read = [(root / f).resolve() for f in memory_folders(crux)]

    def elsewhere(link: Path) -> bool:
        try:
            target = link.resolve(strict=True)
        except (OSError, RuntimeError):
            return False
        return any(target.is_relative_to(folder) for folder in read)

    return [rel(root, link) for link in links if not elsewhere(link)]
