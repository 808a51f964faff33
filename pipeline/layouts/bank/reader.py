"""`bank` layout (iii memory): `<root>/<bank>/memories.jsonl`, append-only, last revision wins.

Rules live in `<root>/<bank>/rules/*.md`; `learned.md` is the auto-managed one. The store's own
configuration, if any, is `<root>/memory-consolidate.json` with iii's field names.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import json
import json.encoder
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from pydantic import ValidationError

from ...config import BankConfig, Settings
from ...errors import ConfigError, RunFailed, os_reason
from ...model import Corpus, Finding, Memory, ReadOnlyDict, ReadOnlyList
from ...storage.files import (
    READ_CHUNK, Unreadable, as_date, mtime_of, open_checked, parse_error, read_bytes, read_chunks, read_text, rel,
)
from ...storage.gc_pause import gc_paused

LAYOUT = "bank"
CONFIG_FILE = "memory-consolidate.json"
LEARNED_RULES = "learned.md"
# A learned rule line carries its provenance so a later run neither re-adds nor re-proposes it.
LEARNED_MARK = re.compile(r"<!--\s*mc:fp=(?P<fp>[0-9a-f]+)(?:\s+src=(?P<src>[^\s>]+))?\s*-->")


def bank_dirs(root: Path) -> list[Path]:
    try:
        children = sorted(p for p in root.iterdir() if p.is_dir())
    except OSError:
        return []
    return [p for p in children if (p / "memories.jsonl").is_file()]


def detect(root: Path) -> bool:
    return bool(bank_dirs(root))


def configure(root: Path, settings: Settings) -> Settings:
    path = root / CONFIG_FILE
    if not path.exists():
        return settings
    try:
        # read_text: the size cap and the symlink and file-type checks (a FIFO here blocked forever).
        data = json.loads(read_text(root, path, settings.max_file_bytes))
    except Unreadable as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None
    except (ValueError, RecursionError) as exc:  # RecursionError: nesting deeper than the stack
        raise ConfigError(f"cannot read {path}: {type(exc).__name__}: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path} must be a JSON object")
    try:
        merged = BankConfig.model_validate({**settings.bank.model_dump(), **data})
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ConfigError(f"{path}: {'.'.join(map(str, first['loc']))}: {first['msg']}") from None
    return settings.model_copy(update={"bank": merged})


def read_bank_bytes(root: Path, bank: Path, settings: Settings, corpus: Corpus) -> bytes | None:
    """The bytes of a bank's `memories.jsonl` within the size cap, or None (reported)."""
    try:
        return read_bytes(root, bank / "memories.jsonl", settings.max_file_bytes * 64)
    except Unreadable as exc:
        corpus.findings.append(parse_error(rel(root, bank / "memories.jsonl"), str(exc)))
        return None


def parse_records(key: str, data: bytes, corpus: Corpus) -> dict[str, dict[str, Any]]:
    """The current revision of every id in a bank's bytes (highest `revision`, then latest line),
    already read: a writer builds its revisions on exactly those."""
    latest: dict[str, tuple[int, dict[str, Any]]] = {}
    # Split as the file is read a chunk at a time (a view of the bytes, never a second copy of them).
    for rid, revision, rec, _ in _records(key, _file_lines(io.BytesIO(data), len(data)), corpus):
        # lines come in order, so a later line wins whenever its revision is at least the held one's
        if rid not in latest or revision >= latest[rid][0]:
            latest[rid] = (revision, rec)
    return {rid: rec for rid, (_, rec) in latest.items()}


