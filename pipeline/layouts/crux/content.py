"""The crux writer's content actions: `consolidate`, `rebalance_volumes` and `compress`
(shapes in the stages' contract: each output carries `path`, `frontmatter`, `body`, `size`).

The content is written as given, after the writer's own guards: every target is a readable memory
that no other action of the run changes, every output lands in its type folder without replacing a
file or taking a slug another memory uses, and strength sums are preserved. Members (and their
twins) are archived, not deleted; their trackers are merged into the new memory's tracker, or
distributed over the volumes by size, and archived. A compressed twin is written only after the
original has moved to the archive folder its `sourceArchive` names.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from ...actions import ConsolidateAction, Output, RebalanceVolumesAction, outputs_of
from ...kinds import ActionKind
from ...model import Action, Tracker
from .rules.common import file_slug, target_dir
from .reader import MEMORY_SUFFIXES, PLAIN_SUFFIX, body_size, twin_path
from .render import new_memory_text, twin_text
from .state import Live, Run
from .trackers import distribute, merge_trackers, render_tracker
from ...storage.files import Unreadable, as_int


def _outputs(a: Action) -> list[Output] | str:
    outputs = outputs_of(a)
    if not outputs:
        return "no outputs to write"
    for o in outputs:
        if not (isinstance(o, dict) and isinstance(o.get("path"), str) and isinstance(o.get("frontmatter"), dict)
                and isinstance(o.get("body"), str)):
            return "an output lacks its path, frontmatter or body"
    return outputs


def _bad_path(run: Run, path: str) -> str | None:
    p = PurePosixPath(path)
    if p.is_absolute() or ".." in p.parts or "\\" in path:
        return f"output {path} is not a path inside the store"
    if not path.endswith(MEMORY_SUFFIXES):
        return f"output {path} is not a memory file"
    return None


def _members(run: Run, a: Action) -> list[Live] | str:
    members: list[Live] = []
    for t in dict.fromkeys(a.targets):
        live = run.resolve(t)
        if isinstance(live, str):
            return live
        if any(live is x for x in members):
            continue
        if not live.untouched:
            by = live.retired_by or live.moved_by or "another action"
            return f"{t} is changed by {by} in this run: the content was planned from the old state"
        if live.m.pinned:
            return f"{t} is pinned: never retired"
        why = run.tracker_problem(live.m.slug)
        if why:
            return f"{t}: {why}"
        members.append(live)
    return members


def _size(run: Run, o: dict[str, Any]) -> int:
    size = as_int(o.get("size"))
    return size if size is not None and size >= 0 else body_size(o["body"], run.crux.sizeUnit)


def _check_outputs(run: Run, a: Action, members: list[Live], outputs: list[dict[str, Any]]) -> str | None:
    member_files = {f for x in members for f in x.files}
    member_slugs = {x.m.slug for x in members}
    besides = {x.m.key for x in members}
    seen: set[str] = set()
    for o in outputs:
        path = o["path"]
        why = _bad_path(run, path)
        if why:
            return why
        fm = o["frontmatter"]
        new_type = fm.get("type")
        if not isinstance(new_type, str) or new_type not in run.crux.typePriority:
            return f"output {path}: type {new_type!r} is not in typePriority"
        folder = target_dir(members[0].m, new_type, run.crux)
        if PurePosixPath(path).parent.as_posix() != folder:
            return f"output {path} is not in its type folder {folder}/"
        slug = file_slug(path)
        if slug in seen:
            return f"two outputs named {slug}"
        seen.add(slug)
        for p in (path, twin_path(path)):
            if run.ov.exists(p) and p not in member_files:
                return f"{p} already exists: an output never replaces a file"
        others = run.live_users(slug, besides)
        if others:
            return f"slug {slug!r} is already used by {others[0].m.key} (trackers are keyed by slug)"
        tracker = run.tracker_path(slug)
        if slug not in member_slugs and run.ov.exists(tracker):
            return f"{tracker} already exists and belongs to no member"
        if as_int(fm.get("strength")) is None:
            return f"output {path} has no strength"
    if len({x.m.group for x in members}) > 1:
        return "members come from different scopes"
    total = sum(x.strength for x in members if x.strength is not None)
    parts = [as_int(o["frontmatter"].get("strength")) or 0 for o in outputs]
    if sum(parts) != total and not (total < len(parts) and all(p == 1 for p in parts)):
        return f"strength not preserved: members sum to {total}, outputs to {sum(parts)}"
    return None


def _output_trackers(run: Run, trackers: list[Tracker], outputs: list[dict[str, Any]]) -> list[Tracker]:
    """The members' trackers merged into one per output: one output takes the sum; volumes share it
    by size (at least 1 each when there is enough), with the same `last_referenced` and history."""
    if not trackers:
        return []
    slugs = [file_slug(o["path"]) for o in outputs]
    merged = merge_trackers(trackers, slugs[0], run.tracker_path(slugs[0]), None, run.crux.maxReferencesStored)
    counts = distribute(merged.references, [_size(run, o) for o in outputs]) if len(outputs) > 1 else [merged.references]
    return [
        Tracker(
            key=run.tracker_path(slug),
            slug=slug,
            references=n,
            last_referenced=merged.last_referenced,
            strength=as_int(o["frontmatter"].get("strength")),
            recent_references=list(merged.recent_references),
        )
        for slug, n, o in zip(slugs, counts, outputs)
    ]


def _prepare(run: Run, a: Action) -> tuple[list, list] | None:
    """The action's outputs and live members, or None after skipping it with the reason."""
    blocked = run.archive_ok()
    outputs = _outputs(a)
    members = _members(run, a)
    for why in (blocked, outputs if isinstance(outputs, str) else None, members if isinstance(members, str) else None):
        if why:
            run.skip(a, why)
            return None
    assert isinstance(outputs, list) and isinstance(members, list)
    return outputs, members


