"""Canonical JSON and hashes: the same input always gives the same bytes, and so the same key."""

from __future__ import annotations

import hashlib
import json
import unicodedata
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel


def nfc(value: Any) -> Any:
    """NFC-normalise every string (keys included) so that é and e+◌́ give the same key."""
    if isinstance(value, str):
        return unicodedata.normalize("NFC", value)
    if isinstance(value, Mapping):
        return {nfc(str(k)): nfc(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [nfc(v) for v in value]
    return value


def to_data(value: Any) -> Any:
    """A payload as plain JSON data: pydantic models dumped in JSON mode, the rest as given."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    return value


def canonical_json(value: Any) -> str:
    """Sorted keys, NFC strings, no whitespace, no NaN. Raises TypeError/ValueError if not JSON."""
    return json.dumps(
        nfc(to_data(value)), sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False
    )


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def schema_hash(schema: type[BaseModel]) -> str:
    """Changes whenever the output schema changes (fields, types, descriptions, name). Computed
    once per class (a class's schema does not change; building it costs milliseconds a call)."""
    cached = _SCHEMA_HASHES.get(schema)
    if cached is None:
        cached = _SCHEMA_HASHES[schema] = _schema_hash(schema)
    return cached


_SCHEMA_HASHES: dict[type, str] = {}


def _schema_hash(schema: type[BaseModel]) -> str:
    return sha256_hex(canonical_json({"name": schema.__name__, "schema": schema.model_json_schema()}))