def _records(key: str, lines: Iterable[bytes], corpus: Corpus) -> Iterator[tuple[str, int, dict[str, Any], int]]:
    """Every record with a usable id, in line order: (id, its revision, the record, its line's byte
    offset in the file).

    `lines` split at b"\n" only, without it (`_file_lines`). Line by line: one bad
    line (a torn write, a stray byte) must not hide the whole bank. One line is decoded at a time, never
    a second copy of the whole file. The lines that are not UTF-8 are reported first, then the other
    bad lines, each in line order (the order of the findings as ever).
    """
    bad: list[Finding] = []
    end = 0
    try:
        for line_no, raw in enumerate(lines, start=1):
            offset, end = end, end + len(raw) + 1  # the b"\n" it was split at
            try:
                line = raw.decode("utf-8-sig" if line_no == 1 else "utf-8")
            except UnicodeDecodeError:
                corpus.findings.append(parse_error(key, f"line {line_no}: not UTF-8"))
                continue
            if not line or line.isspace():  # `not line.strip()`, without copying every line
                continue
            try:
                # json.loads(line), with json's own scanner called directly: a line holding one JSON
                # value then only whitespace is parsed by it alone; any other line (leading
                # whitespace, extra data, not JSON) goes to json.loads itself, for its own answer.
                try:
                    rec, parsed = _SCAN(line, 0)
                except StopIteration:
                    parsed = -1
                if parsed != len(line) and (parsed < 0 or line[parsed:].strip(" \t\n\r")):
                    rec = json.loads(line)
            except (ValueError, RecursionError):  # RecursionError: nesting deeper than the stack
                bad.append(parse_error(key, f"line {line_no}: not valid JSON"))
                continue
            # An id is a string or an int (not a bool); json makes no subclass of either.
            rid = rec.get("id") if type(rec) is dict else None
            if type(rid) is int:
                rid = str(rid)
            elif type(rid) is not str:
                bad.append(parse_error(key, f"line {line_no}: record without an id"))
                continue
            # JSON can escape a lone surrogate; as a key it would break the output. An ASCII id
            # (`isascii` reads a flag, no scan) holds none: only the others are encoded to see.
            if not rid.isascii() and not _valid_unicode(rid):
                bad.append(parse_error(key, f"line {line_no}: id is not valid Unicode"))
                continue
            revision = rec.get("revision")  # what orders an id's records (then the line): -1 when none
            yield rid, revision if type(revision) is int else -1, rec, offset
    finally:
        corpus.findings.extend(bad)


# What json.loads(text) runs: its default decoder's scanner (the C one where CPython has it).
_SCAN = json.decoder.JSONDecoder().scan_once  # type: ignore[attr-defined]  # set in its __init__, untyped

class _ReadHashes:
    """The read hashes of a bank's memories, computed when a plan asks for them (`ReadShaSource`).

    Of the file it keeps how many bytes were read and their sha256 (`_file_lines` takes it as it
    reads), of each memory where its line starts (an int); when asked it hashes those bytes again and
    reads the memories' lines: the same bytes hold the records the plan judged, so their canonical
    hashes are the ones the reader would have taken. Bytes that changed since (the bank was rewritten
    while it was planned) fail the plan: no hash could say what was judged. Bytes appended after
    them (iii appends) change nothing read.
    """

    def __init__(self, root: Path, path: Path, max_bytes: int) -> None:
        self.root, self.path, self.max_bytes = root, path, max_bytes
        self.digest = hashlib.sha256()  # of the bytes read, updated as they are (`_file_lines`)
        self.size = 0
        self.lines: dict[str, int] = {}  # memory key -> its line's byte offset

    def read(self, key: str, offset: int) -> None:
        """Where the newest record of a memory was read (the memory's own key: no second copy). The
        memory defers its hashes to this source (made of `Memory.template(read_shas_from=...)`)."""
        self.lines[key] = offset

    def forget(self, key: str) -> None:
        """The newest record of `key` is retired: no memory, no hash."""
        self.lines.pop(key, None)

    def read_shas(self, memories: list[Memory]) -> dict[str, dict[str, str]]:
        wanted = sorted((self.lines[m.key], m.key) for m in memories)  # read in file order
        out: dict[str, dict[str, str]] = {}
        try:
            with open_checked(self.root, self.path, self.max_bytes) as fh:
                again = hashlib.sha256()
                for chunk in read_chunks(fh, self.size, _CHUNK):
                    again.update(chunk)
                if again.digest() != self.digest.digest():
                    raise Unreadable("changed since it was read")
                for offset, key in wanted:
                    fh.seek(offset)
                    raw = fh.readline(self.size - offset)  # within the bytes just checked: a last line
                    # read before its end was written is read as it was then, whatever came after it
                    out[key] = {key: record_sha(json.loads(raw.decode("utf-8-sig" if offset == 0 else "utf-8")))}
        except (Unreadable, OSError) as exc:
            reason = str(exc) if isinstance(exc, Unreadable) else os_reason(exc, self.root)
            raise RunFailed(f"{rel(self.root, self.path)}: {reason} while the plan was made; plan again") from None
        return out


