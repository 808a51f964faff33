"""`bank` layout (iii memory): `<root>/<bank>/memories.jsonl`, append-only, last revision wins.

Rules live in `<root>/<bank>/rules/*.md`; `learned.md` is the auto-managed one. The store's own
configuration, if any, is `<root>/memory-consolidate.json` with iii's field names.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ...config import BankConfig, Settings
from ...errors import ConfigError
from ...model import Corpus, Memory
from ...storage.files import Unreadable, as_date, mtime_of, parse_error, read_bytes, read_text, rel

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


def _record_order(rec: dict[str, Any], line_no: int) -> tuple[int, int]:
    rev = rec.get("revision")
    return (rev if isinstance(rev, int) and not isinstance(rev, bool) else -1, line_no)


def read_bank_bytes(root: Path, bank: Path, settings: Settings, corpus: Corpus) -> bytes | None:
    """The bytes of a bank's `memories.jsonl` within the size cap, or None (reported)."""
    try:
        return read_bytes(root, bank / "memories.jsonl", settings.max_file_bytes * 64)
    except Unreadable as exc:
        corpus.findings.append(parse_error(rel(root, bank / "memories.jsonl"), str(exc)))
        return None


def read_records(root: Path, bank: Path, settings: Settings, corpus: Corpus) -> dict[str, dict[str, Any]]:
    """The current revision of every id in a bank (highest `revision`, then latest line)."""
    data = read_bank_bytes(root, bank, settings, corpus)
    return {} if data is None else parse_records(rel(root, bank / "memories.jsonl"), data, corpus)


def parse_records(key: str, data: bytes, corpus: Corpus) -> dict[str, dict[str, Any]]:
    """`read_records` of bytes already read (a writer builds its revisions on exactly those)."""
    # Line by line: one bad line (a torn write, a stray byte) must not hide the whole bank.
    lines: list[str] = []
    for line_no, raw in enumerate(data.split(b"\n"), start=1):
        try:
            lines.append(raw.decode("utf-8-sig" if line_no == 1 else "utf-8"))
        except UnicodeDecodeError:
            corpus.findings.append(parse_error(key, f"line {line_no}: not UTF-8"))
            lines.append("")
    latest: dict[str, tuple[tuple[int, int], dict[str, Any]]] = {}
    for line_no, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except (ValueError, RecursionError):  # RecursionError: nesting deeper than the stack
            corpus.findings.append(parse_error(key, f"line {line_no}: not valid JSON"))
            continue
        if not isinstance(rec, dict) or not isinstance(rec.get("id"), (str, int)) or isinstance(rec.get("id"), bool):
            corpus.findings.append(parse_error(key, f"line {line_no}: record without an id"))
            continue
        rid = str(rec["id"])
        if not _valid_unicode(rid):  # JSON can escape a lone surrogate; as a key it would break the output
            corpus.findings.append(parse_error(key, f"line {line_no}: id is not valid Unicode"))
            continue
        order = _record_order(rec, line_no)
        if rid not in latest or order >= latest[rid][0]:
            latest[rid] = (order, rec)
    return {rid: rec for rid, (_, rec) in latest.items()}


def _valid_unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _scalars(value: Any) -> list[str]:
    # Only a list holds tags or entities; a number or an object in their place is ignored, not iterated.
    return [str(v) for v in value if isinstance(v, (str, int))] if isinstance(value, list) else []


def record_sha(rec: dict[str, Any]) -> str:
    """sha256 of a record's canonical JSON: what a plan judged a bank memory on."""
    return hashlib.sha256(json.dumps(rec, sort_keys=True, ensure_ascii=True).encode("ascii")).hexdigest()


def _to_memory(bank: str, rec: dict[str, Any]) -> Memory:
    text = rec.get("text")
    corroboration = rec.get("corroboration")
    return Memory(
        key=f"{bank}/{rec['id']}",
        layout="bank",
        id=str(rec["id"]),
        title="",
        body=text if isinstance(text, str) else "",
        tags=_scalars(rec.get("tags")),
        corroboration=corroboration if isinstance(corroboration, int) and not isinstance(corroboration, bool) else 0,
        pinned=rec.get("pinned") is True,
        created=as_date(rec.get("created_at")),
        modified=as_date(rec.get("updated_at")),
        source=rec.get("source") if isinstance(rec.get("source"), str) else None,
        group=bank,
        extra={
            "entities": _scalars(rec.get("entities")),
            "revision": rec.get("revision") if isinstance(rec.get("revision"), int) else 0,
            "confidence": rec.get("confidence"),
        },
        read_shas={f"{bank}/{rec['id']}": record_sha(rec)},
    )


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
        records = read_records(root, bank, settings, corpus)
        live = [r for r in records.values() if not r.get("superseded_by") and not r.get("invalid_at")]
        corpus.memories.extend(_to_memory(name, r) for r in live)
        rule_files = sorted(rel(root, p) for p in (bank / "rules").glob("*.md")) if (bank / "rules").is_dir() else []
        banks[name] = {
            "records": len(records),
            "retired": len(records) - len(live),
            "rules_files": rule_files,
            "learned": read_learned(root, bank, settings, corpus),
            "mtime": mtime_of(bank / "memories.jsonl"),
        }
    corpus.memories.sort(key=lambda m: m.key)
    corpus.extra["banks"] = banks
    return corpus
