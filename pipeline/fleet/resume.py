"""The state of a `fleet run --if-due`, so a killed fleet run started again skips what it finished.

One JSON-lines file: a header line (the fleet run's id and start), then one line per store as it
finishes (its report record), then a closing line when the fleet run is complete. Appending keeps a
fleet of thousands of stores linear, and a kill can only tear the last line, which is ignored.

A later `fleet run --if-due` resumes the file's fleet run if it is not complete and began less than
`interval_hours` (minus the slack) ago: it skips the stores recorded as finished (every status but
budget_exhausted, and but a store that timed out: a stalled mount may answer now) and counts what
every recorded store spent against the budget (a store the budget cut short made calls too);
otherwise it starts a new one.
The file is data, not instructions: a line counts only if it names one of this run's own targets
(resolved paths); nothing read from it is ever opened, and a line that does not parse is skipped.

Default place: `.memconsolidate-fleet.jsonl` in the `--discover` folder, else in the current
folder; `--state FILE` chooses another.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import os
import secrets
from pathlib import Path
from typing import Any, Callable, Iterable

from ..errors import UsageError
from ..lock import open_regular
from ..storage.files import TooLarge, Unreadable, read_own
from .budget import MAX_COUNT
from .targets import refuse_inside_a_store
from .task import STATUSES

SCHEMA = "memconsolidate.fleet-state/1"
DEFAULT_NAME = ".memconsolidate-fleet.jsonl"
# budget_exhausted is not finished: the next attempt tries it again (and so a timed-out store, see `finished`)
FINISHED = frozenset(STATUSES) - {"budget_exhausted"}


def default_path(discover_dir: str | None) -> Path:
    return Path(discover_dir or os.getcwd()) / DEFAULT_NAME


# A line a store; a fleet of a hundred thousand stores stays well below it. A larger file is not
# read (nor held in memory): the fleet run starts afresh, and each store's own state still says
# whether it is due.
MAX_STATE_BYTES = 64 << 20


def _lines(path: Path, note: Callable[[str], None]) -> list[dict[str, Any]]:
    try:
        raw = read_own(path, MAX_STATE_BYTES)
    except FileNotFoundError:
        return []
    except TooLarge as exc:
        note(f"the fleet state {path} is not read ({exc}): a new fleet run starts")
        return []
    except Unreadable as exc:
        # a symlink, a FIFO, a device: never read, and never written either (open_regular)
        raise UsageError(f"cannot read the fleet state {path}: {exc}: remove it or pass --state") from None
    out = []
    for line in raw.splitlines():
        try:
            item = json.loads(line)
        except (ValueError, RecursionError):  # RecursionError: nesting deeper than the stack
            continue  # a line torn by a kill, or not ours
        if isinstance(item, dict):
            out.append(item)
    return out


def finished(record: dict[str, Any]) -> bool:
    """Whether an earlier attempt's record ends the store's part in this fleet run."""
    return record.get("status") in FINISHED and record.get("timed_out") is not True


def _started(header: dict[str, Any]) -> dt.datetime | None:
    try:
        when = dt.datetime.fromisoformat(header["started"])
    except (KeyError, TypeError, ValueError):
        return None
    return when if when.tzinfo else when.replace(tzinfo=dt.timezone.utc)


class FleetState:
    """The open state file of one fleet run; `finished` are the records an earlier attempt left."""

    def __init__(self, path: Path, targets: Iterable[str], window: dt.timedelta, wall: dt.datetime | None = None,
                 note: Callable[[str], None] = lambda _: None) -> None:
        self.path = path
        wall = wall or dt.datetime.now(dt.timezone.utc)
        wanted = set(targets)
        refuse_inside_a_store(path.parent.resolve() / path.name, wanted, f"the fleet state {path}", "--state with a path")
        lines = _lines(path, note)
        header = lines[0] if lines and lines[0].get("schema") == SCHEMA and "fleet_run" in lines[0] else None
        started = _started(header) if header else None
        resumable = (
            header is not None
            and started is not None
            and wall - window <= started <= wall
            and not any(item.get("complete") is True and item.get("fleet_run") == header["fleet_run"] for item in lines)
        )
        self.finished: dict[str, dict[str, Any]] = {}
        # What every earlier attempt of this fleet run spent: a store the budget cut short, or that
        # failed, made its calls too (only a store in flight at the kill, or whose worker died, took
        # its spend along).
        self._spent: list[dict[str, Any]] = []
        if resumable:
            assert header is not None
            self.fleet_run = str(header["fleet_run"])
            for item in lines[1:]:
                record = item.get("store")
                if item.get("fleet_run") != self.fleet_run or not isinstance(record, dict):
                    continue
                where = record.get("path")
                if not isinstance(where, str) or where not in wanted:
                    continue
                self._spent.append(_clean(record))
                if finished(record):
                    self.finished[where] = self._spent[-1]
                else:
                    self.finished.pop(where, None)
            self._fd = self._open(truncate=False)
        else:
            self.fleet_run = wall.strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)
            self._fd = self._open(truncate=True)
            self._append({"schema": SCHEMA, "fleet_run": self.fleet_run, "started": wall.isoformat(timespec="seconds")})

    def _open(self, truncate: bool) -> int:
        try:
            # Starting afresh empties the file and each store appends to it: a hard link would make
            # it another file too (a store's memories, in a folder unpacked from an archive).
            fd = open_regular(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        except OSError as exc:
            raise UsageError(f"cannot write the fleet state {self.path}: {exc.strerror or exc} (a symlink is never followed): "
                             "remove it or pass --state") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise UsageError(f"another fleet run is using the state file {self.path}") from None
        if truncate:
            os.ftruncate(fd, 0)
        return fd

    def _append(self, item: dict[str, Any]) -> None:
        data = (json.dumps(item, ensure_ascii=True, sort_keys=True) + "\n").encode()
        os.write(self._fd, data)
        os.fsync(self._fd)

    def spent(self) -> tuple[int, float]:
        """Calls and cost the earlier attempts of this fleet run used (they count against the budget)."""
        calls, cost = 0, 0.0
        for record in self._spent:
            llm = record.get("llm")
            if isinstance(llm, dict):
                calls += _number(llm.get("calls"), int)
                cost += _number(llm.get("cost_usd"), float)
        return calls, cost

    def record(self, record: dict[str, Any]) -> None:
        self._append({"fleet_run": self.fleet_run, "store": record})

    def close(self, complete: bool) -> None:
        if complete:
            self._append({"fleet_run": self.fleet_run, "complete": True})
        os.close(self._fd)


def _number(value: Any, kind: type) -> Any:
    """A non-negative number from the file, or 0 for anything else (the file is data, not trusted);
    held at the budget's ceiling (a 400-digit integer is no float, 1e308 calls no 64-bit count)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or value < 0:
        return kind(0)
    return kind(min(value, MAX_COUNT))


def _clean(record: dict[str, Any]) -> dict[str, Any]:
    """A record read back from the file, reduced to the report's fields with their types."""
    out: dict[str, Any] = {"path": record["path"], "status": record.get("status")}
    out["layout"] = record.get("layout") if isinstance(record.get("layout"), str) else None
    out["run_id"] = record.get("run_id") if isinstance(record.get("run_id"), str) else None
    counts, llm, errors = record.get("counts"), record.get("llm"), record.get("errors")
    out["counts"] = {str(k): _number(v, int) for k, v in counts.items()} if isinstance(counts, dict) else {}
    out["errors"] = [e for e in errors if isinstance(e, str)] if isinstance(errors, list) else []
    if isinstance(llm, dict):
        out["llm"] = {"calls": _number(llm.get("calls"), int), "cache_hits": _number(llm.get("cache_hits"), int), "cost_usd": _number(llm.get("cost_usd"), float)}
    return out