# What one read of a bank's file takes: big enough that the calls cost nothing beside the parsing,
# small beside the memories made of it.
_CHUNK = READ_CHUNK


def _file_lines(fh: BinaryIO, max_bytes: int, shas: _ReadHashes | None = None) -> Iterator[bytes]:
    """A file's lines as `read_bytes(...).split(b"\n")` gives them, within the same cap, read a chunk at
    a time: past `max_bytes` in all (the file grew since its size was checked), `Unreadable`, as
    `read_bytes`. With `shas`, the bytes read are hashed into it as they come."""
    size = 0
    pending: list[bytes] = []  # the start of a line that goes on in the next chunk
    for chunk in read_chunks(fh, max_bytes + 1, _CHUNK):  # one byte more tells a file past the cap
        size += len(chunk)
        if size > max_bytes:
            raise Unreadable(f"file too large (over {max_bytes} bytes)")
        if shas is not None:
            shas.digest.update(chunk)
            shas.size = size
        lines = chunk.split(b"\n")
        if len(lines) == 1:  # a line longer than the chunk goes on: its pieces joined once, at its end
            pending.append(chunk)
            continue
        if pending:
            pending.append(lines[0])
            lines[0] = _join(pending)
        pending = [lines.pop()]
        yield from lines
    yield _join(pending)


_join = b"".join  # a line's pieces put together (named, so a test can count the bytes joined)


def _read_bank(root: Path, bank: Path, settings: Settings, corpus: Corpus) -> tuple[int, list[Memory]]:
    """`current_memories` of a bank's file, read a chunk at a time: the file's bytes, its decoded text
    and its parsed records are never all held at once, only the memories made of them.

    What it reports is what reading the whole file first reported (`read_bank_bytes`): a file that
    cannot be read, or passes the cap while it is read, is one parse_error and no memory, and the
    findings of the lines read before that are taken back.
    """
    path = bank / "memories.jsonl"
    key = rel(root, path)
    before = len(corpus.findings)
    try:
        with open_checked(root, path, settings.max_file_bytes * 64) as fh, gc_paused(freeze=True):
            # gc_paused: millions of long-lived objects at once, kept for the plan (see storage/gc_pause.py)
            shas = _ReadHashes(root, path, settings.max_file_bytes * 64)
            return current_memories(bank.name, key, _file_lines(fh, settings.max_file_bytes * 64, shas), corpus, shas)
    except Unreadable as exc:
        del corpus.findings[before:]
        corpus.findings.append(parse_error(key, str(exc)))
        return 0, []


def _retired(rec: dict[str, Any]) -> bool:
    return bool(rec.get("superseded_by") or rec.get("invalid_at"))


def current_memories(
    bank: str, key: str, lines: Iterable[bytes], corpus: Corpus, shas: _ReadHashes | None = None,
) -> tuple[int, list[Memory]]:
    """The number of ids in a bank and the memories of its live current records (`parse_records`,
    then `_Pool.memory` of each live one), built as the lines are read.

    Each record is made a memory (or found retired) as soon as it is the newest of its id, so the
    parsed dicts of a big bank are never all held at once: only the one memory per id is. With
    `_file_lines`, neither are the file's bytes. With `shas`, each memory's read hash is left to it,
    computed for the plan's targets only (`model.settle_read_shas`).
    """
    # The order is (revision, line number) and lines come in order, so a later line wins whenever its
    # revision is at least the held one's: only the revision is kept beside each memory.
    latest: dict[str, tuple[int, Memory | None]] = {}
    pool = _Pool(bank, shas)
    make = pool.memory
    for rid, revision, rec, offset in _records(key, lines, corpus):
        held = latest.get(rid)
        if held is None or revision >= held[0]:
            if _retired(rec):  # no memory, no hash
                latest[rid] = (revision, None)
                if shas is not None:
                    shas.forget(pool.key(rid))
                continue
            memory = make(rec, rid)
            if shas is not None:
                shas.read(memory.key, offset)
            latest[rid] = (revision, memory)
    return len(latest), [m for _, m in latest.values() if m is not None]


