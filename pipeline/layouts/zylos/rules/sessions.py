"""zylos session logs: archive dated logs older than 30 days; rotate a current.md from another day.

As consolidate.js: a log `sessions/YYYY-MM-DD.md` (or `YYYY-MM-DD-N.md`) is an archive candidate
when its date is before `--now` minus 30 days, so a log exactly 30 days old stays. As
rotate-session.js: `sessions/current.md` rotates when its `# Session Log: YYYY-MM-DD` header is not
today; it is renamed to its header date (its mtime's date when it has no header), with `-N` added
when that name is taken.
"""

from __future__ import annotations

import datetime as dt

from ....config import Settings
from ....actions import RotateSessionAction
from ....model import Action, Corpus, Memory
from ....rules.outcome import Outcome
from .freshness import mtime_date


def archive_old_logs(logs: list[Memory], now: dt.date, days: int) -> Outcome:
    out = Outcome()
    cutoff = now - dt.timedelta(days=days)
    for log in sorted(logs, key=lambda m: m.key):
        date = log.extra.get("session_date")
        if log.extra.get("current") or not date:
            continue
        when = dt.date.fromisoformat(date)
        if when < cutoff:
            out.actions.append(
                Action(
                    kind="archive_session",
                    targets=[log.key],
                    reason=f"session log of {date}, {(now - when).days} days old (older than {days}): move to archive/",
                )
            )
    return out


def rotation_name(date: dt.date, taken: set[str]) -> str:
    candidate = f"sessions/{date.isoformat()}.md"
    counter = 1
    while candidate in taken:
        candidate = f"sessions/{date.isoformat()}-{counter}.md"
        counter += 1
    return candidate


def rotate_current(current: Memory, now: dt.date, taken: set[str]) -> Outcome:
    out = Outcome()
    header = current.extra.get("header_date")
    if header == now.isoformat():
        return out
    if header:
        name = rotation_name(dt.date.fromisoformat(header), taken)
        why = f"header date {header} is not today ({now.isoformat()})"
    else:
        fallback = mtime_date(current.mtime) if current.mtime is not None else now
        name = rotation_name(fallback, taken)
        why = "no '# Session Log: YYYY-MM-DD' header (dated by its mtime)"
    out.actions.append(
        RotateSessionAction(
            targets=[current.key],
            reason=f"{current.key} {why}: rotate to {name} and start a fresh log for {now.isoformat()}",
            rotate_to=name,
            read_bytes=current.extra.get("read_bytes"),
        )
    )
    return out


def sessions(corpus: Corpus, settings: Settings) -> Outcome:
    out = Outcome()
    logs = [m for m in corpus.memories if m.extra.get("tier") == "session"]
    out.extend(archive_old_logs(logs, settings.now, settings.zylos.session_archive_days))
    taken = set(corpus.extra.get("session_files", [])) | {m.key for m in logs}
    for current in (m for m in logs if m.extra.get("current")):
        out.extend(rotate_current(current, settings.now, taken))
    return out
