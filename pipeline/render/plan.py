"""The plan as a person reads it: counts first, then one numbered section per kind.

The numbers are the actions' 1-based places in the plan (the order of `plan --json`), the numbers
`apply --select` takes; the plan sorts its actions by kind, so they run 1, 2, 3 down the page. Each
shows its fingerprint, which `apply --select N=FINGERPRINT` checks the number still names.
"""

from __future__ import annotations

from collections import Counter

from ..actions import AbsolutizeDatesAction, RelativeDateFinding, UpdateRefAction
from ..model import Action, Finding, Plan
from ..kinds import QUIET_STALE_CLASSES, FindingKind, action_rank, finding_heading, finding_rank, plan_heading
from .text import PIPE_WIDTH, common_folder, joined, plural, wrap


def numbered(plan: Plan) -> list[tuple[int, Action]]:
    return list(enumerate(plan.actions, start=1))


def action_tags(a: Action) -> str:
    """Who proposed it, whether it needs you, and last its fingerprint (`apply --select N=FINGERPRINT`):
    the brackets the plan, apply's prompt and apply's summary show after an action."""
    tags = ([a.source] if a.source != "deterministic" else []) + (["needs you"] if a.needs_user else [])
    return f"[{'; '.join([*tags, a.fingerprint()])}]"


def target_lines(a: Action | Finding, folder: str) -> list[str]:
    """One line per target, relative to `folder`; a merge shows each retired memory → its survivor."""
    short = [t[len(folder):] for t in a.targets]
    survivor = a.survivor if isinstance(a, Action) else None
    if survivor:
        keep = survivor[len(folder):]
        return [f"{t} → {keep}" for t in short if t != keep] or short
    return short


def _item(lead: str, targets: list[str], extra: str, reason: str, width: int, tag: str = "") -> list[str]:
    """`lead` then the first target (with `extra`, then `tag`), the other targets under it, then the reason."""
    pad = " " * len(lead)
    lines = tagged(wrap(f"{targets[0]}{extra}", width, lead, pad + "  "), tag, width, pad + "  ")
    lines.extend(f"{pad}{t}" for t in targets[1:])
    lines.extend(wrap(reason, width, pad + "  "))
    return lines


def tagged(lines: list[str], tag: str, width: int, indent: str) -> list[str]:
    """`tag` after the last line, whole (the fingerprint in it is copied from the screen): on a line
    of its own when it does not fit there."""
    if not tag:
        return lines
    if len(lines[-1]) + 2 + len(tag) <= width:
        return [*lines[:-1], f"{lines[-1]}  {tag}"]
    return [*lines, indent + tag]


def replacement_lines(item: Action | Finding, width: int, pad: str) -> list[str]:
    """An in-place edit's replacements (absolutize_dates, update_ref), one a line: before → after."""
    reps = item.replacements if isinstance(item, (AbsolutizeDatesAction, UpdateRefAction, RelativeDateFinding)) else None
    lines: list[str] = []
    for r in reps or []:
        lines.extend(wrap(f"{r['field']}: “{r['before']}” → “{r['after']}”", width, pad + "    "))
    return lines


def _sections(items: list, width: int, line_of) -> list[str]:
    """Items grouped under the folder they are in, each folder shown once for a run of its items."""
    lines: list[str] = []
    shown: str | None = None
    for item in items:
        folder = common_folder(item.targets)
        if folder != shown:
            if folder:
                lines.append(f"  {folder}")
            shown = folder
        lines.extend(line_of(item, folder))
    return lines


def _action_lines(plan: Plan, kind: str, width: int) -> list[str]:
    number = {id(a): n for n, a in numbered(plan)}
    digits = len(str(len(plan.actions)))

    def line_of(a: Action, folder: str) -> list[str]:
        types = f"  ({a.from_type or '?'} → {a.to_type or '?'})" if (a.from_type or a.to_type) and not a.survivor else ""
        lead = f"    {number[id(a)]:>{digits}}. "
        return _item(lead, target_lines(a, folder), types, a.reason, width, action_tags(a)) + replacement_lines(
            a, width, " " * len(lead)
        )

    return _sections([a for a in plan.actions if a.kind == kind], width, line_of)