# A bank memory's containers are read-only and shared (model.ReadOnlyDict): nothing changes a bank
# memory's `meta`, `extra` or an empty `read_shas` in place, and three empty containers and a
# three-key dict for each of 200k memories were a quarter of what a big bank's plan held.
_NO_META: dict[str, Any] = ReadOnlyDict()
_NO_SHAS: dict[str, str] = ReadOnlyDict()
_NO_ENTITIES: list[str] = ReadOnlyList()


class _Pool:
    """Makes a bank's memories, with one object for each distinct date string and tag or source among
    its records (a big bank repeats a few hundred of them, and an equal string or date is
    interchangeable with its copy), and each memory a copy of one template (`Memory.template`)."""

    def __init__(self, bank: str, shas: _ReadHashes | None = None) -> None:
        self.dates: dict[str, dt.date | None] = {}
        self.strings: dict[str, str] = {}
        self.floats: dict[float, float] = {}
        self.extras: dict[tuple[Any, ...], dict[str, Any]] = {}
        self.hashed = shas is None  # no source to defer to: each memory hashes its record when made
        self.bank = bank
        self.template = Memory.template(shas, key="", layout="bank", group=bank, meta=_NO_META, read_shas=_NO_SHAS,
                                        tags=_NO_ENTITIES, extra=_NO_META)

    def memory(self, rec: dict[str, Any], rid: str) -> Memory:
        """The memory of a live record whose id is `rid` (`str(rec["id"])`)."""
        get = rec.get
        fields = self.template.copy()  # every field but those of the template set below
        fields["key"] = key = self.key(rid)
        fields["id"] = rid
        text = get("text")
        if type(text) is str:  # no str subclass comes out of json
            fields["body"] = text
        fields["tags"] = self.tags(get("tags"))
        corroboration = get("corroboration")
        if type(corroboration) is int:  # an int, not a bool
            fields["corroboration"] = corroboration
        if get("pinned") is True:
            fields["pinned"] = True
        created, modified = get("created_at"), get("updated_at")
        if created is not None:
            fields["created"] = self.date(created)
        if modified is not None:
            fields["modified"] = self.date(modified)
        source = get("source")
        if type(source) is str:
            fields["source"] = self.strings.setdefault(source, source)
        revision, entities = get("revision"), get("entities")
        fields["extra"] = self.extra(_scalars(entities) if entities else _NO_ENTITIES,
                                     revision if isinstance(revision, int) else 0, self.number(get("confidence")))
        if self.hashed:
            fields["read_shas"] = {key: record_sha(rec)}
        return Memory.adopt(fields)

    def key(self, rid: str) -> str:
        """The key of the memory of record `rid`: "<bank>/<id>"."""
        return f"{self.bank}/{rid}"

    def tags(self, value: Any) -> list[str]:
        """A record's tags (`_scalars`), each string the pool's; a list of its exact size (one built
        by appending keeps room for three more)."""
        if type(value) is list and len(value) == 1 and type(tag := value[0]) is str:  # most records
            return [self.strings.setdefault(tag, tag)]
        strings = self.strings
        return [strings.setdefault(t, t) for t in _scalars(value)][:]

    def extra(self, entities: list[str], revision: int, confidence: Any) -> dict[str, Any]:
        """A memory's read-only `extra`: one object for every record without entities that has
        the same revision and confidence (an int, a float but 0.0 or NaN, or None: values whose
        equal ones are the same JSON, told apart by type, so 1, 1.0 and True never share one)."""
        if entities or type(revision) is not int or not _poolable(confidence):
            return ReadOnlyDict(entities=ReadOnlyList(entities) if entities else _NO_ENTITIES,
                                revision=revision, confidence=confidence)
        key = (revision, type(confidence), confidence)
        held = self.extras.get(key)
        if held is None:
            held = self.extras[key] = ReadOnlyDict(entities=_NO_ENTITIES, revision=revision, confidence=confidence)
        return held

    def date(self, value: Any) -> dt.date | None:
        if type(value) is not str:
            return as_date(value)
        held = self.dates.get(value, _UNSEEN)
        if held is _UNSEEN:
            held = self.dates[value] = as_date(value)
        return held  # type: ignore[return-value]  # _UNSEEN replaced just above

    def number(self, value: Any) -> Any:
        """One float object per value (a confidence of 0.8 on every record). Not 0.0, which equals
        -0.0 but is not the same JSON, nor NaN, which equals nothing; anything else as it is."""
        if type(value) is float and value and value == value:
            return self.floats.setdefault(value, value)
        return value