def consolidate(run: Run, a: Action) -> None:
    """`consolidate` and `rebalance_volumes`: archive the members, write the outputs and trackers."""
    prepared = _prepare(run, a)
    if prepared is None:
        return
    outputs, members = prepared
    if a.kind == ActionKind.CONSOLIDATE and len(members) < 2:
        run.skip(a, "a consolidation needs at least two members")
        return
    why = _check_outputs(run, a, members, outputs)
    texts: list[bytes] = []
    if not why:
        try:
            texts = [new_memory_text(o["frontmatter"], o["body"]).encode("utf-8") for o in outputs]
        except Unreadable as exc:
            why = f"output front matter: {exc}"
    if why:
        run.skip(a, why)
        return
    old_trackers = []
    for live in members:
        run.archive_memory(live, a.kind)
        t = run.archive_tracker(live.m.slug)
        if t is not None:
            old_trackers.append(t)
    for o, data in zip(outputs, texts):
        run.ov.write(o["path"], data)
        run.add_created(o["path"], o["frontmatter"], _size(run, o), members[0].m, a.kind)
    for t in _output_trackers(run, old_trackers, outputs):
        run.ov.write(t.key, render_tracker(t).encode("utf-8"))
    combined = sum(x.m.extra.get("size", 0) for x in members)
    result = sum(_size(run, o) for o in outputs)
    topic = a.topic if isinstance(a, (ConsolidateAction, RebalanceVolumesAction)) else None
    if a.kind == ActionKind.REBALANCE_VOLUMES:
        old = sum(1 for x in members if x.m.extra.get("consolidation_topic") == topic) or len(members)
        run.summary.rebalanced.append((str(topic or file_slug(outputs[0]["path"])), old, len(outputs), a.reason))
    else:
        title = str(outputs[0]["frontmatter"].get("title") or file_slug(outputs[0]["path"]))
        run.summary.consolidated.append({
            "title": str(topic) if topic and len(outputs) > 1 else title,
            "members": [x.m for x in members],
            "combined": combined,
            "result": result,
            "sizes": {o["path"]: _size(run, o) for o in outputs},
            "note": f"{len(outputs)} volumes" if len(outputs) > 1 else "",
        })
    run.applied(a)


def compress(run: Run, a: Action) -> None:
    prepared = _prepare(run, a)
    if prepared is None:
        return
    outputs, members = prepared
    if len(members) != 1 or len(outputs) != 1:
        run.skip(a, "a compression has one target and one output")
        return
    live, o = members[0], outputs[0]
    if live.twin or not live.path.endswith(PLAIN_SUFFIX):
        run.skip(a, f"{live.path} already has a compressed twin")
        return
    expected = twin_path(live.path)
    if o["path"] != expected:
        run.skip(a, f"output {o['path']} is not the twin path {expected}")
        return
    if run.ov.exists(expected):
        run.skip(a, f"{expected} already exists: an output never replaces a file")
        return
    dest = run.archive_target(live.path)
    fm = {**o["frontmatter"], "sourceArchive": dest}
    try:
        data = twin_text(run.text_of(live.path)[0], fm, o["body"]).encode("utf-8")
    except (Unreadable, UnicodeDecodeError, ValueError) as exc:
        run.skip(a, f"{live.path}: front matter cannot be edited safely ({exc})")
        return
    # The original goes to the archive first: the twin never exists without it being kept.
    run.ov.move(live.path, dest)
    run.ov.write(expected, data)
    live.path = expected
    live.moved_by = "compress"
    size = _size(run, o)
    merged = next((c for c in run.summary.consolidated if a.targets[0] in c.get("sizes", {})), None)
    if merged is not None:
        # The merged file of a consolidation, compressed as part of it (seed step 13): its line
        # in the summary shows the compressed size, and it is not listed again.
        merged["sizes"][a.targets[0]] = size
        merged["result"] = sum(merged["sizes"].values())
    else:
        before = live.m.extra.get("size", 0)
        reduced = round(100 * (1 - size / before)) if before else 0
        run.summary.compressed.append((live.m.label, before, size, reduced))
    run.applied(a)
