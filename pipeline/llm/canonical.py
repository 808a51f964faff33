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
        # ASCII text is NFC as it is (normalize returns it unchanged too, after a look-up per character).
        return value if value.isascii() else unicodedata.normalize("NFC", value)
    if type(value) in _LEAVES:
        return value  # a number, a bool or null: no string in it (the Mapping test is the slow one)
    if isinstance(value, (dict, Mapping)):  # a dict first: a plain type check, not the ABC's
        return {nfc(str(k)): nfc(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [nfc(v) for v in value]
    return value


# Exact types (a subclass could also be a Mapping or a list) that hold no string.
_LEAVES = frozenset({int, float, bool, type(None)})


def to_data(value: Any) -> Any:
    """A payload as plain JSON data: pydantic models dumped in JSON mode, the rest as given."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    return value


def canonical_json(value: Any) -> str:
    """Sorted keys, NFC strings, no whitespace, no NaN. Raises TypeError/ValueError if not JSON."""
    if isinstance(value, BaseModel):
        return _model_json(value.model_dump(mode="json"))
    return _CANONICAL.encode(nfc(to_data(value)))


def _model_json(data: Any) -> str:
    """`canonical_json` of a pydantic model's JSON-mode dump: plain JSON data whose keys are all
    strings. When its text is ASCII every string in it is, and NFC leaves those as they are, so the
    walk over the data (`nfc`, most of a stub call's cost) is needed only for text that is not."""
    text = _CANONICAL.encode(data)
    return text if text.isascii() else _CANONICAL.encode(nfc(data))


# What `json.dumps(value, sort_keys=True, ...)` would build for every call; encode() keeps no state.
_CANONICAL = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


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