_UNSEEN = object()


def _poolable(value: Any) -> bool:
    kind = type(value)
    return value is None or kind is int or (kind is float and value and value == value)


def _valid_unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _scalars(value: Any) -> list[str]:
    # Only a list holds tags or entities; a number or an object in their place is ignored, not iterated.
    return [str(v) for v in value if isinstance(v, (str, int))] if isinstance(value, list) else []


# json.dumps(rec, sort_keys=True, ensure_ascii=True), without building an encoder for each record
# (a quarter of the encoding's cost on a big bank): CPython's C encoder made once, with json's own
# defaults, and no cycle check (a record parsed from JSON holds no cycle). Elsewhere, json's encoder.
_CANONICAL = json.JSONEncoder(sort_keys=True, ensure_ascii=True)
_c_make_encoder = getattr(json.encoder, "c_make_encoder", None)  # None where CPython's C part is absent
_C_CANONICAL = (
    _c_make_encoder(None, _CANONICAL.default, json.encoder.encode_basestring_ascii, None, ": ", ", ", True, False, True)
    if _c_make_encoder is not None else None
)


def canonical_json(rec: dict[str, Any]) -> str:
    return "".join(_C_CANONICAL(rec, 0)) if _C_CANONICAL is not None else _CANONICAL.encode(rec)


def record_sha(rec: dict[str, Any]) -> str:
    """sha256 of a record's canonical JSON: what a plan judged a bank memory on."""
    return hashlib.sha256(canonical_json(rec).encode("ascii")).hexdigest()


def read_learned(root: Path, bank: Path, settings: Settings, corpus: Corpus) -> dict[str, list[str]]:
    path = bank / "rules" / LEARNED_RULES
    if not path.exists():
        return {"fingerprints": [], "sources": []}
    try:
        text = read_text(root, path, settings.max_file_bytes)
    except Unreadable as exc:
        corpus.findings.append(parse_error(rel(root, path), str(exc)))
        return {"fingerprints": [], "sources": []}
    fps: list[str] = []
    srcs: list[str] = []
    for m in LEARNED_MARK.finditer(text):
        fps.append(m.group("fp"))
        if m.group("src"):
            srcs.extend(m.group("src").split(","))
    return {"fingerprints": sorted(set(fps)), "sources": sorted(set(srcs))}


def load(root: Path, settings: Settings) -> Corpus:
    corpus = Corpus(layout="bank", root=str(root))
    allow = set(settings.bank.banks)
    banks: dict[str, Any] = {}
    for bank in bank_dirs(root):
        name = bank.name
        if allow and name not in allow:
            continue
        records, live = _read_bank(root, bank, settings, corpus)
        corpus.memories.extend(live)
        rule_files = sorted(rel(root, p) for p in (bank / "rules").glob("*.md")) if (bank / "rules").is_dir() else []
        banks[name] = {
            "records": records,
            "retired": records - len(live),
            "rules_files": rule_files,
            "learned": read_learned(root, bank, settings, corpus),
            "mtime": mtime_of(bank / "memories.jsonl"),
        }
    corpus.memories.sort(key=lambda m: m.key)
    corpus.extra["banks"] = banks
    return corpus
