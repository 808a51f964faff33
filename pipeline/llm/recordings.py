"""Recorded replies: the `mock` model replays them (CI), `record=True` writes them (re-record).

One JSONL file per stage, `<recordings>/<stage>.jsonl`, one object a line (see
evals/recordings/README.md):

    {"key": "<sha256>", "stage": "reorder", "prompt_version": "2", "schema": "ReorderOut",
     "model": "openai/gpt-4.1-mini", "request": {...payload...}, "reply": {...}}

The key hashes (stage, prompt version, prompt text, output schema, canonical payload) and not the
model, so replies recorded with any model replay anywhere; a prompt or schema change makes every
recording of that stage stale (missing) until it is re-recorded. The last line for a key wins.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from .backends import BackendReply, CallRequest, Reserve
from .canonical import canonical_json, sha256_hex
from .errors import CallFailed
from .retry import _validation_fields

RECORDINGS_ENV = "MEMCONSOLIDATE_RECORDINGS"


def recordings_dir(override: str | Path | None = None) -> Path:
    """`override`, else $MEMCONSOLIDATE_RECORDINGS, else the source tree's evals/recordings, else ./evals/recordings."""
    if override is not None:
        return Path(override)
    env = os.environ.get(RECORDINGS_ENV)
    if env:
        return Path(env).expanduser()
    beside_source = Path(__file__).resolve().parent.parent.parent / "evals" / "recordings"
    if beside_source.is_dir():
        return beside_source
    return Path.cwd() / "evals" / "recordings"


def recording_key(request: CallRequest) -> str:
    return sha256_hex(
        canonical_json(
            {
                "v": 1,
                "stage": request.stage,
                "prompt_version": request.prompt.version,
                "prompt_sha": request.prompt.sha256,
                "schema_sha": request.schema_sha,
                "payload": request.payload_data,
            }
        )
    )


def read_recordings(path: Path) -> dict[str, dict[str, Any]]:
    """key -> line; malformed lines are skipped (the replay then reports the recording as missing)."""
    found: dict[str, dict[str, Any]] = {}
    try:
        text = path.read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError):
        return found
    except (OSError, UnicodeDecodeError):
        return found
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict) and isinstance(row.get("key"), str) and (
            isinstance(row.get("reply"), dict) or isinstance(row.get("error"), str)
        ):
            found[row["key"]] = row
    return found


class Recordings:
    """The recordings of a folder, read once per stage and kept in step with what `append` writes."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._by_stage: dict[str, dict[str, dict[str, Any]]] = {}
        self._lock = threading.Lock()

    def path(self, stage: str) -> Path:
        return self.directory / f"{stage}.jsonl"

    def _rows(self, stage: str) -> dict[str, dict[str, Any]]:
        with self._lock:
            if stage not in self._by_stage:
                self._by_stage[stage] = read_recordings(self.path(stage))
            return self._by_stage[stage]

    def lookup(self, request: CallRequest) -> dict[str, Any] | None:
        return self._rows(request.stage).get(recording_key(request))

    def append(self, request: CallRequest, reply: BaseModel | None, model: str, error: str | None = None) -> bool:
        """Record a reply (or, with `error`, the failure the real model gave for this input, so the
        mock replays it too); False when the same outcome is already recorded for this input."""
        key = recording_key(request)
        reply_data = json.loads(reply.model_dump_json()) if reply is not None else None
        rows = self._rows(request.stage)
        existing = rows.get(key)
        if existing is not None and existing.get("reply") == reply_data and existing.get("error") == error:
            return False
        row = {
            "key": key,
            "stage": request.stage,
            "prompt_version": request.prompt.version,
            "schema": request.schema.__name__,
            "model": model,
            "request": request.payload_data,
            "reply": reply_data,
        }
        if error is not None:
            row["error"] = error
        line = json.dumps(row, sort_keys=True, ensure_ascii=False, separators=(",", ":")) + "\n"
        with self._lock:
            self.directory.mkdir(parents=True, exist_ok=True)
            # One write of one line in append mode: concurrent writers do not interleave lines. Never
            # through a symlink (a planted `<stage>.jsonl` link would take the line elsewhere).
            try:
                fd = os.open(self.path(request.stage), os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o644)
            except OSError as exc:
                raise CallFailed(f"cannot record to {self.path(request.stage)}: {exc.strerror or exc} (a symlink is never followed)") from None
            with os.fdopen(fd, "a", encoding="utf-8") as fh:
                fh.write(line)
            rows[key] = row
        return True


class MockBackend:
    """The `mock` model: recorded replies only, never the network."""

    name = "mock"
    cacheable = False

    def __init__(self, recordings: Recordings) -> None:
        self.recordings = recordings

    async def complete(self, request: CallRequest, reserve: Reserve) -> BackendReply:
        await reserve()  # a replayed reply is counted as the real model's request was
        row = self.recordings.lookup(request)
        if row is None:
            raise CallFailed(
                f"no recorded reply for this input in {request.stage}.jsonl: the recording is missing or stale "
                f"for prompt version {request.prompt.version}; re-record with a real model "
                "(see evals/recordings/README.md)"
            )
        if row.get("error"):
            raise CallFailed(f"recorded failure of the real model: {row['error']}")
        try:
            return BackendReply(request.schema.model_validate(row["reply"]))
        except ValidationError as exc:
            raise CallFailed(f"recorded reply invalid: {_validation_fields(exc)}; re-record it") from exc

    async def aclose(self) -> None:
        return None