def _finding_lines(findings: list[Finding], width: int) -> list[str]:
    def line_of(f: Finding, folder: str) -> list[str]:
        cls = f" {f.class_}" if f.class_ else ""
        return _item("    - ", target_lines(f, folder) or ["(store)"], cls, f.reason, width) + replacement_lines(f, width, "      ")

    return _sections(findings, width, line_of)


def summary(plan: Plan) -> str:
    auto = sum(1 for a in plan.actions if not a.needs_user)
    errors = plural(len(plan.errors), "error") if plan.errors else "no errors"
    return (f"{plural(len(plan.actions), 'action')} ({auto} automatic, {len(plan.actions) - auto} need you) · "
            f"{plural(len(plan.findings), 'finding')} · {errors}")


def llm_line(plan: Plan) -> str:
    s = plan.stats
    return (f"LLM: {plural(s.llm_calls, 'call')}, {plural(s.cache_hits, 'cache hit')}, "
            f"{s.prompt_tokens}+{s.completion_tokens} tokens, ${s.cost_usd:.4f}")


def render_plan(plan: Plan, width: int = PIPE_WIDTH, config: str | None = None, how_to_apply: bool = True) -> str:
    """The plan as `plan` prints it; without `how_to_apply`, as `apply` shows it above its prompt,
    where a hint to run `apply` would be said to someone already running it."""
    lines = [f"memconsolidate plan — {plan.layout} store {plan.root}"]
    lines.extend(wrap(f"now {plan.now.isoformat()} · model {plan.model} · {plural(plan.memories, 'memory', 'memories')}",
                      width, "", "  "))
    lines.append(f"config {config or 'none'}")  # a path: never wrapped
    lines.extend([summary(plan), ""])
    kinds = sorted(Counter(a.kind for a in plan.actions), key=lambda k: (action_rank(k), k))
    for kind in kinds:
        count = sum(1 for a in plan.actions if a.kind == kind)
        lines.append(f"{plan_heading(kind)} ({count})")
        lines.extend(_action_lines(plan, kind, width))
        lines.append("")
    finding_counts = Counter(f.kind for f in plan.findings)
    for fkind in sorted(finding_counts, key=lambda k: (finding_rank(k), k)):
        lines.append(f"{finding_heading(fkind)} ({finding_counts[fkind]})")
        shown = [f for f in plan.findings if f.kind == fkind and not (fkind == FindingKind.STALE and f.class_ in QUIET_STALE_CLASSES)]
        lines.extend(_finding_lines(shown, width))
        quiet = Counter(f.class_ or "" for f in plan.findings if f.kind == fkind and f not in shown)
        if quiet:
            lines.append("    " + ", ".join(f"{n} {cls}" for cls, n in sorted(quiet.items())) + " (kept; listed in --json)")
        lines.append("")
    if plan.errors:
        lines.append(f"Errors ({len(plan.errors)})")
        for e in plan.errors:
            lines.extend(wrap(f"{e.stage}: {e.message}", width, "  - ", "    "))
        lines.append("")
    lines.append(llm_line(plan))
    if not plan.actions and not plan.findings:
        lines.append(f"Nothing to do: {plural(plan.memories, 'memory', 'memories')} checked, all current.")
    elif plan.actions and how_to_apply:
        lines.extend(wrap("Apply the automatic actions with `memconsolidate apply STORE`; choose some with `--select KIND`, "
                          f"or by number with the fingerprint in brackets, `--select 1={plan.actions[0].fingerprint()}` "
                          "(apply refuses a number whose action changed since this plan).", width, "", ""))
    return joined(lines)
