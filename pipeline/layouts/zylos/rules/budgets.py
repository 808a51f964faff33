"""zylos core-file budgets and user-profile size (seed: Consolidation Review, Core File Budgets).

identity.md, state.md and references.md are loaded into every session: over their 16 KiB budget is
`over_budget` plus a `trim_budget` for the user (trimming needs judgement: what is still current);
over the early-warning threshold (state 10 KiB, references 8 KiB) is `near_budget`. Like the
seed's consolidate.js and memory-status.js, a file is over only when its size is strictly greater
than the number: exactly 16,384 bytes is still within budget. Profiles over ~1 KiB: summarize.
"""

from __future__ import annotations

from ....config import Settings, ZylosConfig
from ....actions import BudgetFinding
from ....kinds import FindingKind
from ....model import Action, Corpus, Memory
from ....rules.outcome import Outcome

# The seed's file-specific cleanup rule for each core file, quoted into the trim action's reason.
CLEANUP = {
    "identity.md": "keep only stable identity traits, principles, durable collaboration style and digital "
    "asset references; move operational state and one-off lessons elsewhere",
    "state.md": "keep active focus, pending tasks and recent completions; move completed or historical "
    "detail to sessions/current.md or reference/ (content rules in state-format.md)",
    "references.md": "keep pointers and lookup facts only; move prose, project history and detailed "
    "decisions to reference/ (content rules in references-file-format.md)",
}


def warn_thresholds(cfg: ZylosConfig) -> dict[str, int]:
    return {"state.md": cfg.state_warn_bytes, "references.md": cfg.references_warn_bytes}


def _pct(size: int, budget: int) -> int:
    return round(size * 100 / budget) if budget else 0


def core_budget(memory: Memory, cfg: ZylosConfig) -> Outcome:
    """The budget verdict for one core file (identity.md, state.md, references.md)."""
    out = Outcome()
    size = int(memory.extra.get("size") or 0)
    budget = cfg.core_budget_bytes
    warn = warn_thresholds(cfg).get(memory.key)
    if size > budget:
        out.findings.append(
            BudgetFinding(
                kind=FindingKind.OVER_BUDGET,
                targets=[memory.key],
                reason=f"{memory.key} is {size:,} bytes, over its {budget:,}-byte budget ({_pct(size, budget)}%)",
                size_bytes=size,
                budget_bytes=budget,
            )
        )
        target = f" and back under the {warn:,}-byte warn threshold" if warn else ""
        out.actions.append(
            Action(
                kind="trim_budget",
                targets=[memory.key],
                needs_user=True,
                reason=f"summarize and trim older entries to get under {budget:,} bytes{target}: "
                f"{CLEANUP.get(memory.key, 'move historical content to reference/ or archive/')}",
            )
        )
    elif warn is not None and size > warn:
        out.findings.append(
            BudgetFinding(
                kind=FindingKind.NEAR_BUDGET,
                targets=[memory.key],
                reason=f"{memory.key} is {size:,} bytes, over the {warn:,}-byte warn threshold "
                f"(budget {budget:,}): audit it against its content rules",
                size_bytes=size,
                budget_bytes=budget,
                warn_bytes=warn,
            )
        )
    return out


def profile_size(memory: Memory, cfg: ZylosConfig) -> Outcome:
    out = Outcome()
    size = int(memory.extra.get("size") or 0)
    if size > cfg.profile_warn_bytes:
        out.findings.append(
            BudgetFinding(
                kind=FindingKind.NEAR_BUDGET,
                targets=[memory.key],
                reason=f"{memory.key} is {size:,} bytes, over ~{cfg.profile_warn_bytes:,} bytes: summarize older notes",
                size_bytes=size,
                warn_bytes=cfg.profile_warn_bytes,
            )
        )
    return out


def budgets(corpus: Corpus, settings: Settings) -> Outcome:
    out = Outcome()
    for memory in corpus.memories:
        tier = memory.extra.get("tier")
        if tier == "core":
            out.extend(core_budget(memory, settings.zylos))
        elif tier == "profile":
            out.extend(profile_size(memory, settings.zylos))
    return out
